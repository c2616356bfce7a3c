"""Baseline: FIFO. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def priority(op) -> float:
    """FIFO: the operation that arrived at the machine first (earliest job-ready time)."""
    return float(-op.job_ready)


# EVOLVE-BLOCK-END
