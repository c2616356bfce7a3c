"""Baseline: HEFT for streaming jobs (Topcuoglu et al. 2002, as DeepSoCS runs it in DS3). Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def place(ready, state, platform, apps, memory):
    """HEFT at each epoch: the ready tasks by decreasing upward rank (mean execution time
    over the capable PEs, mean transfer cost; computed once per application), each to the PE
    giving the earliest finish time, no insertion (PEs run their queues in order). Ties: the
    earlier job, then the lower task / PE index."""
    ranks = memory.setdefault("ranks", {})
    for task in ready:
        if task["app"] not in ranks:
            ranks[task["app"]] = upward_ranks(apps[task["app"]], platform)
    order = sorted(
        range(len(ready)),
        key=lambda i: (-ranks[ready[i]["app"]][ready[i]["task"]], ready[i]["job"], i),
    )
    now, free = state["now"], list(state["pe_free"])
    out = []
    for i in order:
        p = min(
            capable(platform, ready[i]["func"]),
            key=lambda q: (finish_us(ready[i], q, platform, now, free), q),
        )
        free[p] = finish_us(ready[i], p, platform, now, free)
        out.append([i, p])
    return out


# EVOLVE-BLOCK-END
