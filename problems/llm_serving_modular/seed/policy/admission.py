"""Admission: which waiting requests may start (or continue) their prefill now, and in what
order batching considers them (seed: vLLM's first come, first served)."""

import numpy as np


# EVOLVE-BLOCK-START
def admit(state):
    """Every request that is not decoding (new, partly prefilled, or preempted), in arrival
    order: vLLM's FCFS waiting queue. Returns indices into the state's arrays."""
    decoding = (state.pending == 1) & (state.generated > 0)
    return np.flatnonzero(~decoding)


# EVOLVE-BLOCK-END
