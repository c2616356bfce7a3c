"""Evaluator for spot_multi_region: finish a 48 h job before its deadline at the lowest cost,
choosing among several availability zones.

Only the benchmark is here: the zone subsets, splits and start windows, and
what decide(state) may return. The simulator, the run loop and the trusted
replay live in ../spot_scheduling/spot_sim.py (problem.toml's `include`), shared
with spot_scheduling. Two halves with different trust: `evaluate()` runs in the
sandbox next to the candidate and only logs its decisions; `score()` runs in a
clean process that never imports the candidate, rebuilds the scenarios from the
trace files and replays every log through a fresh simulator. A candidate that
patches the simulator or this module in memory changes nothing but its own log.
"""

from __future__ import annotations

from evaluators import kit

sim = kit.include(__file__, "../spot_scheduling/spot_sim.py")

GAP_S = 195
WINDOWS_PER_SUBSET = 8
TRACE_DIR = "aws-02-15-2023"  # under the data folder; V100 (p3.2xlarge), 9 zones
# The zone subsets of the ADRS multi-region evaluator; zone 0 is where every job starts.
SUBSETS: dict[str, tuple[str, ...]] = {
    "2_zones_same_region": ("us-east-1a", "us-east-1c"),
    "2_regions_east_west": ("us-east-2a", "us-west-2a"),
    "3_regions_diverse": ("us-east-1a", "us-east-2b", "us-west-2c"),
    "3_zones_same_region": ("us-east-1a", "us-east-1c", "us-east-1d"),
    "5_regions_high_diversity": ("us-east-1a", "us-east-1f", "us-west-2a", "us-west-2b", "us-east-2b"),
    "all_9_regions": ("us-east-2a", "us-west-2c", "us-east-1d", "us-east-2b", "us-west-2a",
                      "us-east-1f", "us-east-1a", "us-west-2b", "us-east-1c"),
}
ZONES = tuple(sorted({z for zs in SUBSETS.values() for z in zs}))
# split -> (first tick, end tick) that its windows lie in, and the public seed of the start
# windows (a run draws them, and its own traces resampled from that stretch of the zones',
# under its private seed: kit.seed).
# The traces hold 20,158 ticks (45.5 days); train sees days 0-24.8, test days 24.8-45.5.
SPLIT_TICK = 11_000
SPLITS: dict[str, tuple[int, int | None, int]] = {
    "train": (0, SPLIT_TICK, 1502),
    "test": (SPLIT_TICK, None, 1503),  # held out: later time windows
}


def _private_traces(traces: dict[str, bytes], lo: int, hi: int, seed: int) -> dict[str, bytes]:
    """Ticks [lo, hi) of every zone's trace resampled under the run's seed, region by region
    (the zones of a region lose spot together: sim.resample_together)."""
    out: dict[str, bytes] = {}
    for region in sorted({z[:-1] for z in traces}):
        zones = [z for z in sorted(traces) if z[:-1] == region]
        seeds = [kit.seed(seed, "region", region)] + [kit.seed(seed, "trace", z) for z in zones]
        out.update(zip(zones, sim.resample_together([traces[z][lo:hi] for z in zones], seeds),
                       strict=True))  # fmt: skip
    return out


def make_scenarios(split: str) -> list:
    """Every (zone subset, start window, deadline, restart overhead) of a split, in a fixed order."""
    lo, end, seed = sim.setting(SPLITS, split)
    traces = {z: sim.load_trace(kit.data_path(__file__, TRACE_DIR, f"{z}_v100_1.json"), GAP_S)
              for z in ZONES}
    hi = min(len(t) for t in traces.values()) if end is None else end  # the traces are aligned
    if kit.private_data():  # a run's own traces, drawn from the split's stretch of the public ones
        traces, lo, hi = _private_traces(traces, lo, hi, seed), 0, hi - lo
    groups = [sim.Group(name, zones, tuple(traces[z] for z in zones), lo, hi)
              for name, zones in SUBSETS.items()]
    return sim.make_scenarios(groups, GAP_S, WINDOWS_PER_SUBSET, kit.seed(seed))


_EXPECTED = ("expected 'SPOT', 'ON_DEMAND' or 'NONE' (in the current zone) or a pair "
             "(action, zone index)")


def parse(action: object, zone: int, spot: tuple, zones: tuple) -> tuple[str, int] | str:
    """decide() returns an action for the current zone or a pair (action, zone index);
    SPOT only in a zone whose state.spot entry is True."""
    if type(action) is str:
        if action not in sim.ACTIONS:
            return f"decide() returned {action!r:.60}; {_EXPECTED}"
    elif type(action) in (tuple, list) and len(action) == 2:
        pair, (action, zone) = action, action
        if type(action) is not str or action not in sim.ACTIONS:
            return f"decide() returned {pair!r:.80}: its action must be 'SPOT', 'ON_DEMAND' or 'NONE'"
        if type(zone) is not int or not 0 <= zone < len(zones):
            return (f"decide() returned {pair!r:.80}: its zone must be an int in "
                    f"0..{len(zones) - 1} (this scenario has {len(zones)} zones)")
    else:
        return f"decide() returned {action!r:.100} ({type(action).__name__}); {_EXPECTED}"
    if action == sim.SPOT and not spot[zone]:
        return (f"decide() asked for SPOT in zone {zone} ({zones[zone]}) while spot is not "
                f"available there (state.spot[{zone}] is False); use a zone whose state.spot "
                "entry is True, ON_DEMAND or NONE")
    return action, zone


BENCHMARK = sim.Benchmark(
    make_scenarios, parse, sim.ZoneState,
    reference="The ADRS paper reports evolved multi-region policies about 26% cheaper than its "
    "baseline.",
)


evaluate = BENCHMARK.evaluate  # the sandbox side, next to the candidate
score = BENCHMARK.score  # the trusted side, in a clean process


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, SPLITS))
