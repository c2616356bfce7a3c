"""llm_serving's simulator with preemption chosen by the policy (trusted code).

In llm_serving a plan that needs more KV cache than is free is made to fit by a fixed
rule (vLLM's recompute preemption, latest arrival first). Here the policy chooses: each
decision is `{"plan": {request id: tokens}, "preempt": [request ids]}`, and this module
checks it against the server's state before anything runs:

- the plan obeys llm_serving's rules (serving_sim.parse_plan);
- `preempt` holds distinct requests in the system, none in the plan, each holding KV;
- after the preemptions the plan's new tokens fit: kv_used - freed + tokens <= capacity.

The preempted requests lose their KV (their pending becomes prompt + generated, as in
llm_serving), then the plan runs as one iteration of llm_serving's server. An empty plan
with preemptions re-plans at once (no time passes), as llm_serving's rule does when it
drops every entry of a plan; an empty plan without idles until the next arrival. With
vLLM's rule written as the policy's eviction module the runs are llm_serving's, to the
iteration. Log text: the plan as serving_sim logs it, then "/" and the preempted ids
("3-5,9") when there are any; `replay` re-checks every logged decision.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from evaluators import kit

sim = kit.include(__file__, "../llm_serving/serving_sim.py")

_IDS = re.compile(r"(\d{1,9})(?:-(\d{1,9}))?\Z")


def _ids(raw: object) -> list[int]:
    """`preempt` as a list of ints, or Invalid."""
    if isinstance(raw, np.ndarray):
        if raw.ndim != 1:
            raise sim.Invalid(
                f"preempt: an array of {raw.ndim} dimensions; expected a list of request ids"
            )
        raw = raw.tolist()
    if not isinstance(raw, (list, tuple)):
        raise sim.Invalid(f"preempt: {type(raw).__name__}; expected a list of request ids")
    return [r if type(r) is int else sim._as_int(r, "preempt: request id") for r in raw]


def parse_decision(raw: object, server: sim.Server) -> tuple[list[tuple[int, int]], list[int]]:
    """The policy's return as (plan, preempted ids), or Invalid saying what is wrong."""
    if not isinstance(raw, dict) or set(raw) != {"plan", "preempt"}:
        got = sorted(map(str, raw)) if isinstance(raw, dict) else type(raw).__name__
        raise sim.Invalid(
            f"schedule() returned {got}; expected a dict {{'plan': {{request id: tokens}}, "
            "'preempt': [request ids]}"
        )
    prompt, gen, cached = server._prompt, server.generated, server.cached
    pending = {i: prompt[i] + gen[i] - cached[i] for i in server.active}
    plan = sim.parse_plan(raw["plan"], pending)
    victims = _ids(raw["preempt"])
    if len(victims) > len(pending):
        raise sim.Invalid(
            f"preempt: {len(victims)} requests; only {len(pending)} are in the system"
        )
    planned = {rid for rid, _ in plan}
    seen: set[int] = set()
    for rid in victims:
        if rid not in pending:
            raise sim.Invalid(
                f"preempt: request {rid} is not in the system (not arrived, or finished)"
            )
        if rid in seen:
            raise sim.Invalid(f"preempt: request {rid} appears twice")
        if rid in planned:
            raise sim.Invalid(
                f"preempt: request {rid} is in the plan too; a preempted request cannot run"
            )
        if cached[rid] == 0:
            raise sim.Invalid(f"preempt: request {rid} holds no KV cache to free")
        seen.add(rid)
    need = sum(c for _, c in plan)
    free = server.sc.kv_capacity - server.kv_used + sum(cached[r] for r in victims)
    if need > free:
        raise sim.Invalid(
            f"the plan adds {need} KV tokens but {free} are free after preempting "
            f"{len(victims)} requests (capacity {server.sc.kv_capacity}, in use {server.kv_used}): "
            "preempt more or plan less"
        )
    return plan, victims


def encode_decision(plan: list[tuple[int, int]], victims: list[int]) -> str:
    text = sim.encode_plan(plan)
    return f"{text}/{sim.encode_plan([(r, 1) for r in victims])}" if victims else text


def decode_decision(text: object, n_requests: int) -> dict:
    """A logged decision back into what the policy returned; Invalid if malformed."""
    if not isinstance(text, str):
        raise sim.Invalid(f"a logged decision must be a string, got {type(text).__name__}")
    plan_text, slash, victims_text = text.partition("/")
    victims: list[int] = []
    for item in victims_text.split(",") if slash else []:
        m = _IDS.match(item)
        if m is None:
            raise sim.Invalid(f"malformed preemption entry {item!r:.40}")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if not lo <= hi < n_requests:
            raise sim.Invalid(f"preemption entry {item!r:.40} names no requests of the scenario")
        victims += range(lo, hi + 1)
        if len(victims) > n_requests:
            raise sim.Invalid("more preemptions than requests")
    return {"plan": sim.decode_plan(plan_text, n_requests), "preempt": victims}


class Server(sim.Server):
    """llm_serving's server whose step takes the policy's decision (plan and preemptions)."""

    def step(self, raw: object, log: bool = True) -> str:
        plan, victims = parse_decision(raw, self)
        for rid in victims:
            self._evict(rid)
        if plan or not victims:  # it fits: the fixed rule never fires
            self.apply(plan)
        return encode_decision(plan, victims) if log else ""


def replay(sc: sim.Scenario, perf: sim.PerfModel, log: Iterable[object]) -> Server:
    """Trusted re-run of one scenario from its logged decisions, each re-validated."""
    server = Server(sc, perf)
    for k, text in enumerate(log):
        if not server.advance():
            raise sim.Invalid(
                f"scenario {sc.name}: the log has more iterations ({k} or more) than the run"
            )
        try:
            server.step(decode_decision(text, len(sc)), log=False)
        except sim.Invalid as e:
            raise sim.Invalid(f"scenario {sc.name}, iteration {k}: {e}") from None
    if server.advance():
        raise sim.Invalid(f"scenario {sc.name}: the log stops before the run ended")
    return server
