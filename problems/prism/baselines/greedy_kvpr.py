"""Baseline (= the seed): the greedy of Prism's Algorithm 1, the ADRS folder's initial_program.
Only the EVOLVE-BLOCK; evolve eval completes it with seed.py's fixed code."""

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
