"""Baseline: best fit (the seed). Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:
    """Best fit: the fitting node left with the least free GPU (then CPU) after placement;
    within it, the GPUs with the least room that still fit the pod's share."""
    need = pod["num_gpu"] * pod["gpu_milli"]
    gpu_left = nodes["gpu_free"].sum(axis=1) - need
    cpu_left = (nodes["cpu_free"] - pod["cpu_milli"]) / nodes["cpu_total"]
    cost = np.where(nodes["fits"], gpu_left + cpu_left, np.inf)
    node = int(np.argmin(cost))
    free = nodes["gpu_free"][node, : nodes["num_gpus"][node]]
    room = np.flatnonzero(free >= pod["gpu_milli"])
    gpus = room[np.argsort(free[room], kind="stable")][: pod["num_gpu"]]
    return node, [int(g) for g in gpus]


# EVOLVE-BLOCK-END
