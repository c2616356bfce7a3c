"""Baseline vLLM (= the seed): FCFS admission. Only the EVOLVE-BLOCK; the loader completes it with the seed's file."""

# EVOLVE-BLOCK-START
def admit(state):
    """Every request that is not decoding (new, partly prefilled, or preempted), in arrival
    order: vLLM's FCFS waiting queue. Returns indices into the state's arrays."""
    decoding = (state.pending == 1) & (state.generated > 0)
    return np.flatnonzero(~decoding)


# EVOLVE-BLOCK-END
