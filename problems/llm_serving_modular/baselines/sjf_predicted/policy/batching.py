"""Baseline: shortest predicted job first (a prompt that does not fit is skipped). Only the EVOLVE-BLOCK; the loader completes it with the seed's file."""

# EVOLVE-BLOCK-START
def form_batch(state, queue):
    """vLLM's prefill-first batching over the admitted queue, except that a whole prompt that
    does not fit (token budget, free KV) is skipped rather than blocking the queue. With no
    prefill planned, one decode step of every decoding request."""
    decoding = (state.pending == 1) & (state.generated > 0)
    free = state.kv_capacity - state.kv_used - int(decoding.sum())
    plan, tokens = {}, 0
    for i in queue:
        if decoding[i]:
            continue
        need = int(state.pending[i])
        if tokens + need > state.max_tokens or need > free or len(plan) >= state.max_batch:
            continue
        plan[int(state.rid[i])] = need
        tokens += need
        free -= need
    if plan:
        return plan
    return {int(r): 1 for r in state.rid[decoding][: state.max_batch]}


# EVOLVE-BLOCK-END
