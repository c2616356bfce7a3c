"""Evaluator for expert-parallel load balancing (EPLB) of MoE inference.

Two halves with different trust. `evaluate()` runs inside the sandbox next to
the candidate: it calls rebalance_experts() once per window of each trace,
times each call, checks each placement (for an early, precise error) and
reports the placements and call times. `score()` runs in a clean process that
never imports the candidate: it regenerates the traces, re-checks every
placement and recomputes the balancedness of each on the *next* window, so a
candidate that patches this module or the simulator in memory gains nothing
there. The runtime part of the score is self-reported by the sandbox process
(score() cannot time code it never runs); it is clamped and bounded to at
most +10 / -10 points, against 90 points for the trusted balancedness.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import math
import os
import sys
import time
from time import perf_counter as _clock  # bound before any candidate code runs

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import eplb_sim as sim  # noqa: E402  (the simulator next to this file)

PURITY_CALLS = 2  # placements recomputed after the run, in reverse order, must match
_module_ids = itertools.count()


def _load_policy(program_path: str):
    """Import the candidate by path and return its rebalance_experts function."""
    name = f"_eplb_candidate_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, program_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {program_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "rebalance_experts", None)
    if not callable(fn):
        raise sim.BadPlacement("the program defines no callable "
                               "rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_gpus)")
    return fn


def _call(fn, weight: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], float]:
    """One timed call on a private copy of `weight`; returns the three arrays, unchecked."""
    arg = weight.copy()
    t0 = _clock()
    raw = fn(arg, sim.NUM_REPLICAS, sim.NUM_GROUPS, sim.NUM_NODES, sim.NUM_GPUS)
    dt = _clock() - t0
    if not isinstance(raw, (tuple, list)) or len(raw) != 3:
        got = f"a {type(raw).__name__}" + (f" of length {len(raw)}" if isinstance(raw, (tuple, list)) else "")
        raise sim.BadPlacement(f"rebalance_experts must return (phy2log, log2phy, logcnt), got {got}")
    phy2log = sim.as_int_array(raw[0], "phy2log", ndim=2)
    log2phy = sim.as_int_array(raw[1], "log2phy", ndim=3)
    logcnt = sim.as_int_array(raw[2], "logcnt", ndim=2)
    return (phy2log, log2phy, logcnt), dt


def _trimmed(log2phy: np.ndarray, logcnt: np.ndarray) -> np.ndarray:
    """log2phy without the all -1 columns past the largest count (already checked to be -1)."""
    return log2phy[:, :, : max(1, int(logcnt.max()))]


def evaluate(program_path: str, split: str) -> dict:
    """Sandbox side: run the candidate on every window of the split's traces."""
    t_start = time.perf_counter()
    traces = sim.make_traces(split)
    placements, call_s, kept = [], [], []
    try:
        fn = _load_policy(program_path)
        for name, loads in traces:
            for w in range(len(loads) - 1):
                where = f"trace {name!r}, window {w}"
                try:
                    (phy2log, log2phy, logcnt), dt = _call(fn, loads[w])
                    sim.check_placement(phy2log, log2phy, logcnt, loads[w])
                except sim.BadPlacement as e:
                    raise sim.BadPlacement(f"{where}: {e}") from None
                log2phy = _trimmed(log2phy, logcnt)
                call_s.append(dt)
                kept.append((loads[w], phy2log.copy(), log2phy.copy(), logcnt.copy()))  # not aliased
                placements.append({"trace": name, "window": w, "phy2log": sim.pack_array(phy2log),
                                   "log2phy": sim.pack_array(log2phy), "logcnt": sim.pack_array(logcnt)})
        # Purity: recompute a few placements in reverse order; a stateful or
        # random policy (one that learns from the sequence) gives different ones.
        picks = np.linspace(len(kept) - 1, 0, PURITY_CALLS).round().astype(int).tolist()
        for i in picks:
            weight, *before = kept[i]
            p = placements[i]
            try:
                (phy2log, log2phy, logcnt), dt = _call(fn, weight)
                sim.check_placement(phy2log, log2phy, logcnt, weight)
            except sim.BadPlacement as e:
                raise sim.BadPlacement(f"trace {p['trace']!r}, window {p['window']}, called again: {e}") from None
            call_s.append(dt)
            again = (phy2log, _trimmed(log2phy, logcnt), logcnt)
            if not all(np.array_equal(a, b) for a, b in zip(again, before, strict=True)):
                raise sim.BadPlacement(
                    f"rebalance_experts gave a different placement for trace {p['trace']!r}, window "
                    f"{p['window']} when called again; it must be a deterministic function of its "
                    "arguments (no state kept between calls, no unseeded randomness)")
    except sim.BadPlacement as e:
        return {"valid": False, "artifacts": {"error": str(e)}}
    return {
        "outputs": {"placements": placements, "call_s": call_s},
        "artifacts": {
            "split": split,
            "calls": str(len(call_s)),
            "evaluate_s": f"{time.perf_counter() - t_start:.3f}",
        },
    }


