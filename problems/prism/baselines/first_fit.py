"""Baseline: first fit (the ADRS folder's initial_program_naive). Only the EVOLVE-BLOCK;
evolve eval completes it with seed.py's fixed code (GPU_MEM_SIZE, placement_names)."""

# EVOLVE-BLOCK-START


def compute_model_placement(gpu_num, models):
    """First fit: each model, in the given order, onto the lowest-id GPU it fits on
    (ignores request rates entirely; a model that fits nowhere is an error)."""
    placement = {g: [] for g in range(gpu_num)}
    used = [0] * gpu_num
    for m in models:
        g = next((g for g in range(gpu_num) if used[g] + m.model_size <= GPU_MEM_SIZE), None)
        if g is None:
            raise ValueError(f"{m.model_name} ({m.model_size} GB) fits on no GPU")
        placement[g].append(m)
        used[g] += m.model_size
    return placement


# EVOLVE-BLOCK-END
