"""A small deterministic discrete-event simulator of streaming jobs on a heterogeneous SoC.

Jobs (DS3 task graphs) arrive over time; a task becomes ready when its last parent
finishes. At every instant with newly ready tasks (an epoch) the policy gives each of
them a processing element (PE) and an order; each PE runs its tasks first-in first-out,
one at a time, without preemption. A task starts at the latest of: its PE's previous task
finishing, and each parent's finish plus the transfer time int(volume / bandwidth[pe of
parent][its pe]) (DS3's PE-to-PE model; the diagonal is comm_band_self). Latency of a job =
its last task's finish - its arrival. Times are integers in microseconds here, so every
replay is exact.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass

import ds3_format as fmt

from evaluators import kit

SOC_FILE = "SoC.MULTIPLE_BAL.txt"  # DS3's 16-PE SoC: 4 A7, 4 A15, 2 MM, 4 FFT, 2 Viterbi
APP_FILES = {
    "wifi_tx": "job_WIFI_5TXM.txt",
    "wifi_rx": "job_WIFI_5RXM.txt",
    "sc_tx": "job_SCT.txt",
    "sc_rx": "job_SCR.txt",
    "range_det": "job_LAG.txt",
    "temp_mit": "job_TEMP_MIT.txt",
}
JOBS = 100  # jobs injected per scenario (DS3's config_file.ini: max_jobs = 100)


@dataclass(frozen=True)
class Scenario:
    name: str
    mix: dict[str, float]  # app -> probability that a new job is that app
    rate: float  # jobs per ms: mean inter-arrival 1000 / rate us, exponential
    seed: int  # public seed; a run draws its arrivals under kit.seed(seed, name)


def _scenarios(
    prefix: str, mix: dict[str, float], rates: tuple[float, ...], seed: int
) -> list[Scenario]:
    return [Scenario(f"{prefix}@{r:g}", mix, r, seed + i) for i, r in enumerate(rates)]


# Train: the WiFi mixes of DS3's Fig. 12(a)/(b) and the single-carrier pair.
# Test (held out): range detection and temporal mitigation, never seen in train, and
# DS3's default six-application mix (config_file.ini), at other rates.
SPLITS = {
    "train": _scenarios("wifi_rx_heavy", {"wifi_tx": 0.2, "wifi_rx": 0.8}, (2, 5, 8), 101)
    + _scenarios("wifi_tx_heavy", {"wifi_tx": 0.8, "wifi_rx": 0.2}, (4, 10), 111)
    + _scenarios("single_carrier", {"sc_tx": 0.5, "sc_rx": 0.5}, (10, 30), 121),
    "test": _scenarios("radar", {"range_det": 0.5, "temp_mit": 0.5}, (6, 12, 18), 201)
    + _scenarios(
        "ds3_default",
        {
            "wifi_tx": 0.2,
            "wifi_rx": 0.2,
            "range_det": 0.2,
            "sc_tx": 0.1,
            "sc_rx": 0.1,
            "temp_mit": 0.2,
        },
        (4, 8),
        211,
    ),
}


def _read(name: str) -> str:
    try:
        with open(kit.data_path(__file__, name), encoding="utf-8") as f:
            return f.read()
    except FileNotFoundError:
        raise FileNotFoundError(f"missing data file {name}: run fetch_data.py") from None


def load_soc(name: str = SOC_FILE) -> fmt.SoC:
    return fmt.parse_soc(_read(name))


def load_apps(names) -> dict[str, fmt.App]:
    return {a: fmt.parse_job(_read(APP_FILES[a])) for a in names}


def scenarios(split: str) -> list[Scenario]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
    return SPLITS[split]


def arrivals(sc: Scenario, n: int = JOBS) -> list[tuple[int, str]]:
    """(arrival us, app) of each job: exponential gaps rounded to whole us, apps drawn by mix."""
    rng = random.Random(kit.seed(sc.seed, sc.name))
    apps, weights = list(sc.mix), list(sc.mix.values())
    t, out = 0, []
    for _ in range(n):
        out.append((t, rng.choices(apps, weights)[0]))
        t += round(rng.expovariate(sc.rate / 1000.0))
    return out


def comm_us(soc: fmt.SoC, volume: int, p: int, q: int) -> int:
    """DS3's transfer time from PE p to PE q: int(volume / bandwidth)."""
    return int(volume / soc.band[p][q])


