"""The spot simulator and evaluator machinery of spot_scheduling and spot_multi_region.

One deadline-bound job on spot or on-demand instances across one or more
availability zones: the model of "Can't Be Late: Optimizing Spot Instance
Savings under Deadlines" (Wu et al., NSDI'24), extended to several zones as in
the ADRS multi-region case study; one zone is the single-region case. Time
advances in ticks of the (aligned) availability traces; in each tick the job
runs on at most one instance: SPOT in a zone whose trace says spot is
available there (lost the moment it is not), ON_DEMAND in any zone (always
available), or nothing (NONE). Work done is kept across preemptions and moves
(the job checkpoints); every start of an instance, whether after NONE, after a
preemption, on a change of instance type or on a move to another zone, pays
the restart overhead before progress resumes. All times are integers in
seconds, so replaying a decision log is exact.

Both evaluators keep only their benchmark (splits, traces, zones, windows, what
decide() may return, as a `Benchmark`); the rest is here and works the same
for both. Sandbox side: step every scenario, call decide(state) once per tick
(in the candidate's own process, through the kit's proxy), re-run a few
scenarios to check decide() is repeatable, and report only the decisions
(`Benchmark.run`). Trusted side, in a clean process that never
imports the candidate: rebuild the scenarios, replay each decision log through
a fresh `Job` and compute cost and deadline misses (`Benchmark.judge`).
spot_multi_region loads this file through problem.toml's `include`.
"""

from __future__ import annotations

import itertools
import re
import string
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from evaluators import kit

SPOT, ON_DEMAND, NONE = "SPOT", "ON_DEMAND", "NONE"
ACTIONS = (SPOT, ON_DEMAND, NONE)
MAX_ZONES = 26
NONE_CODE = "."

SPOT_PRICE = 0.97  # $/hour, the same in every zone (the ADRS leaderboard's K80/V100 setting)
ON_DEMAND_PRICE = 3.06  # $/hour

# The job of every scenario (the Can't Be Late setting): hours of work, deadlines, overheads.
WORK_H = 48
DEADLINES_H = (52, 70)
OVERHEADS_H = (0.05, 0.2)
REPEAT_CHECKS = 4  # scenarios re-run at the end to check decide() is repeatable

_RLE_TOKEN = re.compile(r"([.a-zA-Z])([1-9][0-9]{0,6})")


# --- the simulator -----------------------------------------------------------------------------
def code(action: str, zone: int) -> str:
    """One tick's decision code: "." = NONE, "a".."z" = SPOT in zone 0..25, "A".."Z" = ON_DEMAND."""
    if action == NONE:
        return NONE_CODE
    return (string.ascii_lowercase if action == SPOT else string.ascii_uppercase)[zone]


def action_of(c: str) -> tuple[str, int]:
    """(action, zone) of a decision code; ValueError for anything else."""
    if c == NONE_CODE:
        return NONE, -1
    if len(c) == 1 and c in string.ascii_lowercase:
        return SPOT, ord(c) - ord("a")
    if len(c) == 1 and c in string.ascii_uppercase:
        return ON_DEMAND, ord(c) - ord("A")
    raise ValueError(f"unknown decision code {c!r}")


class IllegalDecision(ValueError):
    """A decision the simulator's rules forbid (SPOT where spot is unavailable, a zone
    that does not exist, a decision after the job ended, a log that stops early)."""


