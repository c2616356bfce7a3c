"""Evaluator for spot_multi_region: finish a 48 h job before its deadline at the lowest cost,
choosing among several availability zones.

Two halves with different trust. `evaluate()` runs inside the sandbox next to
the candidate: it steps every scenario tick by tick, calls the candidate's
decide(state) once per tick and only reports the decisions, one run-length
encoded log per scenario. `score()` runs in a clean process that never imports
the candidate: it rebuilds the scenarios from the trace files, replays each log
through a fresh simulator and computes cost, deadline misses and validity
itself. A candidate that patches the simulator or this module in memory
therefore changes nothing but its own log, and the log is judged on replay.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
import time
from collections import defaultdict

import numpy as np

_HERE = os.path.dirname(os.path.abspath(__file__))
_ids = itertools.count()


def _load_simulator():
    """simulator.py next to this file, imported by path (evaluators cannot import packages)."""
    name = f"_spot_multi_region_simulator_{next(_ids)}"
    spec = importlib.util.spec_from_file_location(name, os.path.join(_HERE, "simulator.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


sim = _load_simulator()
SPOT, ON_DEMAND, NONE = sim.SPOT, sim.ON_DEMAND, sim.NONE

# --- the benchmark: the ADRS multi-region Can't Be Late setting ---------------------------
WORK_H = 48
DEADLINES_H = (52, 70)
OVERHEADS_H = (0.05, 0.2)
WINDOWS_PER_SUBSET = 8
GAP_S = 195
TRACE_DIR = "spot/aws-02-15-2023"  # under the data directory; V100 (p3.2xlarge), 9 zones
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
# split -> (first tick, end tick) that its windows lie in, and the seed of the start windows.
# The traces hold 20,158 ticks (45.5 days); train sees days 0-24.8, test days 24.8-45.5.
SPLIT_TICK = 11_000
SPLITS: dict[str, tuple[int, int | None, int]] = {
    "train": (0, SPLIT_TICK, 1502),
    "test": (SPLIT_TICK, None, 1503),  # held out: later time windows
}
REPEAT_CHECKS = 4  # scenarios re-run at the end to check decide() is repeatable

_trace_cache: dict[str, bytes] = {}


def data_dir() -> str:
    """$EVOLVE_DATA_DIR (set by the controller), else the development checkout's ../shared/data."""
    env = os.environ.get("EVOLVE_DATA_DIR")
    return env if env else os.path.normpath(os.path.join(_HERE, "..", "..", "..", "shared", "data"))


def load_trace(zone: str) -> bytes:
    """Availability per tick of one zone's V100 trace; 1 = spot available.

    The files store 1 for a tick where the instance was preempted / could not
    be obtained and 0 where it was available (the NSDI'24 simulator reads
    `available = not data[tick]`).
    """
    path = os.path.join(data_dir(), TRACE_DIR, f"{zone}_v100_1.json")
    if path not in _trace_cache:
        try:
            with open(path, encoding="utf-8") as f:
                raw = json.load(f)
        except FileNotFoundError:
            raise FileNotFoundError(
                f"{path}: spot trace missing; set EVOLVE_DATA_DIR to the data directory "
                "(the controller downloads it from the URL in problem.toml)"
            ) from None
        gap, data = int(raw["metadata"]["gap_seconds"]), raw["data"]
        if gap != GAP_S or not all(type(v) is int and v >= 0 for v in data):
            raise ValueError(f"{path}: expected gap_seconds {GAP_S} and integer samples")
        _trace_cache[path] = bytes(1 if v == 0 else 0 for v in data)
    return _trace_cache[path]


def window_starts(lo: int, hi: int, seed: int, index: int) -> list[int]:
    """WINDOWS_PER_SUBSET distinct, sorted start ticks in [lo, hi]."""
    rng = np.random.default_rng([seed, index])
    return sorted((lo + rng.choice(hi - lo + 1, size=WINDOWS_PER_SUBSET, replace=False)).tolist())


