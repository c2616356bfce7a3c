"""Canned llm_serving_modular edits that the scripted LLM serves (data only).

Each entry is (name, note, body): the body is the whole EVOLVE block of one module of
problems/llm_serving_modular/seed/policy/ (which module: the conformance row's `path`).
The seed is vLLM's default split into modules (train 0.2286, as llm_serving's FCFS).
Expected outcomes, which tests/test_problem_llm_serving_modular.py and the conformance
suite check: `started_then_shortest` (admission) with `stall_free_adaptive` (batching) is
llm_serving's `adaptive_chunks` in two modules (train 0.9032); `idle` (batching) returns
empty plans, scores 0 on `quick` and fails the cascade; `syntax_error` (batching) fails
to import; `float_tokens` (batching), `unknown_preempt` and `preempt_planned` (eviction)
are invalid; `runtime_error` (admission) raises NameError; `unknown_request` (batching
runs a request that neither decodes nor was admitted) is refused by the fixed entry, which
names the module.
"""

STARTED_THEN_SHORTEST = '''def admit(state):
    """Partly prefilled requests first (finish what has started), then the shortest prompts."""
    decoding = (state.pending == 1) & (state.generated > 0)
    waiting = np.flatnonzero(~decoding)
    started = state.cached[waiting] > 0
    return waiting[np.lexsort((state.pending[waiting], ~started))]
'''

STALL_FREE_ADAPTIVE = '''def form_batch(state, queue):
    """Stall-free batching: a decode step for every decoding request, then prefill chunks in
    queue order up to a token budget of 512 while requests decode and 2,048 (the model's
    best tokens/s) while none does."""
    decoding = (state.pending == 1) & (state.generated > 0)
    plan = {int(r): 1 for r in state.rid[decoding][: state.max_batch]}
    budget = (512 if plan else 2048) - len(plan)
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
'''

LLM_SERVING_MODULAR_VARIANTS: list[tuple[str, str, str]] = [
    (
        "started_then_shortest",
        "Admission: finish started prefills first, then shortest prompt first.",
        STARTED_THEN_SHORTEST,
    ),
    (
        "stall_free_adaptive",
        "Batching: chunk prefills (stall-free) with a budget that grows when nothing decodes.",
        STALL_FREE_ADAPTIVE,
    ),
    (
        "idle",
        "Batching: wait for the queue to build up before running anything.",
        "def form_batch(state, queue):\n    return {}\n",
    ),
    (
        "syntax_error",
        "Batching: decode first.",
        "def form_batch(state, queue):\n    return {int(r): 1 for r in state.rid\n",
    ),
    (
        "float_tokens",
        "Batching: half a token per admitted request.",
        "def form_batch(state, queue):\n    return {int(state.rid[i]): 0.5 for i in queue}\n",
    ),
    (
        "unknown_preempt",
        "Eviction: preempt a warm-up request.",
        "def make_room(state, plan):\n    return plan, [-1]\n",
    ),
    (
        "preempt_planned",
        "Eviction: preempt the first planned request to be safe.",
        "def make_room(state, plan):\n    return plan, list(plan)[:1]\n",
    ),
    (
        "runtime_error",
        "Admission: scale the queue by the GPU count.",
        "def admit(state):\n    return np.arange(GPUS)\n",
    ),
    (
        "unknown_request",
        "Batching: run a warm-up request.",
        "def form_batch(state, queue):\n    return {-1: 1}\n",
    ),
]
