"""Ordering: which ready task the list scheduler places next (seed: HEFT's upward rank)."""

import heapq  # noqa: F401
import math  # noqa: F401
import random  # noqa: F401  (seed it: random.Random(0))

import numpy as np  # noqa: F401

from policy.helpers import (  # noqa: F401
    Timeline,
    comm_time,
    downward_ranks,
    exec_time,
    mean_bandwidth,
    mean_exec_times,
    topological_order,
    upward_ranks,
)


# EVOLVE-BLOCK-START
def prepare(wf, platform):
    """Once per workflow: HEFT's upward rank of every task (Topcuoglu, Hariri, Wu, IEEE TPDS
    2002): its mean execution time plus the longest mean-cost path to an exit task."""
    return upward_ranks(wf, platform)


def select(ready, timeline, rank):
    """The ready task of highest upward rank (ties: the lower task index). `ready`: the
    tasks whose parents are all placed, in the order they became ready; `timeline`: the
    schedule so far (timeline.finish, timeline.proc, timeline.est(i, p), ...)."""
    return max(ready, key=lambda i: (rank[i], -i))


# EVOLVE-BLOCK-END
