"""Evaluator for llm_serving: batch scheduling on one continuous-batching LLM server.

Two halves with different trust. `evaluate()` runs inside the sandbox: it steps
the simulator (serving_sim.py) and, before every iteration, calls the
candidate's schedule(state) in the candidate's own confined process (the kit's
proxy); the scenarios of a split advance side by side, one round trip per
iteration. It validates each plan (for an early, precise error) and logs it.
`score()` runs in a clean process that never imports the candidate: it rebuilds
the scenarios from the data files and replays every logged plan through a fresh
simulator, re-validating each one, and computes the SLO metrics. A candidate
that patches the simulator or this module in memory changes nothing but its own
log; one that logs a plan the rules forbid is invalid.

The benchmark itself (splits, traces, private windows and lengths, the state, the
run loop, the metrics) is serving_workloads.py, shared with llm_serving_modular.
"""

from __future__ import annotations

from evaluators import kit

sim = kit.include(__file__, "serving_sim.py")  # the simulator next to this file
work = kit.include(__file__, "serving_workloads.py")  # the benchmark on it

# The benchmark's settings, under the names this problem always had.
PERF_FILE, TRACES, SEEDS = work.PERF_FILE, work.TRACES, work.SEEDS
PREDICTION_SIGMA, SPLITS, State = work.PREDICTION_SIGMA, work.SPLITS, work.State
WINDOW_SEED, WINDOW_BAND, PUBLIC_WINDOWS = work.WINDOW_SEED, work.WINDOW_BAND, work.PUBLIC_WINDOWS
LENGTH_SEED, LENGTH_BIN = work.LENGTH_SEED, work.LENGTH_BIN
private_starts, private_lengths, summarize = (
    work.private_starts,
    work.private_lengths,
    work.summarize,
)


def perf_model() -> sim.PerfModel:
    return work.perf_model(__file__)


def _trace(name: str) -> tuple:
    return work.read_trace(__file__, name)


def make_scenarios(split: str) -> list:
    """The split's scenarios, from this problem's data (serving_workloads.make_scenarios)."""
    return work.make_scenarios(__file__, split)


def run_policy(schedule, scenarios: list, perf: sim.PerfModel) -> list[list[str]]:
    """Each scenario's plan log, schedule() called before every iteration."""
    return work.run_policy(schedule, scenarios, perf)


def _run(schedule, split: str) -> tuple[dict, dict]:
    """Sandbox side: the plan logs of every scenario of the split."""
    scenarios = make_scenarios(split)
    logs = run_policy(schedule, scenarios, perf_model())
    return {"plans": logs}, {
        "scenarios": len(scenarios),
        "iterations": sum(map(len, logs)),
    }


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "schedule", _run)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: replay every plan log through a fresh simulator and score it."""
    return work.judge(outputs, make_scenarios(split), perf_model())


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, SPLITS))
