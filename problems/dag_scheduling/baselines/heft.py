"""Baseline: HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 2002), the seed's own block. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def schedule(wf, platform):
    """HEFT (Topcuoglu, Hariri, Wu, IEEE TPDS 2002): tasks by decreasing upward rank
    (mean execution and communication costs), each on the processor giving the earliest
    finish time, insertion into idle gaps allowed. Ties: the lower task / processor index."""
    rank = upward_ranks(wf, platform)
    order = sorted(range(wf["n"]), key=lambda i: (-rank[i], i))
    timeline = Timeline(wf, platform)
    for i in order:
        best = min(range(len(platform["speed"])), key=lambda p: (timeline.eft(i, p), p))
        timeline.place(i, best)
    return timeline.order


# EVOLVE-BLOCK-END
