"""Baseline: Fragmentation Gradient Descent (Weng et al., USENIX ATC'23). Only the EVOLVE-BLOCK;
the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def _frag(cpu, mem, gpu, workload):
    """FGD's node fragmentation (in milli-GPU) w.r.t. the target workload; gpu is (C, 8)."""
    g = gpu[:, None, :]
    d = workload["gpu_milli"][None, :, None]
    can = (
        (cpu[:, None] >= workload["cpu_milli"][None, :])
        & (mem[:, None] >= workload["memory_mib"][None, :])
        & (((g >= d) & (g > 0)).sum(axis=2) >= workload["num_gpu"][None, :])
    )
    per_type = np.where(can, np.where(g < d, g, 0).sum(axis=2), g.sum(axis=2))
    return per_type @ workload["weight"]


def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:
    """FGD: the placement (node and GPUs) that increases the fragmentation of the chosen node
    the least; ties go to the node with the least free GPU, then the lowest index."""
    k, d = pod["num_gpu"], pod["gpu_milli"]
    cand = np.flatnonzero(nodes["fits"])
    free = nodes["gpu_free"][cand]
    cpu = nodes["cpu_free"][cand] - pod["cpu_milli"]
    mem = nodes["mem_free"][cand] - pod["memory_mib"]
    before = _frag(nodes["cpu_free"][cand], nodes["mem_free"][cand], free, workload)
    if k == 1 and d < 1000:  # a GPU share: try every GPU with room on every fitting node
        rows, cols = np.nonzero(free >= d)
        after_gpu = free[rows].copy()
        after_gpu[np.arange(len(rows)), cols] -= d
        delta = _frag(cpu[rows], mem[rows], after_gpu, workload) - before[rows]
        tie = after_gpu.sum(axis=1)
        best = np.lexsort((cand[rows], tie, delta))[0]
        return int(cand[rows[best]]), [int(cols[best])]
    # whole GPUs (or none): the fullest-fitting GPUs on each node, then the best node
    after_gpu = free.copy()
    chosen = []
    for r in range(len(cand)):
        n = nodes["num_gpus"][cand[r]]
        room = np.flatnonzero(free[r, :n] >= d) if k else np.zeros(0, dtype=int)
        pick = room[np.argsort(free[r, room], kind="stable")][:k]
        after_gpu[r, pick] -= d
        chosen.append(pick)
    delta = _frag(cpu, mem, after_gpu, workload) - before
    best = np.lexsort((cand, after_gpu.sum(axis=1), delta))[0]
    return int(cand[best]), [int(g) for g in chosen[best]]


# EVOLVE-BLOCK-END
