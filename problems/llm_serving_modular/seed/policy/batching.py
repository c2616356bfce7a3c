"""Batch formation: which requests run this iteration and how many of their pending tokens
each processes (seed: vLLM's default, prefill first, whole prompts, no chunking)."""


# EVOLVE-BLOCK-START
def form_batch(state, queue):
    """vLLM's default: if admitted requests wait for their prefill, run as many whole prompts
    as fit, in queue order, stopping at the first that does not fit (token budget or free
    KV); otherwise run one decode step of every decoding request. `queue`: the indices
    admission.admit() returned. Returns {request id: tokens}."""
    decoding = (state.pending == 1) & (state.generated > 0)
    free = state.kv_capacity - state.kv_used - int(decoding.sum())  # room left for decodes
    plan, tokens = {}, 0
    for i in queue:
        if decoding[i]:
            continue
        need = int(state.pending[i])
        if tokens + need > state.max_tokens or need > free or len(plan) >= state.max_batch:
            break
        plan[int(state.rid[i])] = need
        tokens += need
        free -= need
    if plan:
        return plan
    return {int(r): 1 for r in state.rid[decoding][: state.max_batch]}


# EVOLVE-BLOCK-END
