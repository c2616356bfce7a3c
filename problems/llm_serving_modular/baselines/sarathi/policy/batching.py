"""Baseline: Sarathi-Serve's stall-free batching (OSDI 2024). Only the EVOLVE-BLOCK; the loader completes it with the seed's file."""

# EVOLVE-BLOCK-START
TOKEN_BUDGET = 512  # tokens per iteration, decodes included


def form_batch(state, queue):
    """Sarathi-Serve's stall-free batching (OSDI 2024): every iteration first takes one decode
    step of every decoding request, then fills the rest of a fixed token budget with prefill
    chunks of the admitted requests in queue order (a partly prefilled request continues
    first, being earlier), each chunk as large as the budget and the free KV allow."""
    decoding = (state.pending == 1) & (state.generated > 0)
    plan = {int(r): 1 for r in state.rid[decoding][: state.max_batch]}
    budget = max(TOKEN_BUDGET, len(plan)) - len(plan)
    free = state.kv_capacity - state.kv_used - len(plan)
    for i in queue:
        if decoding[i]:
            continue
        if budget <= 0 or free <= 0 or len(plan) >= state.max_batch:
            break
        chunk = min(int(state.pending[i]), budget, free)
        plan[int(state.rid[i])] = chunk
        budget -= chunk
        free -= chunk
    return plan


# EVOLVE-BLOCK-END