def make_scenarios(split: str) -> list:
    """Every (zone subset, start window, deadline, restart overhead) of a split, in a fixed order."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(SPLITS)}")
    lo, end, seed = SPLITS[split]
    traces = {z: load_trace(z) for z in ZONES}
    n = min(len(t) for t in traces.values())  # the traces are aligned
    need = -(-max(DEADLINES_H) * 3600 // GAP_S)
    hi = (n if end is None else end) - need
    scenarios = []
    for i, (subset, zones) in enumerate(SUBSETS.items()):
        for start in window_starts(lo, hi, seed, i):
            window = tuple(traces[z][start:start + need] for z in zones)
            for deadline, overhead in itertools.product(DEADLINES_H, OVERHEADS_H):
                scenarios.append(sim.Scenario(
                    name=f"{subset} start_tick={start} deadline={deadline}h overhead={overhead}h",
                    zones=zones, avail=window, gap_s=GAP_S, work_s=WORK_H * 3600,
                    deadline_s=deadline * 3600, overhead_s=round(overhead * 3600),
                ))
    return scenarios


def _group(sc) -> str:
    """The scenario's zone subset, deadline and overhead: everything but the start window."""
    subset, _, rest = sc.name.split(" ", 2)
    return f"{subset} {rest}"


# --- sandbox side ---------------------------------------------------------------------------
class State:
    """What decide() sees at one tick; times in hours, prices in $/hour.

    Writing to it changes nothing in the simulation. `memory` is a dict that
    persists across the ticks of one scenario (a fresh one per scenario).
    """

    __slots__ = (
        "tick", "elapsed", "gap", "deadline", "time_left", "work_total", "work_done",
        "work_left", "restart_overhead", "overhead_left", "has_spot", "current", "zone",
        "zones", "n_zones", "spot", "spot_price", "on_demand_price", "memory",
    )

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__ if k != "memory")
        return f"State({fields})"


class BadDecision(ValueError):
    """decide() returned something the simulator cannot use."""


class PolicyError(RuntimeError):
    """decide() raised; the message names the scenario and tick."""


