"""Baseline: MOPNR. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def priority(op) -> float:
    """MOPNR: the job with the most operations remaining first."""
    return float(op.remaining_ops)


# EVOLVE-BLOCK-END
