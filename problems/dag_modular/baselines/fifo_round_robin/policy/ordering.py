"""Baseline FIFO: the ready tasks in the order they became ready."""


# EVOLVE-BLOCK-START
def prepare(wf, platform):
    """Nothing to prepare: FIFO looks at no costs."""
    return None


def select(ready, timeline, state):
    """The task that has been ready longest (`ready` keeps the order tasks became ready)."""
    return ready[0]


# EVOLVE-BLOCK-END
