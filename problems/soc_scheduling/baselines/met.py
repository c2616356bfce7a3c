"""Baseline: MET, minimum execution time (DS3's scheduler.MET). Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def place(ready, state, platform, apps, memory):
    """MET (DS3): each ready task, in order, goes to a PE with its minimum execution time,
    ignoring queues and transfers. Among several such PEs: an idle one (its queue drained
    by now) before a busy one, then the one given fewest tasks at this epoch, then the lowest."""
    now, free = state["now"], state["pe_free"]
    given = [0] * len(free)
    out = []
    for i, task in enumerate(ready):
        times = platform["exec"][task["func"]]
        fastest = min(t for t in times if t is not None)
        pes = [p for p, t in enumerate(times) if t == fastest]
        p = min(pes, key=lambda q: (free[q] > now, given[q], q))
        given[p] += 1
        out.append([i, p])
    return out


# EVOLVE-BLOCK-END
