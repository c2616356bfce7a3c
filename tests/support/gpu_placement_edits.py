"""Canned gpu_placement edits that the scripted LLM serves (data only).

Each entry is (name, note, source of the whole EVOLVE block). Expected outcomes
on problems/gpu_placement, whose seed is best fit (train 72.88): first_fit
scores lower (71.09), share_packing is the one that beats the seed on train (73.58),
syntax_error fails to import, infeasible_node is invalid at the first pod that
does not fit node 0, wrong_type is invalid (a float node), and runtime_error
raises NameError.
"""

GPU_PLACEMENT_VARIANTS: list[tuple[str, str, str]] = [
    (
        "share_packing",
        "Leave partly used GPUs to GPU shares: whole-GPU pods avoid nodes that have them.",
        "def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:\n"
        "    free = nodes['gpu_free']\n"
        "    need = pod['num_gpu'] * pod['gpu_milli']\n"
        "    gpu_left = free.sum(axis=1) - need\n"
        "    cpu_left = (nodes['cpu_free'] - pod['cpu_milli']) / nodes['cpu_total']\n"
        "    mem_left = (nodes['mem_free'] - pod['memory_mib']) / nodes['mem_total']\n"
        "    partial = ((free > 0) & (free < 1000)).sum(axis=1)\n"
        "    cost = gpu_left + cpu_left + mem_left + 300 * partial * (pod['gpu_milli'] >= 1000)\n"
        "    node = int(np.argmin(np.where(nodes['fits'], cost, np.inf)))\n"
        "    row = free[node, : nodes['num_gpus'][node]]\n"
        "    room = np.flatnonzero(row >= pod['gpu_milli'])\n"
        "    gpus = room[np.argsort(row[room], kind='stable')][: pod['num_gpu']]\n"
        "    return node, [int(g) for g in gpus]\n",
    ),
    (
        "first_fit",
        "First fit is simpler and spreads nothing.",
        "def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:\n"
        "    node = int(np.argmax(nodes['fits']))\n"
        "    free = nodes['gpu_free'][node, : nodes['num_gpus'][node]]\n"
        "    gpus = np.flatnonzero(free >= pod['gpu_milli'])[: pod['num_gpu']]\n"
        "    return node, [int(g) for g in gpus]\n",
    ),
    (
        "syntax_error",
        "Tighter fits.",
        "def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:\n"
        "    return (0, [0]\n",
    ),
    (
        "infeasible_node",
        "Always node 0, it is the biggest.",
        "def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:\n"
        "    return 0, list(range(pod['num_gpu']))\n",
    ),
    (
        "wrong_type",
        "Return the node's score instead of its index.",
        "def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:\n"
        "    return float(np.argmax(nodes['fits'])), []\n",
    ),
    (
        "runtime_error",
        "Normalise by the cluster size.",
        "def place(pod: dict, nodes: dict, workload: dict) -> tuple[int, list[int]]:\n"
        "    return int(np.argmax(nodes['fits'] / CLUSTER)), []\n",
    ),
]
