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

import dag_sim as sim  # the simulator next to this file

from evaluators import kit


def _schedule_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: one schedule() call per workflow of the split, all in one round trip."""
    workflows = sim.load_workflows(split)
    plat = sim.platform()
    raws = fn.map([(wf.as_arg(), sim.platform()) for wf in workflows])
    checked = sim.checked_schedules(workflows, raws, len(plat["speed"]))
    schedules = [[[t, p] for t, p in s] for s in checked]
    return {"schedules": schedules}, {"workflows": len(workflows)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _schedule_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each schedule and replay it in the simulator (dag_sim.judge)."""
    return sim.judge(outputs, sim.load_workflows(split))


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, list(sim.SPLITS)))
