"""Baseline HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 2002), the seed's own blocks: upward-rank ordering."""


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
