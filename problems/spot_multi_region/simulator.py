"""Tick simulator for one deadline-bound job on spot or on-demand instances across zones.

The single-zone model of "Can't Be Late" (Wu et al., NSDI'24) extended to
several availability zones, as in the ADRS multi-region case study: time
advances in ticks of the (aligned) availability traces; in each tick the job
runs on at most one instance, SPOT in a zone whose trace says spot is
available there (lost the moment it is not), ON_DEMAND in any zone (always
available), or nothing (NONE). Work done is kept across preemptions and moves
(the job checkpoints); every start of an instance, whether after NONE, after a
preemption, on a change of instance type or on a move to another zone, pays the
restart overhead before progress resumes.

All times are integers in seconds, so replaying a decision log is exact. The
module is self-contained (stdlib only) and shared by the sandbox side
(evaluate) and the trusted side (score) of evaluator.py.
"""

from __future__ import annotations

import re
import string
from dataclasses import dataclass

SPOT, ON_DEMAND, NONE = "SPOT", "ON_DEMAND", "NONE"
ACTIONS = (SPOT, ON_DEMAND, NONE)
MAX_ZONES = 26
NONE_CODE = "."


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


SPOT_PRICE = 0.97  # $/hour, the same in every zone (the ADRS leaderboard's V100 setting)
ON_DEMAND_PRICE = 3.06  # $/hour

_RLE_TOKEN = re.compile(r"([.a-zA-Z])([1-9][0-9]{0,6})")


class IllegalDecision(ValueError):
    """A decision the simulator's rules forbid (SPOT where spot is unavailable, a zone
    that does not exist, a decision after the job ended, a log that stops early)."""


@dataclass(frozen=True)
class Scenario:
    """One job on one window of aligned traces; `avail[z][k]` is 1 if spot is available
    in zone z during tick k. The job starts with zone 0 as its current zone."""

    name: str
    zones: tuple[str, ...]
    avail: tuple[bytes, ...]
    gap_s: int
    work_s: int
    deadline_s: int
    overhead_s: int
    spot_price: float = SPOT_PRICE
    on_demand_price: float = ON_DEMAND_PRICE

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

    def observe(self) -> None:
        """Start the current tick: a spot instance whose zone lost spot availability is gone."""
        if self._observed != self.tick:
            self._observed = self.tick
            if self.current == SPOT and self.sc.avail[self.zone][self.tick] != 1:
                self.current = NONE
                self.overhead_left_s = 0
                self.preemptions += 1

    def step(self, action: str, zone: int) -> None:
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
