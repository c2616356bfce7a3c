"""Baseline: the submission order. Only the EVOLVE-BLOCK; evolve eval completes it with
seed.py's fixed code (Timeline, `import random`)."""

# EVOLVE-BLOCK-START
def schedule(txns):
    """Sequential: the transactions in the order they were submitted."""
    return list(range(len(txns)))


# EVOLVE-BLOCK-END
