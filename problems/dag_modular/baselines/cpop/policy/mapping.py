"""Baseline CPOP: the critical path on one processor, every other task at its earliest finish."""


# EVOLVE-BLOCK-START
def prepare(wf, platform):
    """Once per workflow: the critical path and its processor. The path runs from the entry
    task of highest priority (rank_u + rank_d) through, at each step, the child of highest
    priority; its processor is the one minimising the path's summed execution time.
    Ties: the lower task / processor index."""
    n, procs = wf["n"], range(len(platform["speed"]))
    up, down = upward_ranks(wf, platform), downward_ranks(wf, platform)
    prio = [up[i] + down[i] for i in range(n)]
    entries = [i for i in range(n) if not wf["parents"][i]]
    k = min(entries, key=lambda i: (-prio[i], i))
    critical = {k}
    while wf["children"][k]:
        k = min((j for j, _ in wf["children"][k]), key=lambda j: (-prio[j], j))
        critical.add(k)
    cp_proc = min(procs, key=lambda p: (sum(exec_time(wf, platform, i, p) for i in critical), p))
    return critical, cp_proc


def choose(task, timeline, state):
    """A critical-path task on the critical-path processor; any other on the processor where
    it finishes earliest (insertion-based, as HEFT)."""
    critical, cp_proc = state
    if task in critical:
        return cp_proc
    procs = range(len(timeline.platform["speed"]))
    return min(procs, key=lambda p: (timeline.eft(task, p), p))


# EVOLVE-BLOCK-END
