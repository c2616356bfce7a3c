"""Mapping: on which processor the list scheduler runs a task (seed: HEFT's earliest finish)."""

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
    """Once per workflow: what choose() needs besides the timeline (HEFT needs nothing)."""
    return None


def choose(task, timeline, state):
    """The processor on which `task` finishes earliest, insertion into idle gaps allowed
    (HEFT; ties: the lower processor index). timeline.eft(task, p) is that finish time."""
    procs = range(len(timeline.platform["speed"]))
    return min(procs, key=lambda p: (timeline.eft(task, p), p))


# EVOLVE-BLOCK-END
