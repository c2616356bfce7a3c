"""Baseline: SPT. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def priority(op) -> float:
    """SPT: the shortest processing time first."""
    return float(-op.processing_time)


# EVOLVE-BLOCK-END
