"""Baseline: the ADRS case study's published best program (OpenEvolve, combined_score 25.718),
rewritten here: same decisions and tie-breaks, our code. Only the EVOLVE-BLOCK; evolve
eval completes it with seed.py's fixed code."""

# EVOLVE-BLOCK-START


def compute_model_placement(gpu_num, models):
    """Look-ahead greedy, then hill climbing on the worst GPU's KVPR.

    1. Models in decreasing (r/s, size); each goes to the fitting GPU that gives the
       lowest maximum KVPR over all GPUs after placing it (within 1e-9: the one left
       with more free memory; then the lowest id).
    2. Repeat until nothing helps: the first single-model move (sources from the most
       to the least pressured GPU) that lowers the maximum; if none, the first pairwise
       swap (GPU pairs in id order) that lowers it.
    """
    inf = float("inf")

    def pressure(w, free):
        return w / free if free > 0 else inf

    def worst(load, free):
        return max(pressure(load[g], free[g]) for g in range(gpu_num))

    def ratio(m):
        return m.req_rate / m.slo

    placement = {g: [] for g in range(gpu_num)}
    free = [GPU_MEM_SIZE] * gpu_num
    load = [0.0] * gpu_num

    for m in sorted(models, key=lambda m: (ratio(m), m.model_size), reverse=True):
        best, best_max, best_free = None, inf, -1.0
        for g in range(gpu_num):
            if m.model_size > free[g]:
                continue
            trial_load, trial_free = list(load), list(free)
            trial_load[g] = load[g] + ratio(m)
            trial_free[g] = free[g] - m.model_size
            after = worst(trial_load, trial_free)
            if after < best_max - 1e-9 or (
                abs(after - best_max) <= 1e-9 and trial_free[g] > best_free
            ):
                best, best_max, best_free = g, after, trial_free[g]
        if best is None:
            raise ValueError(f"{m.model_name} ({m.model_size} GB) fits on no GPU")
        placement[best].append(m)
        load[best] += ratio(m)
        free[best] -= m.model_size

    def first_move(current):
        """The first single-model move that lowers the maximum, applied; False if none."""
        nonlocal load, free
        by_pressure = sorted(range(gpu_num), key=lambda g: pressure(load[g], free[g]), reverse=True)
        for src in by_pressure:
            for m in list(placement[src]):
                for dst in range(gpu_num):
                    if dst == src or m.model_size > free[dst]:
                        continue
                    new_load, new_free = list(load), list(free)
                    new_load[src] -= ratio(m)
                    new_free[src] += m.model_size
                    new_load[dst] += ratio(m)
                    new_free[dst] -= m.model_size
                    if worst(new_load, new_free) < current:
                        placement[src].remove(m)
                        placement[dst].append(m)
                        load, free = new_load, new_free
                        return True
        return False

    def first_swap(current):
        """The first pairwise swap that lowers the maximum, applied; False if none."""
        nonlocal load, free
        for a in range(gpu_num):
            for b in range(a + 1, gpu_num):
                for ma in placement[a]:
                    for mb in placement[b]:
                        free_a = free[a] + ma.model_size - mb.model_size
                        free_b = free[b] + mb.model_size - ma.model_size
                        if free_a < 0 or free_b < 0:
                            continue
                        new_load, new_free = list(load), list(free)
                        new_load[a] = new_load[a] - ratio(ma) + ratio(mb)
                        new_load[b] = new_load[b] - ratio(mb) + ratio(ma)
                        new_free[a], new_free[b] = free_a, free_b
                        if worst(new_load, new_free) < current:
                            placement[a].remove(ma)
                            placement[b].remove(mb)
                            placement[a].append(mb)
                            placement[b].append(ma)
                            load, free = new_load, new_free
                            return True
        return False

    while True:
        current = worst(load, free)
        if not (first_move(current) or first_swap(current)):
            return placement


# EVOLVE-BLOCK-END
