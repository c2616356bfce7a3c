"""Baseline round robin: processors in turn, whatever their speed."""


# EVOLVE-BLOCK-START
def prepare(wf, platform):
    """A counter of the tasks mapped so far in this workflow."""
    return [0]


def choose(task, timeline, placed):
    """Processor 0, 1, ..., 5, 0, 1, ... in placement order, blind to speeds and data."""
    proc = placed[0] % len(timeline.platform["speed"])
    placed[0] += 1
    return proc


# EVOLVE-BLOCK-END
