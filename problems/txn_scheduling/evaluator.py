"""Evaluator for transaction scheduling (minimise makespan).

Two halves with different trust. `evaluate()` runs inside the sandbox next to
the candidate: it calls schedule(txns) once per workload of the split, checks
that each answer is a permutation (for an early, precise error) and reports
the orders. `score()` runs in a clean process that never imports the
candidate: it reloads the workloads, re-checks every order and replays it in
the trusted cost model (txn_sim.makespan), so a candidate that patches this
module or the simulator in memory gains nothing.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import txn_sim as sim  # noqa: E402  (the simulator next to this file)

_module_ids = itertools.count()


def _load_policy(program_path: str):
    """Import the candidate by path and return its schedule function."""
    name = f"_txn_candidate_{next(_module_ids)}"
    spec = importlib.util.spec_from_file_location(name, program_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {program_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "schedule", None)
    if not callable(fn):
        raise sim.BadOrder("the program defines no callable schedule(txns)")
    return fn


def evaluate(program_path: str, split: str) -> dict:
    """Sandbox side: ask the candidate for one order per workload of the split."""
    t0 = time.perf_counter()
    workloads = sim.make_workloads(split)
    orders, seconds = [], []
    try:
        fn = _load_policy(program_path)
        for name, txns in workloads:
            t = time.perf_counter()
            raw = fn([list(ops) for ops in txns])  # a private copy per call
            seconds.append(time.perf_counter() - t)
            try:
                orders.append(sim.check_order(raw, len(txns)))
            except sim.BadOrder as e:
                raise sim.BadOrder(f"workload {name!r}: {e}") from None
    except sim.BadOrder as e:
        return {"valid": False, "artifacts": {"error": str(e)}}
    return {
        "outputs": {"orders": orders},
        "artifacts": {
            "split": split,
            "schedule_s": ", ".join(f"{n}: {s:.3f}" for (n, _), s in zip(workloads, seconds, strict=True)),
            "evaluate_s": f"{time.perf_counter() - t0:.3f}",
        },
    }


def score(outputs: dict, split: str) -> dict:
    """Trusted side: re-check each order and replay it in the cost model."""
    workloads = sim.make_workloads(split)
    try:
        if not isinstance(outputs, dict) or not isinstance(outputs.get("orders"), list):
            raise sim.BadOrder("outputs must be a dict with an 'orders' list")
        reported = outputs["orders"]
        if len(reported) != len(workloads):
            raise sim.BadOrder(f"expected {len(workloads)} orders (one per workload), got {len(reported)}")
        orders = []
        for (name, txns), order in zip(workloads, reported, strict=True):
            try:
                orders.append(sim.check_order(order, len(txns)))
            except sim.BadOrder as e:
                raise sim.BadOrder(f"workload {name!r}: {e}") from None
    except sim.BadOrder as e:
        return {"valid": False, "artifacts": {"error": str(e)}}
    metrics: dict[str, float] = {}
    total = bound = longest = 0
    parts = []
    for (name, txns), order in zip(workloads, orders, strict=True):
        span = sim.makespan(txns, order)
        lo_len, lo_key = sim.lower_bounds(txns)
        metrics[f"makespan_{name}"] = span
        total += span
        bound += max(lo_len, lo_key)
        longest += lo_len
        parts.append(f"{name} {span} (bound {max(lo_len, lo_key)})")
    metrics.update(makespan_total=total, lower_bound_total=bound, longest_txn_total=longest,
                   gap_pct=100.0 * (total - bound) / bound if bound else 0.0)
    hint = (f"total makespan {total} = " + ", ".join(parts) + ". Lower bounds: the longest transaction, "
            "or a key's write count (+1 if it is also read), whichever is larger; they need not be reachable.")
    return {"score": -float(total), "metrics": metrics, "artifacts": {"hint": hint}}


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