def _load_decide(program_path: str):
    name = f"_spot_multi_candidate_{next(_ids)}"
    spec = importlib.util.spec_from_file_location(name, program_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {program_path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    fn = getattr(module, "decide", None)
    if not callable(fn):
        raise BadDecision("the program defines no callable decide(state)")
    return fn


_EXPECTED = ("expected 'SPOT', 'ON_DEMAND' or 'NONE' (in the current zone) or a pair "
             "(action, zone index)")


def _parse(action, n_zones: int, zone: int) -> tuple[str, int] | str:
    """(action, zone) from a decide() return, or an error message."""
    if type(action) is str:
        return (action, zone) if action in sim.ACTIONS else f"returned {action!r:.60}; {_EXPECTED}"
    if type(action) in (tuple, list) and len(action) == 2:
        a, z = action
        if type(a) is not str or a not in sim.ACTIONS:
            return f"returned {action!r:.80}: its action must be 'SPOT', 'ON_DEMAND' or 'NONE'"
        if type(z) is not int or not 0 <= z < n_zones:
            return (f"returned {action!r:.80}: its zone must be an int in 0..{n_zones - 1} "
                    f"(this scenario has {n_zones} zones)")
        return a, z
    return f"returned {action!r:.100} ({type(action).__name__}); {_EXPECTED}"


_rows_cache: dict[tuple[bytes, ...], list[tuple[bool, ...]]] = {}


def _spot_rows(sc) -> list[tuple[bool, ...]]:
    """Per tick, a tuple of spot availability per zone (shared by scenarios on the same window)."""
    rows = _rows_cache.get(sc.avail)
    if rows is None:
        rows = [tuple(v == 1 for v in col) for col in zip(*sc.avail, strict=True)]
        _rows_cache.clear()  # keep one window: scenarios of a window are consecutive
        _rows_cache[sc.avail] = rows
    return rows


def run_policy(decide, sc) -> str:
    """Step one scenario to its end, calling decide() every tick; return the decision codes."""
    job = sim.Job(sc)
    rows = _spot_rows(sc)
    st = State()
    st.memory = {}
    n_zones = len(sc.zones)
    codes = []
    while not job.over:
        job.observe()
        spot = rows[job.tick]
        t = job.tick * sc.gap_s
        st.tick, st.elapsed, st.time_left = job.tick, t / 3600, (sc.deadline_s - t) / 3600
        st.work_done, st.work_left = job.done_s / 3600, job.work_left_s / 3600
        st.overhead_left, st.current, st.zone = job.overhead_left_s / 3600, job.current, job.zone
        st.spot, st.has_spot, st.zones, st.n_zones = spot, spot[job.zone], sc.zones, n_zones
        st.gap, st.deadline, st.work_total = sc.gap_s / 3600, sc.deadline_s / 3600, sc.work_s / 3600
        st.restart_overhead = sc.overhead_s / 3600
        st.spot_price, st.on_demand_price = sc.spot_price, sc.on_demand_price
        try:
            action = decide(st)
        except Exception as e:
            raise PolicyError(
                f"decide() raised {type(e).__name__}: {e} (scenario {sc.name}, tick {job.tick})"
            ) from e
        parsed = _parse(action, n_zones, job.zone)
        if isinstance(parsed, str):
            raise BadDecision(f"scenario {sc.name}, tick {job.tick}: decide() {parsed}")
        kind, zone = parsed
        if kind == SPOT and not spot[zone]:
            raise BadDecision(
                f"scenario {sc.name}, tick {job.tick}: decide() asked for SPOT in zone {zone} "
                f"({sc.zones[zone]}) while spot is not available there (state.spot[{zone}] is "
                "False); use a zone whose state.spot entry is True, ON_DEMAND or NONE"
            )
        job.step(kind, zone)
        codes.append(sim.code(kind, zone))
    return "".join(codes)


def _check_repeatable(decide, scenarios: list, codes: list[str]) -> None:
    """Re-run a few scenarios in reverse order: decide() must give the same decisions."""
    picks = np.linspace(0, len(scenarios) - 1, REPEAT_CHECKS).astype(int).tolist()
    for i in reversed(picks):
        again = run_policy(decide, scenarios[i])
        if again != codes[i]:
            k = next((j for j, (a, b) in enumerate(zip(again, codes[i], strict=False)) if a != b),
                     min(len(again), len(codes[i])))
            raise BadDecision(
                f"decide() is not repeatable: re-running scenario {scenarios[i].name} changed "
                f"its decision at tick {k}; it must depend only on `state` and `state.memory` "
                "(no global state across scenarios, no randomness)"
            )


def evaluate(program_path: str, split: str) -> dict:
    """Sandbox side: run the candidate online on every scenario of the split; log its decisions."""
    t0 = time.perf_counter()
    scenarios = make_scenarios(split)
    try:
        decide = _load_decide(program_path)
        codes = [run_policy(decide, sc) for sc in scenarios]
        _check_repeatable(decide, scenarios, codes)
    except BadDecision as e:
        return {"valid": False, "artifacts": {"error": str(e)}}
    return {
        "outputs": {"decisions": [sim.encode(c) for c in codes]},
        "artifacts": {
            "split": split,
            "scenarios": str(len(scenarios)),
            "decisions": str(sum(map(len, codes))),
            "simulate_s": f"{time.perf_counter() - t0:.3f}",
        },
    }


# --- trusted side ---------------------------------------------------------------------------
def _invalid(error: str, **metrics) -> dict:
    return {"valid": False, "metrics": metrics, "artifacts": {"error": error}}


def score(outputs: dict, split: str) -> dict:
    """Trusted side: replay every decision log through a fresh simulator; never imports the candidate."""
    scenarios = make_scenarios(split)
    logs = outputs.get("decisions") if isinstance(outputs, dict) else None
    if not isinstance(logs, list) or len(logs) != len(scenarios):
        got = f"{len(logs)} logs" if isinstance(logs, list) else type(logs).__name__
        return _invalid(f"outputs must be {{'decisions': [one log per scenario]}} with "
                        f"{len(scenarios)} logs; got {got}")
    jobs, misses = [], []
    for i, (sc, text) in enumerate(zip(scenarios, logs, strict=True)):
        try:
            job = sim.replay(sc, sim.decode(text, sc.n_ticks))
        except ValueError as e:
            return _invalid(f"scenario {i} ({sc.name}): {e}")
        if not job.finished:
            misses.append(job)
        jobs.append(job)
    if misses:
        first = misses[0]
        return _invalid(
            f"missed the deadline in {len(misses)} of {len(jobs)} scenarios; any miss fails. "
            f"First: {first.sc.name}: {first.work_left_s / 3600:.3f} h of work left at the deadline "
            f"(spot {first.spot_s / 3600:.1f} h, on-demand {first.od_s / 3600:.1f} h, "
            f"{first.preemptions} preemptions, {first.moves} moves). Switch to ON_DEMAND while "
            "the time left still covers the work left plus one restart overhead.",
            deadline_misses=len(misses), scenarios=len(jobs),
        )
    return _scored(jobs)


def _scored(jobs: list) -> dict:
    costs = np.array([j.cost for j in jobs])
    od = np.array([j.sc.on_demand_cost for j in jobs])
    mean_cost = float(costs.mean())
    savings = 100.0 * (1.0 - mean_cost / float(od.mean()))
    groups: dict[str, list] = defaultdict(list)
    for j in jobs:
        groups[_group(j.sc)].append(j)
    lines = []
    for name, js in groups.items():
        c = float(np.mean([j.cost for j in js]))
        o = float(np.mean([j.sc.on_demand_cost for j in js]))
        spot_share = sum(j.spot_s for j in js) / max(1, sum(j.spot_s + j.od_s for j in js))
        lines.append(
            f"{name}: ${c:.2f}/job ({100 * (1 - c / o):.1f}% below on-demand), "
            f"{100 * spot_share:.0f}% of instance time on spot, "
            f"{np.mean([j.preemptions for j in js]):.1f} preemptions, "
            f"{np.mean([j.moves for j in js]):.1f} moves, "
            f"{np.mean([j.restarts for j in js]):.1f} starts per job"
        )
    worst = sorted(jobs, key=lambda j: j.cost - j.sc.on_demand_cost, reverse=True)[:3]
    hint = (
        f"mean ${mean_cost:.2f} per job vs ${float(od.mean()):.2f} always on-demand "
        f"({savings:.1f}% saved) over {len(jobs)} scenarios. Costliest relative to on-demand: "
        + "; ".join(f"{j.sc.name} ${j.cost:.2f}" for j in worst)
        + ". The ADRS paper reports evolved multi-region policies about 26% cheaper than its "
        "baseline."
    )
    return {
        "score": -mean_cost,
        "metrics": {
            "mean_cost": mean_cost,
            "savings_pct": savings,
            "on_demand_cost": float(od.mean()),
            "deadline_misses": 0,
            "scenarios": len(jobs),
            "spot_hours": float(np.mean([j.spot_s for j in jobs])) / 3600,
            "on_demand_hours": float(np.mean([j.od_s for j in jobs])) / 3600,
            "preemptions": float(np.mean([j.preemptions for j in jobs])),
            "restarts": float(np.mean([j.restarts for j in jobs])),
            "moves": float(np.mean([j.moves for j in jobs])),
        },
        "artifacts": {"breakdown": "\n".join(lines), "hint": hint},
    }


def main(argv: list[str]) -> int:
    """`python evaluator.py PROGRAM [SPLIT ...]`: evaluate + score, print JSON lines."""
    if not argv:
        print(main.__doc__, file=sys.stderr)
        return 2
    for split in argv[1:] or list(SPLITS):
        t0 = time.perf_counter()
        result = evaluate(argv[0], split)
        t1 = time.perf_counter()
        scored = score(result["outputs"], split) if "outputs" in result else result
        t2 = time.perf_counter()
        line = {k: v for k, v in scored.items() if k != "artifacts"} | {
            "error": scored.get("artifacts", {}).get("error"),
            "split": split,
            "evaluate_s": round(t1 - t0, 3),
            "score_s": round(t2 - t1, 3),
        }
        print(json.dumps(line))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
