"""Evaluator for spot_scheduling: finish a 48 h job before its deadline at the lowest cost, in one zone.

Only the benchmark is here: the traces, splits and start windows, and what
decide(state) may return. The simulator (one zone is its single-region case),
the run loop and the trusted replay live in spot_sim.py, shared with
spot_multi_region. Two halves with different trust: `evaluate()` runs in the
sandbox next to the candidate and only logs its decisions; `score()` runs in a
clean process that never imports the candidate, rebuilds the scenarios from the
trace files and replays every log through a fresh simulator. A candidate that
patches the simulator or this module in memory changes nothing but its own log.
"""

from __future__ import annotations

from evaluators import kit

sim = kit.include(__file__, "spot_sim.py")

GAP_S = 600
WINDOWS_PER_TRACE = 30
TRACE_DIR = "aws-10-26-2022"  # under the data folder
INSTANCES = ("k80_1", "k80_8", "v100_1", "v100_8")  # 1 or 8 K80 / V100 GPUs per instance
# split -> (availability zone whose traces it uses, public seed of the start windows; a run
# draws them, and its own traces resampled from the zone's, under its private seed: kit.seed)
SPLITS: dict[str, tuple[str, int]] = {
    "train": ("us-west-2a", 2610),
    "test": ("us-west-2b", 2611),  # held out: the other zone's traces
}


def make_scenarios(split: str) -> list:
    """Every (trace, start window, deadline, restart overhead) of a split, in a fixed order."""
    zone, seed = sim.setting(SPLITS, split)
    groups = []
    for instance in INSTANCES:
        avail = sim.load_trace(kit.data_path(__file__, TRACE_DIR, f"{zone}_{instance}.json"), GAP_S)
        if kit.private_data():  # a run's own traces, drawn from the public one's spells
            avail = sim.resample(avail, kit.seed(seed, "trace", instance))
        groups.append(sim.Group(f"{zone}_{instance}", (zone,), (avail,), 0, len(avail)))
    return sim.make_scenarios(groups, GAP_S, WINDOWS_PER_TRACE, kit.seed(seed))


def parse(action: object, zone: int, spot: tuple, zones: tuple) -> tuple[str, int] | str:
    """decide() returns 'SPOT' (only while state.has_spot), 'ON_DEMAND' or 'NONE'."""
    if type(action) is not str or action not in sim.ACTIONS:
        return (f"decide() returned {action!r:.100} ({type(action).__name__}); "
                "expected one of 'SPOT', 'ON_DEMAND', 'NONE'")
    if action == sim.SPOT and not spot[zone]:
        return ("decide() returned SPOT while spot is not available (state.has_spot is False); "
                "only ON_DEMAND or NONE are possible then")
    return action, zone


BENCHMARK = sim.Benchmark(
    make_scenarios, parse, sim.State,
    reference="NSDI'24's Uniform Progress saves 27-84% vs on-demand; ADRS evolved policies "
    "about 7% cheaper than Uniform Progress.",
)


evaluate = BENCHMARK.evaluate  # the sandbox side, next to the candidate
score = BENCHMARK.score  # the trusted side, in a clean process


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, SPLITS))
