"""Evaluator for telemetry repair (ADRS case study, HotNets'24 input validation).

Two halves with different trust. `evaluate()` runs inside the sandbox next to
the candidate: it calls run_repair(telemetry, topology) once per task of the
split, checks each reply's shape (for an early, precise error) and forwards
only [repaired, confidence] per field. `score()` runs in a clean process that
never imports the candidate: it rebuilds the tasks (the ground truth never
leaves this side), re-checks every reply and scores it, so a candidate that
patches this module or the simulator in memory gains nothing.
"""

from __future__ import annotations

import copy
import time

import telemetry_score as ts  # the score, next to this file
import telemetry_sim as sim  # the data and the fault injector

from evaluators import kit


def _repair_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: one repair per task; the candidate sees telemetry and topology only."""
    repairs = []
    t = time.perf_counter()
    for inst in sim.make_instances(split):
        reply = fn(copy.deepcopy(inst.telemetry), copy.deepcopy(inst.topology))
        repairs.append(sim.check_repair(reply, inst, width=3))
    return {"repairs": repairs}, {"repair_s": f"{time.perf_counter() - t:.3f}"}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "run_repair", _repair_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each task's repairs against the rebuilt tasks and score them."""
    instances = sim.make_instances(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("repairs"), list):
        raise kit.Invalid("outputs must be a dict with a 'repairs' list")
    if len(outputs["repairs"]) != len(instances):
        raise kit.Invalid(
            f"expected {len(instances)} repairs (one per task), got {len(outputs['repairs'])}"
        )
    per_task = []
    by_bug: dict[str, list[float]] = {}
    for inst, reply in zip(instances, outputs["repairs"], strict=True):
        scores = ts.task_scores(sim.check_repair(reply, inst, width=2), inst.truth)
        per_task.append(scores)
        by_bug.setdefault(inst.bug_type, []).append(scores["combined_score"])
    metrics = {key: ts.mean([s[key] for s in per_task]) for key in per_task[0]}
    metrics.update({f"combined_{bug}": ts.mean(v) for bug, v in sorted(by_bug.items())})
    metrics["tasks"] = len(per_task)
    worst = min(range(len(per_task)), key=lambda i: per_task[i]["combined_score"])
    hint = (f"combined = 0.75 counter {metrics['counter_repair_accuracy']:.4f} + 0.05 status "
            f"{metrics['status_repair_accuracy']:.4f} + 0.2 calibration {metrics['confidence_calibration']:.4f}"
            f" = {metrics['combined_score']:.4f} over {len(per_task)} tasks; by fault: "
            + ", ".join(f"{b} {ts.mean(v):.4f}" for b, v in sorted(by_bug.items()))
            + f". Worst task: {instances[worst].name} {per_task[worst]['combined_score']:.4f}.")  # fmt: skip
    return {"score": metrics["combined_score"], "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
