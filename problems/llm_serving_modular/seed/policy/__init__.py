"""The scheduler the evaluator calls: three modules composed (fixed; the modules evolve).

Before every iteration (one forward pass of Llama2-70B on 8 A100s) the evaluator calls
schedule(state) and runs the decision it returns:

    {"plan": {request id: tokens to process this iteration}, "preempt": [request ids]}

It is made of three modules, each a file of this package:

  policy/admission.py  admit(state) -> the waiting requests that may start now, as indices
                       into the state's arrays, in the order batching considers them
  policy/batching.py   form_batch(state, queue) -> the plan {request id: tokens}: which
                       decoding requests step and how many prompt tokens each admitted
                       request prefills (chunked prefill allowed)
  policy/eviction.py   make_room(state, plan) -> (plan, preempt): which resident requests
                       lose their KV cache so the plan fits in memory (the plan may shrink)

state (arrays hold one entry per request in the system, in arrival order):
  rid          request ids (ints)
  arrival      arrival times (s)
  prompt       prompt lengths (tokens)
  generated    output tokens emitted so far
  cached       tokens whose KV cache is held
  pending      tokens to process before the request's next output token: the prompt
               (minus what is cached) while prefilling, 1 while decoding, prompt +
               generated after a preemption (its KV is recomputed)
  predicted    a noisy prediction of the total output length (the true one is hidden)
  last_token   time of its latest output token (NaN before the first)
  now          the clock (s); kv_capacity, kv_used: KV-cache tokens in all / held now
  max_tokens   at most this many tokens in one plan; max_batch: at most this many requests
  slo_ttft_s   time-to-first-token target; slo_tbt_s: target for every gap between tokens
  memory       a dict kept across the iterations of one run (the modules share it)

Rules (the evaluator checks every decision): each plan entry gives 1..pending tokens of a
request in the system (fewer than pending = a chunk of its prefill; processing all of it
emits one output token at the end of the iteration), at most max_batch entries and
max_tokens tokens. `preempt` lists distinct requests in the system, not in the plan, each
holding KV; they lose it (their pending becomes prompt + generated). After the
preemptions the plan's tokens must fit: kv_used - freed + tokens <= kv_capacity. An
iteration of n tokens over b requests takes max(decode_time(b), prefill_time(n)). An empty
plan with preemptions re-plans at once; an empty plan without idles the server until the
next arrival. Score = fraction of requests with TTFT <= slo_ttft_s and every inter-token
gap <= slo_tbt_s.
"""

import numpy as np

from policy import admission, batching, eviction


def schedule(state):
    queue = np.asarray(admission.admit(state))
    if queue.size == 0:  # nobody admitted ([] is an array of floats)
        queue = np.zeros(0, dtype=np.int64)
    elif queue.ndim != 1 or not np.issubdtype(queue.dtype, np.integer):
        raise TypeError("policy/admission.py: admit() must return a 1-d sequence of indices")
    if queue.size and not (0 <= queue.min() and queue.max() < len(state.rid)):
        bad = int(queue.min() if queue.min() < 0 else queue.max())
        raise ValueError(
            f"policy/admission.py: admit() returned index {bad}; expected indices into the "
            f"state's arrays (0..{len(state.rid) - 1})"
        )
    plan = batching.form_batch(state, queue)
    if not isinstance(plan, dict):
        raise TypeError(
            f"policy/batching.py: form_batch() returned {type(plan).__name__}; "
            "expected a dict {request id: tokens}"
        )
    decoding = (state.pending == 1) & (state.generated > 0)
    may_run = set(state.rid[decoding].tolist()) | set(state.rid[queue].tolist())
    for rid in plan:
        if rid not in may_run:
            raise ValueError(
                f"policy/batching.py: form_batch() runs request {rid}, which neither decodes "
                "nor was admitted by policy/admission.py"
            )
    made = eviction.make_room(state, plan)
    if not (isinstance(made, tuple) and len(made) == 2):
        raise TypeError("policy/eviction.py: make_room() must return a pair (plan, preempt)")
    plan, preempt = made
    return {"plan": plan, "preempt": preempt}  # the evaluator checks both
