"""Baseline: best fit (FunSearch's initial priority). Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Best fit: the bin left with the least free space after placing the item."""
    return -(bins - item)


# EVOLVE-BLOCK-END
