"""Batch scheduler of a continuous-batching LLM inference server (seed: vLLM's default FCFS).

Fixed API (the code outside the EVOLVE block): before every iteration (one
forward pass of Llama2-70B on 8 A100s) the evaluator calls schedule(state) and
runs the plan it returns: a dict {request id: tokens to process this iteration}
(or a list of (request id, tokens) pairs).

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
  memory       a dict kept across the iterations of one run

Rules: each entry gives 1..pending tokens of a request in the system (fewer than
pending = a chunk of its prefill; when a request's whole pending is processed, it
emits one output token at the end of the iteration). An iteration of n tokens over
b requests takes max(decode_time(b), prefill_time(n)) from measured Llama2-70B
timings. If the plan needs more KV than is free, the simulator preempts (frees the
KV of) resident requests outside the plan, latest arrival first, then requests in
the plan, latest arrival first (they drop out of this iteration). An empty plan
idles the server until the next arrival. Score = fraction of requests with
TTFT <= slo_ttft_s and every inter-token gap <= slo_tbt_s.
"""

import numpy as np


# EVOLVE-BLOCK-START
def schedule(state):
    """vLLM's default (FCFS, prefill first): if requests wait for their prefill, run as many
    whole prompts as fit, in arrival order, stopping at the first that does not fit (token
    budget or free KV); otherwise run one decode step of every decoding request."""
    decoding = (state.pending == 1) & (state.generated > 0)
    free = state.kv_capacity - state.kv_used - int(decoding.sum())  # room left for decodes
    plan, tokens = {}, 0
    for i in np.flatnonzero(~decoding):
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
