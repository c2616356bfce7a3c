"""Baseline: always on-demand, the most expensive safe policy.

Only the EVOLVE-BLOCK: `evolve eval` completes it with seed.py's fixed code (the API
docstring and the constants SPOT, ON_DEMAND, NONE)."""

# EVOLVE-BLOCK-START
def decide(state):
    """Always on-demand: one start, no preemptions, the most expensive safe policy."""
    return ON_DEMAND


# EVOLVE-BLOCK-END
