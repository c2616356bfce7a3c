"""Canned llm_serving edits that the scripted LLM serves (data only).

Each entry is (name, note, body) and the body is the whole EVOLVE block of
problems/llm_serving/seed.py (the seed is vLLM's FCFS, train score 0.2286).
Expected outcomes, which tests/test_problem_llm_serving.py checks:
`adaptive_chunks` (stall-free chunked prefill with a 2,048-token budget when
nothing decodes, shortest prompt first) beats the seed and Sarathi (train
0.903); `idle` returns empty plans, scores 0 on `quick` and fails the cascade
(threshold 0.5); `syntax_error` fails to import; `unknown_request` and
`float_tokens` are invalid; `runtime_error` raises NameError.
"""

ADAPTIVE_CHUNKS = '''def schedule(state):
    """Stall-free batching: a decode step for every decoding request, then prefill chunks,
    partly prefilled requests first and then the shortest prompts, up to a token budget of
    512 while requests decode and 2,048 (the model's best tokens/s) while none does."""
    decoding = (state.pending == 1) & (state.generated > 0)
    plan = {int(r): 1 for r in state.rid[decoding][: state.max_batch]}
    budget = (512 if plan else 2048) - len(plan)
    free = state.kv_capacity - state.kv_used - len(plan)
    waiting = np.flatnonzero(~decoding)
    started = state.cached[waiting] > 0
    for i in waiting[np.lexsort((state.pending[waiting], ~started))]:
        if budget <= 0 or free <= 0 or len(plan) >= state.max_batch:
            break
        chunk = min(int(state.pending[i]), budget, free)
        plan[int(state.rid[i])] = chunk
        budget -= chunk
        free -= chunk
    return plan
'''

LLM_SERVING_VARIANTS: list[tuple[str, str, str]] = [
    (
        "adaptive_chunks",
        "Chunk prefills (stall-free) with a budget that grows when nothing decodes; shortest prompt first.",
        ADAPTIVE_CHUNKS,
    ),
    (
        "idle",
        "Wait for the queue to build up before running anything.",
        "def schedule(state):\n    return {}\n",
    ),
    (
        "syntax_error",
        "Decode first.",
        "def schedule(state):\n    return {int(r): 1 for r in state.rid\n",
    ),
    (
        "unknown_request",
        "Run a warm-up request.",
        "def schedule(state):\n    return {-1: 1}\n",
    ),
    (
        "float_tokens",
        "Half a token per decode.",
        "def schedule(state):\n    return {int(r): 0.5 for r in state.rid}\n",
    ),
    (
        "runtime_error",
        "Scale the budget by the GPU count.",
        "def schedule(state):\n    return {int(r): GPUS for r in state.rid}\n",
    ),
]
