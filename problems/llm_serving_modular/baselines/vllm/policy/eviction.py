"""Baseline vLLM (= the seed): latest-arrival recompute preemption. Only the EVOLVE-BLOCK; the loader completes it with the seed's file."""

# EVOLVE-BLOCK-START
def make_room(state, plan):
    """vLLM's recompute preemption: while the plan's new tokens do not fit, preempt the
    resident requests outside the plan, latest arrival first; then drop requests from the
    plan, latest arrival first, preempting those that hold KV. Returns (plan, preempt)."""
    need = sum(plan.values())
    used = int(state.kv_used)
    cap = int(state.kv_capacity)
    preempt = []
    if used + need <= cap:
        return plan, preempt
    for k in range(len(state.rid) - 1, -1, -1):  # latest arrival first
        if used + need <= cap:
            break
        rid = int(state.rid[k])
        if rid not in plan and state.cached[k] > 0:
            preempt.append(rid)
            used -= int(state.cached[k])
    plan = dict(plan)
    cached = dict(zip(state.rid.tolist(), state.cached.tolist(), strict=True))
    while used + need > cap:
        rid = max(plan)  # the latest arrival in the plan
        need -= plan.pop(rid)
        if cached[rid] > 0:  # one without KV just waits for a later iteration
            preempt.append(rid)
            used -= cached[rid]
    return plan, preempt


# EVOLVE-BLOCK-END
