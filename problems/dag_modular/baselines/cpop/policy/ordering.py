"""Baseline CPOP (Topcuoglu, Hariri, Wu, IEEE TPDS 2002): priority = rank_u + rank_d."""


# EVOLVE-BLOCK-START
def prepare(wf, platform):
    """Once per workflow: CPOP's priority of every task, upward plus downward rank (mean
    costs)."""
    up, down = upward_ranks(wf, platform), downward_ranks(wf, platform)
    return [u + d for u, d in zip(up, down, strict=True)]


def select(ready, timeline, prio):
    """The ready task of highest priority (ties: the lower task index)."""
    return max(ready, key=lambda i: (prio[i], -i))


# EVOLVE-BLOCK-END
