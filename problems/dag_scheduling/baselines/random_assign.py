"""Baseline: random list scheduling (seeded). Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def schedule(wf, platform):
    """A uniformly random ready task goes next, to a uniformly random processor
    (random.Random(0) per workflow, so the result is deterministic)."""
    rng = random.Random(0)
    timeline = Timeline(wf, platform)
    waiting = [len(ps) for ps in wf["parents"]]
    ready = [i for i in range(wf["n"]) if waiting[i] == 0]
    while ready:
        i = ready.pop(rng.randrange(len(ready)))
        timeline.place(i, rng.randrange(len(platform["speed"])))
        for j, _ in wf["children"][i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                ready.append(j)
    return timeline.order


# EVOLVE-BLOCK-END
