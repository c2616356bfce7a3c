"""Baseline: a random order (seeded). Only the EVOLVE-BLOCK; evolve eval completes it with
seed.py's fixed code (Timeline, `import random`)."""

# EVOLVE-BLOCK-START
def schedule(txns):
    """A uniformly random order (seeded, so every evaluation gives the same one)."""
    order = list(range(len(txns)))
    random.Random(0).shuffle(order)
    return order


# EVOLVE-BLOCK-END
