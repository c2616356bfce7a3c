"""Evaluator for llm_serving_modular: the llm_serving scheduler as three evolving modules.

The benchmark is llm_serving's (problem.toml's `include`): its splits, traces, private
windows and lengths under a run's data seed, the state a policy sees and the SLO metrics
(../llm_serving/serving_workloads.py), on its simulator (../llm_serving/serving_sim.py).
What differs is the decision: the candidate's policy package (policy/__init__.py, fixed,
composing policy/admission.py, policy/batching.py and policy/eviction.py) returns a plan
and the requests it preempts, and the server runs exactly that (preemption.py) instead of
llm_serving's fixed preemption rule.

Two halves with different trust, as in llm_serving. `evaluate()` runs in the sandbox: it
steps the simulator and, before every iteration, calls the candidate's schedule(state) in
its own confined process; it checks each decision (for an early, precise error) and logs
it. `score()` runs in a clean process that never imports the candidate: it rebuilds the
scenarios from the data files and replays every logged decision through a fresh server,
re-checking each one, and computes the metrics. Patching the simulator or this module in
the candidate's process changes nothing but its own log.
"""

from __future__ import annotations

import preemption  # the server with the policy's preemptions, next to this file

from evaluators import kit

sim = kit.include(__file__, "../llm_serving/serving_sim.py")
work = kit.include(__file__, "../llm_serving/serving_workloads.py")

SPLITS = work.SPLITS


def make_scenarios(split: str) -> list:
    """The split's scenarios, from this problem's data/ (llm_serving's files, copied)."""
    return work.make_scenarios(__file__, split)


def perf_model() -> sim.PerfModel:
    return work.perf_model(__file__)


def _run(schedule, split: str) -> tuple[dict, dict]:
    """Sandbox side: every scenario's decision log."""
    scenarios = make_scenarios(split)
    logs = work.run_policy(schedule, scenarios, perf_model(), preemption.Server)
    return {"plans": logs}, {
        "scenarios": len(scenarios),
        "iterations": sum(map(len, logs)),
    }


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _run)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: replay every decision log through a fresh server and score it."""
    return work.judge(outputs, make_scenarios(split), perf_model(), preemption.replay)


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, SPLITS))
