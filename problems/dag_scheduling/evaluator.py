"""Evaluator for heterogeneous DAG scheduling (real WfInstances workflows, makespan / CP bound).

Two halves with different trust. `evaluate()` runs inside the sandbox: it
sends every workflow of the split, with the platform, to the candidate's
schedule() in the candidate's own confined process (the kit's proxy; one
round trip for the whole split), checks each answer for an early, precise
error, and reports the schedules. `score()` runs in a clean process that
never imports the candidate: it reloads the workflows, re-checks every
schedule (each task once, on an existing processor, after its parents) and
replays it in the trusted simulator (dag_sim.simulate), so a candidate that
patches this module or the simulator in memory gains nothing.
"""

from __future__ import annotations

import math

import dag_sim as sim  # the simulator next to this file

from evaluators import kit


def _checked(workflows: list, schedules: list, n_procs: int) -> list[list[tuple[int, int]]]:
    """Each schedule as checked (task, processor) pairs, or kit.Invalid naming the workflow."""
    out = []
    for wf, raw in zip(workflows, schedules, strict=True):
        try:
            out.append(sim.check_schedule(raw, wf, n_procs))
        except kit.Invalid as e:
            raise kit.Invalid(f"workflow {wf.name}: {e}") from None
    return out


def _schedule_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: one schedule() call per workflow of the split, all in one round trip."""
    workflows = sim.load_workflows(split)
    plat = sim.platform()
    raws = fn.map([(wf.as_arg(), sim.platform()) for wf in workflows])
    checked = _checked(workflows, raws, len(plat["speed"]))
    schedules = [[[t, p] for t, p in s] for s in checked]
    return {"schedules": schedules}, {"workflows": len(workflows)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _schedule_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each schedule and replay it in the simulator."""
    workflows = sim.load_workflows(split)
    plat = sim.platform()
    if not isinstance(outputs, dict) or not isinstance(outputs.get("schedules"), list):
        raise kit.Invalid("outputs must be a dict with a 'schedules' list")
    if len(outputs["schedules"]) != len(workflows):
        raise kit.Invalid(
            f"expected {len(workflows)} schedules (one per workflow), got {len(outputs['schedules'])}"
        )
    checked = _checked(workflows, outputs["schedules"], len(plat["speed"]))
    metrics: dict[str, float] = {}
    logs, slrs, speedups, work_ratios, parts = [], [], [], [], []
    for wf, sched in zip(workflows, checked, strict=True):
        res = sim.simulate(wf, sched, plat)
        span, cp = res["makespan"], sim.cp_bound(wf, plat)
        slr = span / cp
        wr = span / sim.work_bound(wf, plat)
        slrs.append(slr)
        logs.append(math.log(slr))
        speedups.append(sim.sequential_time(wf, plat) / span)
        work_ratios.append(wr)
        metrics[f"slr_{wf.slug}"] = slr
        metrics[f"makespan_s_{wf.slug}"] = span
        parts.append(
            f"{wf.slug}: makespan {span:.2f} s, {slr:.3f} x CP bound {cp:.2f} s, "
            f"{wr:.3f} x work bound, {res['comm_s']:.1f} s of transfers"
        )
    ratio = math.exp(sum(logs) / len(logs))
    metrics = {
        "makespan_ratio": ratio,
        "mean_slr": sum(slrs) / len(slrs),
        "speedup": sum(speedups) / len(speedups),
        "work_ratio": sum(work_ratios) / len(work_ratios),
        **metrics,
    }
    hint = (
        "; ".join(parts) + ". CP bound = longest path of runtime / fastest speed; work bound = "
        "total runtime / total speed (no schedule beats either). makespan_ratio is the geometric "
        "mean of makespan / CP bound."
    )
    return {"score": -ratio, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, list(sim.SPLITS)))
