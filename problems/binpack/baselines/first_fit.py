"""Baseline: first fit. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """First fit: the earliest bin the item fits in (priority falls with bin order)."""
    return -np.arange(len(bins), dtype=float)


# EVOLVE-BLOCK-END