@dataclass(frozen=True)
class Scenario:
    """One job on one window of aligned traces; `avail[z][k]` is 1 if spot is available
    in zone z during tick k. The job starts with zone 0 as its current zone. `start` is the
    window's first tick in the traces: scenarios are stepped in trace-time order."""

    name: str
    zones: tuple[str, ...]
    avail: tuple[bytes, ...]
    gap_s: int
    work_s: int
    deadline_s: int
    overhead_s: int
    spot_price: float = SPOT_PRICE
    on_demand_price: float = ON_DEMAND_PRICE
    start: int = 0

    @property
    def n_ticks(self) -> int:
        """Ticks until the deadline; the last one is shorter if the gap does not divide it."""
        return -(-self.deadline_s // self.gap_s)

    @property
    def on_demand_cost(self) -> float:
        """What 'always on-demand' pays: one start, then the whole job, released when done."""
        return (self.overhead_s + self.work_s) * self.on_demand_price / 3600


class Job:
    """One job advanced tick by tick: observe() at the start of a tick, then step(action, zone)."""

    __slots__ = (
        "sc", "n_ticks", "tick", "done_s", "current", "zone", "overhead_left_s", "spot_s",
        "od_s", "restarts", "preemptions", "moves", "_observed",
    )

    def __init__(self, sc: Scenario):
        if not 1 <= len(sc.zones) <= MAX_ZONES or len(sc.avail) != len(sc.zones):
            raise ValueError(f"{sc.name}: needs 1..{MAX_ZONES} zones with one trace each")
        if any(len(a) < sc.n_ticks for a in sc.avail):
            raise ValueError(f"{sc.name}: a trace window is shorter than {sc.n_ticks} ticks")
        self.sc = sc
        self.n_ticks = sc.n_ticks
        self.tick = 0
        self.done_s = 0  # work done so far
        self.current = NONE  # what runs now (after any preemption at this tick)
        self.zone = 0  # zone of the instance running now, or of the last one
        self.overhead_left_s = 0  # restart overhead still to pay on the current instance
        self.spot_s = 0  # seconds each instance type was held (billed)
        self.od_s = 0
        self.restarts = 0
        self.preemptions = 0
        self.moves = 0  # starts in a zone other than the previous instance's
        self._observed = -1

    @property
    def work_left_s(self) -> int:
        return self.sc.work_s - self.done_s

    @property
    def finished(self) -> bool:
        return self.done_s >= self.sc.work_s

    @property
    def over(self) -> bool:
        """No more decisions: the job is done or the deadline has passed."""
        return self.done_s >= self.sc.work_s or self.tick >= self.n_ticks

    @property
    def cost(self) -> float:
        return (self.spot_s * self.sc.spot_price + self.od_s * self.sc.on_demand_price) / 3600

    def observe(self) -> bool:
        """Start the current tick: a spot instance whose zone lost spot availability is gone.
        Returns whether the current zone has spot in this tick."""
        has_spot = self.sc.avail[self.zone][self.tick] == 1
        if self._observed != self.tick:
            self._observed = self.tick
            if self.current == SPOT and not has_spot:
                self.current = NONE
                self.overhead_left_s = 0
                self.preemptions += 1
        return has_spot

    def step(self, action: str, zone: int = 0) -> None:
        """Hold `action` in `zone` for this tick; a different type or zone restarts (pays the overhead)."""
        sc, tick = self.sc, self.tick
        if self.done_s >= sc.work_s or tick >= self.n_ticks:
            raise IllegalDecision(f"a decision at tick {tick}, after the job ended")
        self.observe()
        if action not in ACTIONS:
            raise IllegalDecision(f"unknown action {action!r} at tick {tick}")
        dt = sc.deadline_s - tick * sc.gap_s
        if dt > sc.gap_s:
            dt = sc.gap_s
        self.tick = tick + 1
        if action == NONE:
            self.current, self.overhead_left_s = NONE, 0
            return
        if type(zone) is not int or not 0 <= zone < len(sc.zones):
            raise IllegalDecision(f"zone {zone!r} at tick {tick} is not one of 0..{len(sc.zones) - 1}")
        if action == SPOT and sc.avail[zone][tick] != 1:
            raise IllegalDecision(f"SPOT in zone {zone} ({sc.zones[zone]}) at tick {tick}, "
                                  "but spot is not available there then")
        if action != self.current or zone != self.zone:
            self.moves += zone != self.zone
            self.current, self.zone, self.overhead_left_s = action, zone, sc.overhead_s
            self.restarts += 1
        overhead = self.overhead_left_s if self.overhead_left_s < dt else dt
        self.overhead_left_s -= overhead
        progress = dt - overhead
        left = sc.work_s - self.done_s
        if progress >= left:  # done within this tick: the instance is released at once
            progress = left
            self.current, self.overhead_left_s = NONE, 0
        self.done_s += progress
        if action == SPOT:
            self.spot_s += overhead + progress
        else:
            self.od_s += overhead + progress


def encode(codes: str) -> str:
    """Run-length encode a string of decision codes: 'aaaB..' -> 'a3B1.2'."""
    out, i = [], 0
    while i < len(codes):
        j = i
        while j < len(codes) and codes[j] == codes[i]:
            j += 1
        out.append(f"{codes[i]}{j - i}")
        i = j
    return "".join(out)


def decode(text: object, max_ticks: int) -> str:
    """Inverse of encode(), strict: raises ValueError on anything else or more than max_ticks."""
    if not isinstance(text, str):
        raise ValueError(f"a decision log must be a string, got {type(text).__name__}")
    parts, pos, total = [], 0, 0
    for m in _RLE_TOKEN.finditer(text):
        if m.start() != pos:
            break
        n = int(m.group(2))
        total += n
        if total > max_ticks:
            raise ValueError(f"decision log covers more than {max_ticks} ticks")
        parts.append(m.group(1) * n)
        pos = m.end()
    if pos != len(text):
        raise ValueError(f"malformed decision log at character {pos}: {text[pos:pos + 20]!r}")
    return "".join(parts)


def replay(sc: Scenario, codes: str) -> Job:
    """Run a decoded decision log through a fresh Job; raise IllegalDecision on any breach.

    The log must hold exactly one decision per tick until the job finishes or
    the deadline passes. A returned Job that is not `finished` missed the deadline.
    """
    job = Job(sc)
    step = job.step
    for k, c in enumerate(codes):
        if job.done_s >= sc.work_s:
            raise IllegalDecision(f"{len(codes) - k} decision(s) after the job ended at tick {job.tick}")
        try:
            action, zone = action_of(c)
        except ValueError as e:
            raise IllegalDecision(f"{e} at tick {k}") from None
        step(action, zone)
    if not job.over:
        raise IllegalDecision(
            f"the log stops at tick {job.tick} with {job.work_left_s / 3600:.3f} h of work left "
            f"and {job.sc.n_ticks - job.tick} tick(s) before the deadline"
        )
    return job


# --- scenarios from trace files ----------------------------------------------------------------
_traces: dict[str, bytes] = {}


def load_trace(path: str, gap_s: int) -> bytes:
    """Availability per tick of one trace file; 1 = spot available.

    The files store 1 for a tick where the instance was preempted / could not
    be obtained and 0 where it was available (the NSDI'24 simulator reads
    `available = not data[tick]`).
    """
    if path not in _traces:
        raw = kit.read_json(path)
        gap, data = int(raw["metadata"]["gap_seconds"]), raw["data"]
        if gap != gap_s or not all(type(v) is int and v >= 0 for v in data):
            raise ValueError(f"{path}: expected gap_seconds {gap_s} and integer samples")
        _traces[path] = bytes(1 if v == 0 else 0 for v in data)
    return _traces[path]


def _runs(trace: bytes) -> tuple[list[int], list[int]]:
    """Lengths of the trace's runs of availability (1) and of unavailability (0)."""
    runs: tuple[list[int], list[int]] = ([], [])
    start = 0
    for k in range(1, len(trace) + 1):
        if k == len(trace) or trace[k] != trace[start]:
            runs[1 - trace[start]].append(k - start)
            start = k
    return runs


def resample(trace: bytes, seed: int, length: int | None = None, jitter: float = 0.2) -> bytes:
    """A new trace (as long as `trace`, or `length`) drawn under `seed`: alternating spells of
    availability and unavailability whose lengths are drawn (with replacement) from the
    trace's own spells, each stretched by a factor in [1 - jitter, 1 + jitter]; a random
    start phase. A trace that is available throughout (or never) gives the same throughout.

    What a run scores on under its private data seed (kit.private_data): the spells'
    distributions (availability share, preemption and recovery times) are the trace's, but
    no stretch of it is: a candidate that carries the public traces and matches what it has
    seen finds nothing, and the future of a window is unknown to it.
    """
    n = len(trace) if length is None else length
    up, down = _runs(trace)
    if not up or not down:
        return trace[:1] * n
    rng = np.random.default_rng(seed)
    lo, hi = 1.0 - jitter, 1.0 + jitter
    state = int(rng.random() < sum(up) / len(trace))
    skip = int(rng.integers(0, max(up + down)))  # start inside a spell, not at its beginning
    parts, total = [], 0
    while total < n + skip:
        spells = up if state else down
        spell = max(1, round(spells[int(rng.integers(len(spells)))] * rng.uniform(lo, hi)))
        parts.append(bytes([state]) * spell)
        total += spell
        state = 1 - state
    return b"".join(parts)[skip:skip + n]


def resample_together(traces: list[bytes], seeds: list[int]) -> list[bytes]:
    """Aligned traces of zones that lose spot together (one region), resampled keeping that:
    the region's outages (no zone has spot) and openings are resampled as one trace
    (`seeds[0]`); while the region is open, each zone follows its own resampled spells of
    open time (`seeds[1 + i]`); during an outage no zone has spot."""
    n = len(traces[0])
    open_ = bytes(int(any(t[k] for t in traces)) for k in range(n))
    region = resample(open_, seeds[0])
    ticks = region.count(1)
    out = []
    for t, seed in zip(traces, seeds[1:], strict=True):
        inside = bytes(v for v, o in zip(t, open_, strict=True) if o)
        stream = iter(resample(inside, seed, ticks) if inside else bytes(ticks))
        out.append(bytes(next(stream) if o else 0 for o in region))
    return out


@dataclass(frozen=True)
class Group:
    """Scenarios on one set of aligned traces (zone 0 first), in windows inside ticks [lo, hi)."""

    name: str  # the scenarios' names start with it: a trace, a zone subset
    zones: tuple[str, ...]
    traces: tuple[bytes, ...]
    lo: int
    hi: int


def setting(splits: dict, split: str):
    """splits[split], or a ValueError naming the splits there are."""
    if split not in splits:
        raise ValueError(f"unknown split {split!r}; expected one of {sorted(splits)}")
    return splits[split]


def window_starts(lo: int, hi: int, count: int, seed: int, index: int) -> list[int]:
    """`count` distinct, sorted start ticks in [lo, hi]."""
    rng = np.random.default_rng([seed, index])
    return sorted((lo + rng.choice(hi - lo + 1, size=count, replace=False)).tolist())


def make_scenarios(groups: list[Group], gap_s: int, windows: int, seed: int) -> list[Scenario]:
    """Every (group, start window, deadline, restart overhead), in a fixed order; the windows
    of group i are drawn with the seed [seed, i] and each leaves room for the longest deadline."""
    need = -(-max(DEADLINES_H) * 3600 // gap_s)
    scenarios = []
    for i, g in enumerate(groups):
        for start in window_starts(g.lo, g.hi - need, windows, seed, i):
            window = tuple(t[start:start + need] for t in g.traces)
            for deadline, overhead in itertools.product(DEADLINES_H, OVERHEADS_H):
                scenarios.append(Scenario(
                    name=f"{g.name} start_tick={start} deadline={deadline}h overhead={overhead}h",
                    zones=g.zones, avail=window, gap_s=gap_s, work_s=WORK_H * 3600,
                    deadline_s=deadline * 3600, overhead_s=round(overhead * 3600), start=start,
                ))
    return scenarios


# --- sandbox side: run the candidate, log its decisions ----------------------------------------
class State:
    """What decide() sees at one tick; times in hours, prices in $/hour.

    Writing to it changes nothing in the simulation (every field is refilled
    each tick). `memory` is a dict that persists across the ticks of one
    scenario (a fresh `kit.Memory` per scenario). The candidate's process gets
    the `fields` only, as a plain object named State with the same repr, and
    the same memory dict at every tick of the scenario.
    """

    __slots__ = (
        "tick", "elapsed", "gap", "deadline", "time_left", "work_total", "work_done",
        "work_left", "restart_overhead", "overhead_left", "has_spot", "current",
        "spot_price", "on_demand_price", "memory",
    )
    fields = __slots__

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.fields if k != "memory")
        return f"State({shown})"


class ZoneState(State):
    """State with the zones: `zone` (of the instance running now, or of the last one), the
    scenario's `zones` and `n_zones`, and `spot` (per zone, this tick)."""

    __slots__ = ("zone", "zones", "n_zones", "spot")
    fields = (
        "tick", "elapsed", "gap", "deadline", "time_left", "work_total", "work_done",
        "work_left", "restart_overhead", "overhead_left", "has_spot", "current", "zone",
        "zones", "n_zones", "spot", "spot_price", "on_demand_price", "memory",
    )


class PolicyError(RuntimeError):
    """decide() raised; the message names the scenario and tick."""


# decide()'s return -> (action, zone), or a message saying what was wrong. Called with the
# return, the current zone, spot availability per zone this tick, and the zone names.
Parse = Callable[[object, int, tuple, tuple], tuple[str, int] | str]

def _spot_rows(scenarios: list[Scenario]) -> list[list[tuple[bool, ...]]]:
    """Per scenario, per tick, a tuple of spot availability per zone (shared by the scenarios
    of a window)."""
    windows: dict[tuple[bytes, ...], list[tuple[bool, ...]]] = {}
    for sc in scenarios:
        if sc.avail not in windows:
            windows[sc.avail] = [tuple(v == 1 for v in col) for col in zip(*sc.avail, strict=True)]
    return [windows[sc.avail] for sc in scenarios]


def run_policy(decide: Callable, sc: Scenario, parse: Parse, state: type[State] = State) -> str:
    """Step one scenario to its end, calling decide() every tick; return the decision codes."""
    return run_policies(decide, [sc], parse, state)[0]


def run_policies(decide: Callable, scenarios: list[Scenario], parse: Parse,
                 state: type[State] = State, trace_time: bool = True) -> list[str]:
    """Step every scenario to its end in trace-time order; return each one's decision codes.

    At each trace tick T, one batch of decide() calls (one round trip to the
    candidate's process) serves every scenario whose window covers T, in
    scenario order. So when decide() is called for tick T, its process has
    seen no availability later than T in any scenario: even global state
    cannot carry the future of one scenario into another. With `trace_time`
    False, every scenario starts at once (for re-runs, which see no new data).
    """
    decide = kit.proxy(decide)
    zoned = issubclass(state, ZoneState)
    jobs = [Job(sc) for sc in scenarios]
    rows = _spot_rows(scenarios)
    states = []
    for _ in scenarios:
        st = state()
        st.memory = kit.Memory()
        states.append(st)
    codes: list[list[str]] = [[] for _ in scenarios]
    starts = [sc.start if trace_time else 0 for sc in scenarios]
    order = sorted(range(len(scenarios)), key=starts.__getitem__)
    active: list[int] = []
    nxt, now = 0, 0
    while nxt < len(order) or active:
        if not active:
            now = max(now, starts[order[nxt]])
        if nxt < len(order) and starts[order[nxt]] <= now:
            while nxt < len(order) and starts[order[nxt]] <= now:
                active.append(order[nxt])
                nxt += 1
            active.sort()
        spots = []
        for i in active:
            sc, job, st = scenarios[i], jobs[i], states[i]
            job.observe()
            spot = rows[i][job.tick]
            spots.append(spot)
            t = job.tick * sc.gap_s
            st.tick, st.elapsed, st.time_left = job.tick, t / 3600, (sc.deadline_s - t) / 3600
            st.work_done, st.work_left = job.done_s / 3600, job.work_left_s / 3600
            st.overhead_left, st.has_spot, st.current = job.overhead_left_s / 3600, spot[job.zone], job.current
            if zoned:
                st.spot, st.zone, st.zones, st.n_zones = spot, job.zone, sc.zones, len(sc.zones)
            st.gap, st.deadline, st.work_total = sc.gap_s / 3600, sc.deadline_s / 3600, sc.work_s / 3600
            st.restart_overhead = sc.overhead_s / 3600
            st.spot_price, st.on_demand_price = sc.spot_price, sc.on_demand_price
        try:
            actions = decide.each([states[i] for i in active])
        except Exception as e:
            k = getattr(e, "call_index", None)
            i = active[k if type(k) is int and 0 <= k < len(active) else 0]
            raise PolicyError(
                f"decide() raised {type(e).__name__}: {e} (scenario {scenarios[i].name}, tick {jobs[i].tick})"
            ) from e
        for i, action, spot in zip(active, actions, spots, strict=True):
            job = jobs[i]
            parsed = parse(action, job.zone, spot, scenarios[i].zones)
            if isinstance(parsed, str):
                raise kit.Invalid(f"scenario {scenarios[i].name}, tick {job.tick}: {parsed}")
            kind, zone = parsed
            job.step(kind, zone)
            codes[i].append(code(kind, zone))
        active = [i for i in active if not jobs[i].over]
        now += 1
    return ["".join(c) for c in codes]


def check_repeatable(decide: Callable, scenarios: list[Scenario], codes: list[str],
                     parse: Parse, state: type[State] = State) -> None:
    """Re-run a few scenarios, in reverse order and side by side (one batch per tick):
    decide() must give the same decisions."""
    picks = np.linspace(0, len(scenarios) - 1, REPEAT_CHECKS).astype(int).tolist()[::-1]
    rerun = run_policies(decide, [scenarios[i] for i in picks], parse, state, trace_time=False)
    for i, again in zip(picks, rerun, strict=True):
        if again != codes[i]:
            k = next((j for j, (a, b) in enumerate(zip(again, codes[i], strict=False)) if a != b),
                     min(len(again), len(codes[i])))
            raise kit.Invalid(
                f"decide() is not repeatable: re-running scenario {scenarios[i].name} changed "
                f"its decision at tick {k}; it must depend only on `state` and `state.memory` "
                "(no global state across scenarios, no randomness)"
            )


def run_all(decide: Callable, scenarios: list[Scenario], parse: Parse,
            state: type[State] = State) -> tuple[dict, dict]:
    """Sandbox side: every scenario's decisions, one run-length encoded log each."""
    codes = run_policies(decide, scenarios, parse, state)
    check_repeatable(decide, scenarios, codes, parse, state)
    return ({"decisions": [encode(c) for c in codes]},
            {"scenarios": len(scenarios), "decisions": sum(map(len, codes))})


# --- trusted side: replay the logs, score ------------------------------------------------------
def judge(outputs: object, scenarios: list[Scenario], zoned: bool, reference: str) -> dict:
    """Trusted side: replay every decision log through a fresh simulator; never imports the candidate.

    `zoned` adds the moves between zones to the report; `reference` ends the hint.
    """
    logs = outputs.get("decisions") if isinstance(outputs, dict) else None
    if not isinstance(logs, list) or len(logs) != len(scenarios):
        got = f"{len(logs)} logs" if isinstance(logs, list) else type(logs).__name__
        raise kit.Invalid(f"outputs must be {{'decisions': [one log per scenario]}} with "
                          f"{len(scenarios)} logs; got {got}")
    jobs, misses = [], []
    for i, (sc, text) in enumerate(zip(scenarios, logs, strict=True)):
        try:
            job = replay(sc, decode(text, sc.n_ticks))
        except ValueError as e:
            raise kit.Invalid(f"scenario {i} ({sc.name}): {e}") from None
        if not job.finished:
            misses.append(job)
        jobs.append(job)
    if misses:
        first = misses[0]
        moves = f", {first.moves} moves" if zoned else ""
        raise kit.Invalid(
            f"missed the deadline in {len(misses)} of {len(jobs)} scenarios; any miss fails. "
            f"First: {first.sc.name}: {first.work_left_s / 3600:.3f} h of work left at the deadline "
            f"(spot {first.spot_s / 3600:.1f} h, on-demand {first.od_s / 3600:.1f} h, "
            f"{first.preemptions} preemptions{moves}). Switch to ON_DEMAND while the time left "
            "still covers the work left plus one restart overhead.",
            deadline_misses=len(misses), scenarios=len(jobs),
        )
    return scored(jobs, zoned, reference)


def _group(sc: Scenario) -> str:
    """The scenario's trace or zone subset, deadline and overhead: all but the start window."""
    trace, _, rest = sc.name.split(" ", 2)
    return f"{trace} {rest}"


def scored(jobs: list[Job], zoned: bool, reference: str) -> dict:
    """Score, metrics (means per job), a breakdown per group and a hint naming the costliest jobs."""
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
        moves = f"{np.mean([j.moves for j in js]):.1f} moves, " if zoned else ""
        lines.append(
            f"{name}: ${c:.2f}/job ({100 * (1 - c / o):.1f}% below on-demand), "
            f"{100 * spot_share:.0f}% of instance time on spot, "
            f"{np.mean([j.preemptions for j in js]):.1f} preemptions, {moves}"
            f"{np.mean([j.restarts for j in js]):.1f} starts per job"
        )
    worst = sorted(jobs, key=lambda j: j.cost - j.sc.on_demand_cost, reverse=True)[:3]
    hint = (
        f"mean ${mean_cost:.2f} per job vs ${float(od.mean()):.2f} always on-demand "
        f"({savings:.1f}% saved) over {len(jobs)} scenarios. Costliest relative to on-demand: "
        + "; ".join(f"{j.sc.name} ${j.cost:.2f}" for j in worst) + f". {reference}"
    )
    metrics = {
        "mean_cost": mean_cost,
        "savings_pct": savings,
        "on_demand_cost": float(od.mean()),
        "deadline_misses": 0,
        "scenarios": len(jobs),
        "spot_hours": float(np.mean([j.spot_s for j in jobs])) / 3600,
        "on_demand_hours": float(np.mean([j.od_s for j in jobs])) / 3600,
        "preemptions": float(np.mean([j.preemptions for j in jobs])),
        "restarts": float(np.mean([j.restarts for j in jobs])),
    }
    if zoned:
        metrics["moves"] = float(np.mean([j.moves for j in jobs]))
    return {"score": -mean_cost, "metrics": metrics,
            "artifacts": {"breakdown": "\n".join(lines), "hint": hint}}


@dataclass(frozen=True)
class Benchmark:
    """What one problem defines; its `evaluate` and `score` are the evaluator's two halves."""

    scenarios: Callable[[str], list[Scenario]]  # split -> its scenarios, in a fixed order
    parse: Parse  # what decide() may return
    state: type[State]  # what decide() sees: State (one zone) or ZoneState
    reference: str  # published numbers to beat, the hint's last sentence

    def run(self, decide: Callable, split: str) -> tuple[dict, dict]:
        return run_all(decide, self.scenarios(split), self.parse, self.state)

    def judge(self, outputs: object, split: str) -> dict:
        return judge(outputs, self.scenarios(split), issubclass(self.state, ZoneState), self.reference)

    def evaluate(self, program_path: str, split: str) -> dict:
        """Sandbox side: decide() on every scenario of the split; only the decisions go out."""
        return kit.evaluate(program_path, split, "decide", self.run)

    def score(self, outputs: object, split: str) -> dict:
        """Trusted side: replay the decision logs through a fresh simulator."""
        return kit.score(outputs, split, self.judge)
