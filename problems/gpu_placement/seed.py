"""GPU-sharing pod placement on a heterogeneous GPU cluster (seed: best fit).

Fixed API (the code outside the EVOLVE block): pods of the Alibaba GPU trace
(2023) arrive one at a time; for each pod that fits at least one node the
evaluator calls place(pod, nodes, workload) and applies the returned choice.

pod: dict of ints: cpu_milli, memory_mib, num_gpu (0..8), gpu_milli (per GPU,
  1..1000; 1000 = a whole GPU; 0 for a CPU-only pod; multi-GPU pods take whole
  GPUs), and models (tuple of allowed GPU model codes; () = any model).
nodes: dict of numpy arrays over the N nodes: cpu_free, mem_free, num_gpus,
  cpu_total, mem_total, model (int code), gpu_free (N, 8): free milli per GPU
  (0 for a GPU slot the node lacks), and fits (bool): the nodes that can host
  the pod now (CPU, memory, GPU model, enough GPUs with room). Copies: changing
  them changes nothing.
workload: the target workload (FGD's): arrays cpu_milli, memory_mib, num_gpu,
  gpu_milli, weight (sums to 1) of the 16 most frequent pod shapes.

Return (node, gpus): node an index with fits[node] True, gpus a list of
num_gpu distinct GPU indices of that node (each < num_gpus[node]) with
gpu_free >= gpu_milli; ([] for a CPU-only pod). (-1, []) rejects the pod.
Anything else makes the program invalid.
"""

import numpy as np


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
