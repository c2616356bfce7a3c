"""Evaluator for dag_modular: dag_scheduling's workflows and simulator, with a program of
two evolving modules (policy/ordering.py, policy/mapping.py) composed by a fixed
policy/__init__.py.

The simulator, the workflows' splits, their private held-out variants and the score are
dag_scheduling's (../dag_scheduling/dag_sim.py, problem.toml's `include`), so the same
schedule scores the same here and there. Two halves with different trust: `evaluate()`
runs in the sandbox and calls the tree's schedule() in the candidate's own confined process
(one round trip for the whole split); the composer checks each decision as it is made, and
a broken one comes back as one line naming the module, the workflow and the step.
`score()` runs in a clean process that never imports the candidate: it reloads the
workflows, re-checks every schedule and replays it in dag_sim.simulate.
"""

from __future__ import annotations

from evaluators import kit

sim = kit.include(__file__, "../dag_scheduling/dag_sim.py")

DECISION_ERROR = "DecisionError"  # what policy/__init__.py raises for a broken decision


def _schedule_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: one schedule() call per workflow of the split, all in one round trip."""
    workflows = sim.load_workflows(split, __file__)
    plat = sim.platform()
    try:
        raws = fn.map([(wf.as_arg(), sim.platform()) for wf in workflows])
    except kit.CandidateError as e:
        at = e.call_index
        if (
            type(e).__name__ != DECISION_ERROR
            or not isinstance(at, int)
            or not 0 <= at < len(workflows)
        ):
            raise
        raise kit.Invalid(f"workflow {workflows[at].name}: {e}") from None
    checked = sim.checked_schedules(workflows, raws, len(plat["speed"]))
    schedules = [[[t, p] for t, p in s] for s in checked]
    return {"schedules": schedules}, {"workflows": len(workflows)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _schedule_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each schedule and replay it in the simulator (dag_sim.judge)."""
    return sim.judge(outputs, sim.load_workflows(split, __file__))


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, list(sim.SPLITS)))
