"""Evaluator for LLM-SQL prefix reuse (order rows and fields for the prefix cache).

Two halves with different trust. `evaluate()` runs inside the sandbox: it
calls plan_table(columns, data, groups) in the candidate's own, confined
process (the kit's proxy), once per table of the split, times each call on
its own clock (the evaluator's process, which the candidate cannot reach),
checks each plan (for an early, precise error) and reports the plans and the
times. `score()` runs in a clean process that never imports the candidate: it
reloads the tables, re-checks every plan and serialises the rows itself to
count the prefix hits, so a candidate that patches this module or the
simulator in memory gains nothing.
"""

from __future__ import annotations

import math
import time

import prefix_sim as sim  # the simulator next to this file

from evaluators import kit


def _plan_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: one timed call per table of the split."""
    ready = getattr(fn, "ready", None)
    if ready is not None:
        ready()  # the program (and pandas) is imported before any clock starts
    plans, seconds = [], []
    for table in sim.tables(split):
        columns, data = list(table.columns), [list(col) for col in table.data]  # private copies
        groups = [list(g) for g in table.groups]
        t0 = time.perf_counter()
        raw = fn(columns, data, groups)
        dt = time.perf_counter() - t0
        rows, orders, which = sim.check_plan(raw, table)
        plans.append({"table": table.name, "seconds": dt, **sim.pack(rows, orders, which)})
        seconds.append(f"{table.name}: {dt:.3f}")
    return {"plans": plans}, {"plan_s": ", ".join(seconds)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "plan_table", _plan_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each plan, serialise it, count the prefix hits."""
    tables = sim.tables(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("plans"), list):
        raise kit.Invalid("outputs must be a dict with a 'plans' list")
    if len(outputs["plans"]) != len(tables):
        raise kit.Invalid(
            f"expected {len(tables)} plans (one per table), got {len(outputs['plans'])}"
        )
    metrics: dict[str, float] = {}
    rates, times, parts = [], [], []
    for table, plan in zip(tables, outputs["plans"], strict=True):
        rows, orders, which = sim.unpack(plan, table)
        seconds = plan.get("seconds")
        if type(seconds) not in (int, float) or not math.isfinite(seconds) or seconds < 0:
            raise kit.Invalid(
                f"table {table.name!r}: 'seconds' must be a finite, non-negative time"
            )
        hits, total = sim.prefix_hits(sim.serialise(table, rows, orders, which))
        rate = hits / total if total else 0.0
        metrics[f"hit_rate_{table.name}"] = rate
        metrics[f"runtime_s_{table.name}"] = float(seconds)
        rates.append(rate)
        times.append(float(seconds))
        parts.append(
            f"{table.name} {rate:.4f} in {seconds:.2f} s ({len(orders)} distinct field orders)"
        )
    hit_rate, runtime_s = sum(rates) / len(rates), sum(times) / len(times)
    total = sim.combined_score(hit_rate, runtime_s)
    metrics.update(hit_rate=hit_rate, runtime_s=runtime_s)
    hint = (
        f"hit rate {hit_rate:.4f} (mean over tables): " + "; ".join(parts) + ". "
        f"Score = 0.95 * {hit_rate:.4f} + 0.05 * (12 - min(12, {runtime_s:.2f} s)) / 12 = {total:.4f}: "
        "+0.01 of hit rate is worth +0.0095, one second less per table +0.0042."
    )
    return {"score": total, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
