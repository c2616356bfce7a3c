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

import time

import txn_sim as sim  # the simulator next to this file

from evaluators import kit


def _checked(workloads: list, orders: list) -> list[list[int]]:
    """Each order as a permutation of its workload's indices, or kit.Invalid naming the workload."""
    checked = []
    for (name, txns), order in zip(workloads, orders, strict=True):
        try:
            checked.append(sim.check_order(order, len(txns)))
        except kit.Invalid as e:
            raise kit.Invalid(f"workload {name!r}: {e}") from None
    return checked


def _schedule_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: ask the candidate for one order per workload of the split."""
    orders, seconds = [], []
    for name, txns in sim.make_workloads(split):
        t = time.perf_counter()
        raw = fn([list(ops) for ops in txns])  # a private copy per call
        seconds.append(f"{name}: {time.perf_counter() - t:.3f}")
        orders += _checked([(name, txns)], [raw])
    return {"orders": orders}, {"schedule_s": ", ".join(seconds)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _schedule_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each order and replay it in the cost model."""
    workloads = sim.make_workloads(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("orders"), list):
        raise kit.Invalid("outputs must be a dict with an 'orders' list")
    if len(outputs["orders"]) != len(workloads):
        raise kit.Invalid(f"expected {len(workloads)} orders (one per workload), got {len(outputs['orders'])}")
    metrics: dict[str, float] = {}
    total = bound = longest = 0
    parts = []
    for (name, txns), order in zip(workloads, _checked(workloads, outputs["orders"]), strict=True):
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


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
