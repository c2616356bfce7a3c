"""Baseline: shortest predicted job first. Only the EVOLVE-BLOCK; the loader completes it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def schedule(state):
    """vLLM's prefill-first batching with the waiting queue in shortest-predicted-job order:
    job size = pending prefill tokens + predicted output tokens still to come. Whole prompts
    are admitted while they fit (token budget, free KV); one that does not fit is skipped
    rather than blocking the queue. With no prefill admitted, one decode step of every
    decoding request."""
    decoding = (state.pending == 1) & (state.generated > 0)
    free = state.kv_capacity - state.kv_used - int(decoding.sum())
    waiting = np.flatnonzero(~decoding)
    size = state.pending[waiting] + np.maximum(
        state.predicted[waiting] - state.generated[waiting], 1
    )
    plan, tokens = {}, 0
    for i in waiting[np.argsort(size, kind="stable")]:
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
