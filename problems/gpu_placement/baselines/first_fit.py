"""Baseline: first fit. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:
    """First fit: the lowest-index node that fits, and its lowest-index GPUs with room."""
    node = int(np.argmax(nodes["fits"]))
    free = nodes["gpu_free"][node, : nodes["num_gpus"][node]]
    gpus = np.flatnonzero(free >= pod["gpu_milli"])[: pod["num_gpu"]]
    return node, [int(g) for g in gpus]


# EVOLVE-BLOCK-END
