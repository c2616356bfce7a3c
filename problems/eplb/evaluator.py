"""Evaluator for expert-parallel load balancing (EPLB) of MoE inference.

Two halves with different trust. `evaluate()` runs inside the sandbox and
calls rebalance_experts() in the candidate's own, confined process (the kit's
proxy), once per window of each trace, one window at a time (the next window
is what the placement is scored on); it checks each placement (for an early,
precise error) and reports the placements and call times. `score()` runs in
a clean process that never imports the candidate: it regenerates the traces,
re-checks every placement and recomputes the balancedness of each on the
*next* window. The runtime part of the score is measured here, in the
evaluator's process, around each call to the candidate's process (its
request, the call and its reply): the candidate cannot reach this clock, as it
could the worker's. It is clamped and bounded to at most +10 / -10 points,
against 90 points for the trusted balancedness.
"""

from __future__ import annotations

import math

import eplb_sim as sim  # the simulator next to this file
import numpy as np

from evaluators import kit

PURITY_CALLS = 2  # placements recomputed after the run, in reverse order, must match
ARRAYS = ("phy2log", "log2phy", "logcnt")


def _placement(fn, weight: np.ndarray, where: str) -> tuple[tuple[np.ndarray, ...], float]:
    """One timed call on a private copy of `weight`: the checked (phy2log, log2phy, logcnt),
    log2phy cut to the largest count, and the seconds the call took, on this process's clock."""
    arg = weight.copy()
    raw, dt = kit.proxy(fn).timed(arg, sim.NUM_REPLICAS, sim.NUM_GROUPS, sim.NUM_NODES, sim.NUM_GPUS)
    try:
        if not isinstance(raw, (tuple, list)) or len(raw) != 3:
            got = f"a {type(raw).__name__}" + (f" of length {len(raw)}" if isinstance(raw, (tuple, list)) else "")
            raise kit.Invalid(f"rebalance_experts must return (phy2log, log2phy, logcnt), got {got}")
        phy2log, log2phy, logcnt = map(sim.as_int_array, raw, ARRAYS)
        sim.check_placement(phy2log, log2phy, logcnt, weight)
    except kit.Invalid as e:
        raise kit.Invalid(f"{where}: {e}") from None
    log2phy = log2phy[:, :, : max(1, int(logcnt.max()))]  # the rest was checked to be -1
    return (phy2log.copy(), log2phy.copy(), logcnt.copy()), dt  # copies: never aliased


def _rebalance_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: run the candidate on every window of the split's traces."""
    kept, call_s = [], []
    for name, loads in sim.make_traces(split):
        for w in range(len(loads) - 1):
            arrays, dt = _placement(fn, loads[w], f"trace {name!r}, window {w}")
            kept.append((name, w, loads[w], arrays))
            call_s.append(dt)
    # Purity: recompute a few placements in reverse order; a stateful or
    # random policy (one that learns from the sequence) gives different ones.
    for i in np.linspace(len(kept) - 1, 0, PURITY_CALLS).round().astype(int).tolist():
        name, w, weight, before = kept[i]
        again, dt = _placement(fn, weight, f"trace {name!r}, window {w}, called again")
        call_s.append(dt)
        if not all(np.array_equal(a, b) for a, b in zip(again, before, strict=True)):
            raise kit.Invalid(
                f"rebalance_experts gave a different placement for trace {name!r}, window "
                f"{w} when called again; it must be a deterministic function of its "
                "arguments (no state kept between calls, no unseeded randomness)")
    placements = [{"trace": name, "window": w, **dict(zip(ARRAYS, map(sim.pack_array, arrays), strict=True))}
                  for name, w, _, arrays in kept]
    return {"placements": placements, "call_s": call_s}, {"calls": len(call_s)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "rebalance_experts", _rebalance_all)


def _parse(outputs: object, traces: list) -> tuple[list, list[float]]:
    """Decode and re-check every reported placement; kit.Invalid on anything off."""
    if not isinstance(outputs, dict) or not isinstance(outputs.get("placements"), list):
        raise kit.Invalid("outputs must be a dict with a 'placements' list")
    expected = [(name, w) for name, loads in traces for w in range(len(loads) - 1)]
    reported = outputs["placements"]
    if len(reported) != len(expected):
        raise kit.Invalid(f"expected {len(expected)} placements, got {len(reported)}")
    layers, experts, slots = sim.NUM_LAYERS, sim.NUM_EXPERTS, sim.NUM_REPLICAS
    loads_of = dict(traces)
    parsed = []
    for (name, w), p in zip(expected, reported, strict=True):
        where = f"trace {name!r}, window {w}"
        if not isinstance(p, dict) or p.get("trace") != name or p.get("window") != w:
            raise kit.Invalid(f"placement for {where} is missing or out of order")
        try:
            phy2log = sim.unpack_array(p.get("phy2log"), "phy2log", layers * slots)
            log2phy = sim.unpack_array(p.get("log2phy"), "log2phy", layers * experts * slots)
            logcnt = sim.unpack_array(p.get("logcnt"), "logcnt", layers * experts)
            sim.check_placement(phy2log, log2phy, logcnt, loads_of[name][w])
        except kit.Invalid as e:
            raise kit.Invalid(f"{where}: {e}") from None
        parsed.append((name, w, phy2log, logcnt))
    call_s = outputs.get("call_s")
    if (not isinstance(call_s, list) or len(call_s) < len(expected)
            or not all(type(t) in (int, float) and math.isfinite(t) and t >= 0 for t in call_s)):
        raise kit.Invalid("outputs['call_s'] must list a finite, non-negative time per call")
    return parsed, [float(t) for t in call_s]


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check the placements, replay them on the next windows, score."""
    traces = sim.make_traces(split)
    parsed, call_s = _parse(outputs, traces)
    loads_of = dict(traces)
    per_trace: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in traces}
    for name, w, phy2log, _ in parsed:
        loads = loads_of[name]
        per_trace[name].append((sim.balancedness(phy2log, loads[w + 1]), sim.balancedness(phy2log, loads[w])))
    balance, same = (float(np.mean([p[i] for pairs in per_trace.values() for p in pairs])) for i in (0, 1))
    median_s = float(np.median(call_s))
    speed, penalty = sim.runtime_terms(median_s)
    total = sim.BALANCE_WEIGHT * balance + speed - penalty
    metrics = {
        "balancedness": balance,
        "balancedness_same_window": same,
        "runtime_ms": 1000.0 * median_s,
        "speed_bonus": speed,
        "slow_penalty": penalty,
        "max_replicas": max(int(logcnt.max()) for *_, logcnt in parsed),
        **{f"balancedness_{name}": float(np.mean([b for b, _ in pairs])) for name, pairs in per_trace.items()},
    }
    hint = (
        f"balancedness (mean/max GPU load, scored on the window after the one you saw) {balance:.4f}; "
        f"on the window you saw it would be {same:.4f}, so {same - balance:.4f} is lost to load drift. "
        f"Median call {1000 * median_s:.2f} ms: speed bonus +{speed:.2f}, slowness penalty -{penalty:.2f} "
        f"(calls over {1000 * sim.SLOW_S:.0f} ms are penalised, {1000 * sim.SPEED_REF_S / sim.SPEED_CAP:.0f} ms "
        f"or less earns the full +{sim.SPEED_WEIGHT * sim.SPEED_CAP:.0f}). Score = "
        f"{sim.BALANCE_WEIGHT:.0f} * balancedness + bonus - penalty = {total:.3f}."
    )
    return {"score": total, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