class Sim:
    """One scenario, epoch by epoch: advance() to the next epoch, state(), then apply()."""

    def __init__(self, soc: fmt.SoC, apps: dict[str, fmt.App], jobs: list[tuple[int, str]]):
        self.soc, self.apps, self.jobs = soc, apps, jobs
        self.now = 0
        self.ready: list[tuple[int, int]] = []  # (job, task) ready and not yet placed
        self.pe_free = [0] * soc.n  # when each PE's queue drains
        self.pe_tasks = [0] * soc.n  # tasks placed on each PE and not finished
        self.waiting = [[len(ps) for ps in apps[a].parents] for _, a in jobs]
        self.finish: list[list[int | None]] = [[None] * apps[a].n for _, a in jobs]
        self.pe: list[list[int | None]] = [[None] * apps[a].n for _, a in jobs]
        self.left = [apps[a].n for _, a in jobs]
        self.done_at: list[int | None] = [None] * len(jobs)
        self._events = [
            (t, j, 0, j, -1) for j, (t, _) in enumerate(jobs)
        ]  # (time, seq, kind, job, task)
        heapq.heapify(self._events)
        self._seq = len(jobs)
        self.epochs = 0

    def advance(self) -> bool:
        """Process events up to the next instant with ready tasks; False once every job is done."""
        while not self.ready:
            if not self._events:
                return False
            self.now = t = self._events[0][0]
            while self._events and self._events[0][0] == t:
                _, _, kind, j, k = heapq.heappop(self._events)
                app = self.apps[self.jobs[j][1]]
                if kind == 0:  # arrival: the heads are ready
                    self.ready += [(j, i) for i in range(app.n) if not app.parents[i]]
                    continue
                self.pe_tasks[self.pe[j][k]] -= 1
                self.left[j] -= 1
                if self.left[j] == 0:
                    self.done_at[j] = t
                for c, _ in app.children[k]:
                    self.waiting[j][c] -= 1
                    if self.waiting[j][c] == 0:
                        self.ready.append((j, c))
        self.epochs += 1
        return True

    def state(self) -> dict:
        """What the policy sees at this epoch (plain values, a fresh copy)."""
        ready = []
        for j, i in self.ready:
            arrival, a = self.jobs[j]
            app = self.apps[a]
            parents = [[self.pe[j][p], self.finish[j][p], v] for p, v in app.parents[i]]
            ready.append({"job": j, "app": a, "task": i, "func": app.funcs[i], "arrival": arrival,
                          "parents": parents})  # fmt: skip
        return {
            "now": self.now,
            "ready": ready,
            "pe_free": list(self.pe_free),
            "pe_tasks": list(self.pe_tasks),
        }

    def check(self, raw: object) -> list[tuple[int, int]]:
        """The policy's answer as (ready index, PE) pairs: every ready task once, on a PE that runs it."""
        n, m = len(self.ready), self.soc.n
        if not isinstance(raw, (list, tuple)):
            raise kit.Invalid(
                f"expected a list of [ready index, PE] pairs, got {type(raw).__name__}"
            )
        if len(raw) != n:
            raise kit.Invalid(
                f"expected {n} [ready index, PE] pairs (one per ready task), got {len(raw)}"
            )
        pairs, seen = [], set()
        for item in raw:
            if not isinstance(item, (list, tuple)) or len(item) != 2:
                raise kit.Invalid(f"each entry must be a [ready index, PE] pair, got {item!r:.60}")
            i, p = item
            for v in (i, p):
                if type(v) is not int:
                    raise kit.Invalid(
                        f"ready index and PE must be ints, got {v!r:.40} ({type(v).__name__})"
                    )
            if not 0 <= i < n:
                raise kit.Invalid(f"ready index {i} is outside [0, {n})")
            if i in seen:
                raise kit.Invalid(f"ready task {i} is placed twice")
            if not 0 <= p < m:
                raise kit.Invalid(f"PE {p} does not exist (PEs are 0..{m - 1})")
            j, k = self.ready[i]
            func = self.apps[self.jobs[j][1]].funcs[k]
            if self.soc.exec_us[func][p] is None:
                raise kit.Invalid(f"PE {p} ({self.soc.pe_names[p]}) cannot run {func!r}")
            seen.add(i)
            pairs.append((i, p))
        return pairs

    def apply(self, raw: object) -> list[list[int]]:
        """Place the ready tasks as the policy says; returns the checked pairs (the log entry)."""
        pairs = self.check(raw)
        for i, p in pairs:
            j, k = self.ready[i]
            app = self.apps[self.jobs[j][1]]
            start = max(self.now, self.pe_free[p])
            for q, v in app.parents[k]:
                start = max(start, self.finish[j][q] + comm_us(self.soc, v, self.pe[j][q], p))
            end = start + int(self.soc.exec_us[app.funcs[k]][p])
            self.pe[j][k], self.finish[j][k], self.pe_free[p] = p, end, end
            self.pe_tasks[p] += 1
            heapq.heappush(self._events, (end, self._seq, 1, j, k))
            self._seq += 1
        self.ready = []
        return [[i, p] for i, p in pairs]

    def results(self) -> dict:
        lat = [d - t for d, (t, _) in zip(self.done_at, self.jobs, strict=True)]
        per_app: dict[str, list[int]] = {}
        for x, (_, a) in zip(lat, self.jobs, strict=True):
            per_app.setdefault(a, []).append(x)
        return {
            "latency": lat,
            "per_app": per_app,
            "makespan": max(self.done_at),
            "epochs": self.epochs,
        }


def platform_arg(soc: fmt.SoC) -> dict:
    return {"pe_names": list(soc.pe_names), "pe_types": list(soc.pe_types),
            "exec": {f: list(v) for f, v in soc.exec_us.items()}, "band": [list(r) for r in soc.band]}  # fmt: skip


def apps_arg(apps: dict[str, fmt.App]) -> dict:
    return {a: {"funcs": list(x.funcs), "parents": [[list(e) for e in ps] for ps in x.parents],
                "children": [[list(e) for e in cs] for cs in x.children]} for a, x in apps.items()}  # fmt: skip


def replay(soc: fmt.SoC, apps: dict[str, fmt.App], jobs: list, log: list, name: str) -> dict:
    """Re-run a scenario with a logged list of decisions (one per epoch); raises kit.Invalid."""
    sim = Sim(soc, apps, jobs)
    for k, raw in enumerate(log):
        if not sim.advance():
            raise kit.Invalid(
                f"scenario {name}: {len(log)} decisions logged, but it has only {k} epochs"
            )
        try:
            sim.apply(raw)
        except kit.Invalid as e:
            raise kit.Invalid(f"scenario {name}, epoch {k} (t={sim.now} us): {e}") from None
    if sim.advance():
        raise kit.Invalid(
            f"scenario {name}: only {len(log)} decisions logged, but it has more epochs"
        )
    return sim.results()