def _parse(outputs: object, traces: list) -> tuple[list, list[float]]:
    """Decode and re-check every reported placement; BadPlacement on anything off."""
    if not isinstance(outputs, dict) or not isinstance(outputs.get("placements"), list):
        raise sim.BadPlacement("outputs must be a dict with a 'placements' list")
    expected = [(name, w) for name, loads in traces for w in range(len(loads) - 1)]
    reported = outputs["placements"]
    if len(reported) != len(expected):
        raise sim.BadPlacement(f"expected {len(expected)} placements, got {len(reported)}")
    layers, experts, slots = sim.NUM_LAYERS, sim.NUM_EXPERTS, sim.NUM_REPLICAS
    loads_of = dict(traces)
    parsed = []
    for (name, w), p in zip(expected, reported, strict=True):
        where = f"trace {name!r}, window {w}"
        if not isinstance(p, dict) or p.get("trace") != name or p.get("window") != w:
            raise sim.BadPlacement(f"placement for {where} is missing or out of order")
        try:
            phy2log = sim.unpack_array(p.get("phy2log"), "phy2log", layers * slots)
            log2phy = sim.unpack_array(p.get("log2phy"), "log2phy", layers * experts * slots)
            logcnt = sim.unpack_array(p.get("logcnt"), "logcnt", layers * experts)
            sim.check_placement(phy2log, log2phy, logcnt, loads_of[name][w])
        except sim.BadPlacement as e:
            raise sim.BadPlacement(f"{where}: {e}") from None
        parsed.append((name, w, phy2log, logcnt))
    call_s = outputs.get("call_s")
    if (not isinstance(call_s, list) or len(call_s) < len(expected)
            or not all(type(t) in (int, float) and math.isfinite(t) and t >= 0 for t in call_s)):
        raise sim.BadPlacement("outputs['call_s'] must list a finite, non-negative time per call")
    return parsed, [float(t) for t in call_s]


def score(outputs: dict, split: str) -> dict:
    """Trusted side: re-check the placements, replay them on the next windows, score."""
    traces = sim.make_traces(split)
    try:
        parsed, call_s = _parse(outputs, traces)
    except sim.BadPlacement as e:
        return {"valid": False, "artifacts": {"error": str(e)}}
    loads_of = dict(traces)
    per_trace: dict[str, list[tuple[float, float]]] = {name: [] for name, _ in traces}
    max_rep = 0
    for name, w, phy2log, logcnt in parsed:
        loads = loads_of[name]
        per_trace[name].append((sim.balancedness(phy2log, loads[w + 1]), sim.balancedness(phy2log, loads[w])))
        max_rep = max(max_rep, int(logcnt.max()))
    nxt = [b for pairs in per_trace.values() for b, _ in pairs]
    same = [b for pairs in per_trace.values() for _, b in pairs]
    balance = float(np.mean(nxt))
    median_s = float(np.median(call_s))
    speed, penalty = sim.runtime_terms(median_s)
    total = sim.BALANCE_WEIGHT * balance + speed - penalty
    metrics = {
        "balancedness": balance,
        "balancedness_same_window": float(np.mean(same)),
        "runtime_ms": 1000.0 * median_s,
        "speed_bonus": speed,
        "slow_penalty": penalty,
        "max_replicas": max_rep,
    }
    for name, pairs in per_trace.items():
        metrics[f"balancedness_{name}"] = float(np.mean([b for b, _ in pairs]))
    hint = (
        f"balancedness (mean/max GPU load, scored on the window after the one you saw) {balance:.4f}; "
        f"on the window you saw it would be {metrics['balancedness_same_window']:.4f}, so "
        f"{metrics['balancedness_same_window'] - balance:.4f} is lost to load drift. Median call "
        f"{1000 * median_s:.2f} ms: speed bonus +{speed:.2f}, slowness penalty -{penalty:.2f} "
        f"(calls over {1000 * sim.SLOW_S:.0f} ms are penalised, {1000 * sim.SPEED_REF_S / sim.SPEED_CAP:.0f} ms "
        f"or less earns the full +{sim.SPEED_WEIGHT * sim.SPEED_CAP:.0f}). Score = "
        f"{sim.BALANCE_WEIGHT:.0f} * balancedness + bonus - penalty = {total:.3f}."
    )
    return {"score": total, "metrics": metrics, "artifacts": {"hint": hint}}


def main(argv: list[str]) -> int:
    """`python evaluator.py PROGRAM [SPLIT ...]`: evaluate + score, print JSON lines."""
    if not argv:
        print(main.__doc__, file=sys.stderr)
        return 2
    for split in argv[1:] or list(sim.SPLITS):
        t0 = time.perf_counter()
        result = evaluate(argv[0], split)
        t1 = time.perf_counter()
        scored = score(result["outputs"], split) if "outputs" in result else result
        t2 = time.perf_counter()
        print(json.dumps({"split": split, "score": scored.get("score"), "metrics": scored.get("metrics"),
                          "error": scored.get("artifacts", {}).get("error"),
                          "evaluate_s": round(t1 - t0, 3), "score_s": round(t2 - t1, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
