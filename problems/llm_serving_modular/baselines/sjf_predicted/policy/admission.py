"""Baseline: shortest predicted job first (admission order). Only the EVOLVE-BLOCK; the loader completes it with the seed's file."""

# EVOLVE-BLOCK-START
def admit(state):
    """Shortest predicted job first: every request that is not decoding, ordered by its job
    size = pending prefill tokens + predicted output tokens still to come (ties: arrival)."""
    decoding = (state.pending == 1) & (state.generated > 0)
    waiting = np.flatnonzero(~decoding)
    size = state.pending[waiting] + np.maximum(
        state.predicted[waiting] - state.generated[waiting], 1
    )
    return waiting[np.argsort(size, kind="stable")]


# EVOLVE-BLOCK-END
