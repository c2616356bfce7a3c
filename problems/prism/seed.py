"""Prism model placement: put LLMs on 80 GB GPUs to minimise the worst KV-cache pressure
(seed: the greedy of Prism's Algorithm 1, the ADRS initial program).

Fixed API (the code outside the EVOLVE block): compute_model_placement(gpu_num,
models) returns {gpu_id: [models]} with gpu_id in range(gpu_num) and every model
on exactly one GPU. Each model has model_name, model_size (GB), req_rate, slo
and cur_gpu_id (its index). A GPU's models may use at most GPU_MEM_SIZE GB.

KVPR of a GPU = sum(req_rate / slo of its models) / (GPU_MEM_SIZE - sum of their
model_size); a GPU filled to exactly GPU_MEM_SIZE counts as 1e6. The score is
1 + 1 / (mean over cases of the worst GPU's KVPR): lower pressure, higher score.
"""

GPU_MEM_SIZE = 80  # GB

# EVOLVE-BLOCK-START


def compute_model_placement(gpu_num, models):
    """Greedy (Prism's Algorithm 1 without its tau check): models in decreasing r/s,
    each onto the GPU that fits it with the lowest current KVPR (ties: lowest id)."""
    placement = {g: [] for g in range(gpu_num)}
    free = [GPU_MEM_SIZE] * gpu_num
    load = [0.0] * gpu_num
    for m in sorted(models, key=lambda m: m.req_rate / m.slo, reverse=True):
        fits = [g for g in range(gpu_num) if m.model_size <= free[g] and free[g] > 0]
        if not fits:
            raise ValueError(f"{m.model_name} ({m.model_size} GB) fits on no GPU; free: {free}")
        g = min(fits, key=lambda g: load[g] / free[g])
        placement[g].append(m)
        load[g] += m.req_rate / m.slo
        free[g] -= m.model_size
    return placement


# EVOLVE-BLOCK-END


def placement_names(gpu_num, models):
    """What the evaluator calls: compute_model_placement's answer with each model replaced
    by its name (the evaluator re-checks everything it gets)."""
    fn = globals().get("compute_model_placement")
    if not callable(fn):
        raise NameError("the program defines no callable compute_model_placement(gpu_num, models)")
    placement = fn(gpu_num, models)
    if not isinstance(placement, dict):
        return placement  # the evaluator names the type it got
    return {
        g: [getattr(m, "model_name", m) for m in ms] if isinstance(ms, (list, tuple)) else ms
        for g, ms in placement.items()
    }
