"""Baseline HEFT: earliest-finish-time mapping."""


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
