"""Baseline: CPOP (Topcuoglu, Hariri, Wu, IEEE TPDS 2002). Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def schedule(wf, platform):
    """CPOP (Topcuoglu, Hariri, Wu, IEEE TPDS 2002): priority = rank_u + rank_d (mean costs).
    The critical path runs from the entry task of highest priority through, at each step,
    the child of highest priority (the one whose priority equals |CP| in exact arithmetic;
    a virtual zero-cost entry joins several entry tasks). Its tasks all go to the critical-path
    processor, the one minimising their summed execution time. The other tasks, taken from
    the ready queue by highest priority, go to the processor with the earliest finish time
    (insertion-based, as HEFT). Ties: the lower task / processor index."""
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
    timeline = Timeline(wf, platform)
    waiting = [len(ps) for ps in wf["parents"]]
    ready = [(-prio[i], i) for i in entries]
    heapq.heapify(ready)
    while ready:
        _, i = heapq.heappop(ready)
        if i in critical:
            timeline.place(i, cp_proc)
        else:
            timeline.place(i, min(procs, key=lambda p: (timeline.eft(i, p), p)))
        for j, _ in wf["children"][i]:
            waiting[j] -= 1
            if waiting[j] == 0:
                heapq.heappush(ready, (-prio[j], j))
    return timeline.order


# EVOLVE-BLOCK-END
