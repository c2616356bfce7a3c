"""Heterogeneous DAG scheduling: workflows, the platform, validation, the simulator, bounds.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a
clean process that never loads the candidate); a broken rule raises kit.Invalid.

Model (README.md, "Simulator"): a workflow is a DAG of tasks with a measured
runtime each (seconds, WfInstances' `runtimeInSeconds`) and, per edge, the
bytes the parent's output files carry to the child. Task i takes
runtime[i] / speed[p] seconds on processor p; a processor runs one task at a
time, without preemption. Data from parent j on p to child i on q takes
bytes / bandwidth[p][q] seconds when p != q, 0 when p == q; links are
contention-free (any number of transfers at once) and a transfer starts when
the parent finishes. A schedule is a list of (task, processor) pairs, every
task exactly once, each after all its parents. The simulator places the
tasks in that order, each at the earliest time at or after its data-ready
time at which its processor has an idle gap long enough (insertion, as in
HEFT). Makespan = the latest finish.

Lower bound (`cp_bound`): the longest path of runtime / fastest speed,
communication ignored (the denominator of Topcuoglu et al.'s schedule length
ratio, SLR). It is computed forward with the same float operations the
simulator uses, so makespan / bound >= 1 holds exactly, not just up to
rounding.
"""

from __future__ import annotations

import bisect
import json
import math
import numbers
import os
import random
import re

from evaluators import kit

# ---------------------------------------------------------------- the platform

# Three nodes of two processors. speed: work per second relative to the machines the
# workflows were measured on (Chameleon Cloud, 2020); node: processors on one node share
# memory, so data moves between them fast, while nodes talk over a slow shared link.
PROCESSORS: list[tuple[str, float, str]] = [
    ("slow-0", 1.0, "slow"),
    ("slow-1", 1.0, "slow"),
    ("mid-0", 2.0, "mid"),
    ("mid-1", 2.0, "mid"),
    ("fast-0", 4.0, "fast"),
    ("fast-1", 4.0, "fast"),
]
INTRA_NODE_BPS = 1.0e9  # bytes/s between two processors of one node
INTER_NODE_BPS = 1.0e7  # bytes/s between processors of different nodes (a 80 Mbit/s link)


def platform() -> dict:
    """The platform as the candidate receives it (plain lists, a fresh copy each call)."""
    n = len(PROCESSORS)
    bw = [
        [
            0.0
            if p == q
            else (INTRA_NODE_BPS if PROCESSORS[p][2] == PROCESSORS[q][2] else INTER_NODE_BPS)
            for q in range(n)
        ]
        for p in range(n)
    ]
    return {
        "names": [name for name, _, _ in PROCESSORS],
        "speed": [speed for _, speed, _ in PROCESSORS],
        "node": [node for _, _, node in PROCESSORS],
        "bandwidth": bw,
    }


# ---------------------------------------------------------------- workflows and splits

# Six WfInstances families: train optimises on four, test holds out the other two.
SPLITS: dict[str, tuple[str, ...]] = {
    "train": (
        "epigenomics-chameleon-hep-1seq-100k-001.json",
        "epigenomics-chameleon-hep-1seq-50k-001.json",
        "montage-chameleon-dss-05d-001.json",
        "seismology-chameleon-100p-001.json",
        "blast-chameleon-small-001.json",
    ),
    "test": (
        "1000genome-chameleon-2ch-100k-001.json",
        "1000genome-chameleon-4ch-100k-001.json",
        "srasearch-chameleon-20a-001.json",
    ),
}


class Workflow:
    """One workflow: task names and kinds, runtimes, and parent/child lists of (task, bytes)."""

    __slots__ = ("name", "slug", "family", "tasks", "kind", "runtime", "parents", "children")

    def __init__(
        self,
        name: str,
        tasks: list[str],
        kind: list[str],
        runtime: list[float],
        edges: list[tuple[int, int, int]],
    ) -> None:
        self.name, self.tasks, self.kind, self.runtime = name, tasks, kind, runtime
        self.family = name.split("-", 1)[0]
        self.slug = slug(name)
        self.parents: list[list[tuple[int, int]]] = [[] for _ in tasks]
        self.children: list[list[tuple[int, int]]] = [[] for _ in tasks]
        for j, i, nbytes in edges:
            self.parents[i].append((j, nbytes))
            self.children[j].append((i, nbytes))

    @property
    def n(self) -> int:
        return len(self.tasks)

    def as_arg(self) -> dict:
        """What the candidate's schedule() receives (plain data)."""
        return {
            "name": self.name,
            "family": self.family,
            "n": self.n,
            "tasks": list(self.tasks),
            "kind": list(self.kind),
            "runtime": list(self.runtime),
            "parents": [list(ps) for ps in self.parents],
            "children": [list(cs) for cs in self.children],
        }


def slug(file_name: str) -> str:
    """'epigenomics-chameleon-hep-1seq-100k-001.json' -> 'epigenomics_1seq_100k' (metric suffix)."""
    parts = file_name.removesuffix(".json").split("-")
    keep = [parts[0]] + [p for p in parts[2:-1] if p not in ("hep", "small", "dss")]
    return "_".join(keep)


def parse_wfformat(name: str, doc: object) -> Workflow:
    """A WfFormat 1.5 document -> Workflow. Task i is the i-th task of `specification.tasks`;
    an edge carries the sizes of the files the parent writes and the child reads."""
    try:
        spec = doc["workflow"]["specification"]  # type: ignore[index]
        execution = doc["workflow"]["execution"]  # type: ignore[index]
        sizes = {f["id"]: int(f["sizeInBytes"]) for f in spec["files"]}
        runtimes = {t["id"]: float(t["runtimeInSeconds"]) for t in execution["tasks"]}
        tasks = [t["id"] for t in spec["tasks"]]
        index = {t: i for i, t in enumerate(tasks)}
        edges = []
        for i, t in enumerate(spec["tasks"]):
            outputs = set(t["outputFiles"])
            for c in t["children"]:
                shared = outputs & set(spec["tasks"][index[c]]["inputFiles"])
                edges.append((i, index[c], sum(sizes[f] for f in sorted(shared))))
        runtime = [runtimes[t] for t in tasks]
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(
            f"{name}: not a WfFormat workflow with runtimes and files ({e!r})"
        ) from None
    if len(index) != len(tasks) or not all(r > 0 for r in runtime):
        raise ValueError(f"{name}: duplicate task ids or a non-positive runtime")
    kind = [re.sub(r"_ID\d+$", "", t) for t in tasks]
    wf = Workflow(name, tasks, kind, runtime, edges)
    topological_order(wf)  # raises on a cycle
    return wf


def topological_order(wf: Workflow) -> list[int]:
    """Kahn's algorithm, smallest index first; ValueError on a cycle."""
    indeg = [len(ps) for ps in wf.parents]
    ready = [i for i in range(wf.n) if indeg[i] == 0]
    order: list[int] = []
    while ready:
        i = ready.pop(0)
        order.append(i)
        for c, _ in wf.children[i]:
            indeg[c] -= 1
            if indeg[c] == 0:
                bisect.insort(ready, c)
    if len(order) != wf.n:
        raise ValueError(f"{wf.name}: the task graph has a cycle")
    return order


def load_workflows(split: str, evaluator_file: str = __file__) -> list[Workflow]:
    """The split's workflows: the published executions, or for `test` under a run's private
    data seed, a private variant of each (private_variant). `evaluator_file`: the problem
    whose data/ holds them (dag_modular includes this module and ships its own copy)."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
    out = []
    for name in SPLITS[split]:
        path = kit.data_path(evaluator_file, name)
        wf = parse_wfformat(name, kit.read_json(path))
        if split == "test" and kit.private_data():
            wf = private_variant(wf, random.Random(kit.seed(PRIVATE_SEED, name)))
        out.append(wf)
    return out


# ---------------------------------------------------------------- private held-out variants

PRIVATE_SEED = 5150  # the public part of the private held-out workflows' seed (kit.seed)
JITTER_SIGMA = 0.25  # lognormal noise on every redrawn runtime and edge size


def private_variant(wf: Workflow, rng: random.Random) -> Workflow:
    """A new workflow of the same recipe, which no carried schedule fits. Interchangeable
    sibling tasks (same kind, parents and children, each with its own exclusive parents, such
    as srasearch's download before each alignment) are a fan-out: 1000genome's chromosome
    jobs, srasearch's 20 branches. Each fan-out gets a new width, from half to one and a half
    times the original; every runtime is redrawn from its kind's measured runtimes with
    lognormal noise, every edge's size gets noise; the tasks are renumbered in a random order
    and named `<kind>_ID<k>`."""
    exclusive: dict[int, list[int]] = {i: [] for i in range(wf.n)}  # task -> its own parents
    owned = set()
    for i in range(wf.n):
        kinds = [wf.kind[j] for j, _ in wf.parents[i]]
        for j, _ in wf.parents[i]:
            if len(wf.children[j]) == 1 and kinds.count(wf.kind[j]) == 1:
                exclusive[i].append(j)
                owned.add(j)
    groups: dict[tuple, list[int]] = {}
    for i in range(wf.n):
        if i in owned:
            continue  # copied with the task it feeds
        key = (
            wf.kind[i],
            tuple(sorted(j for j, _ in wf.parents[i] if j not in exclusive[i])),
            tuple(sorted(wf.kind[j] for j in exclusive[i])),
            tuple(sorted(c for c, _ in wf.children[i])),
        )
        groups.setdefault(key, []).append(i)
    copies: list[int] = []  # copies[new] = the published task it copies
    feeds: dict[int, int] = {}  # a copied exclusive parent -> the copy it feeds

    def add(old: int, fed: int | None) -> None:
        new = len(copies)
        copies.append(old)
        if fed is not None:
            feeds[new] = fed
        for j in exclusive[old]:
            add(j, new)

    for members in groups.values():
        size = len(members)
        if size > 1:
            size = rng.randint(math.ceil(size / 2), size + size // 2)
        for old in members[:size] + [rng.choice(members) for _ in range(size - len(members))]:
            add(old, None)
    where: dict[int, list[int]] = {}
    for new, old in enumerate(copies):
        where.setdefault(old, []).append(new)
    order = list(range(len(copies)))
    rng.shuffle(order)  # order[new] = the task's final index
    by_kind: dict[str, list[float]] = {}
    for i in range(wf.n):
        by_kind.setdefault(wf.kind[i], []).append(wf.runtime[i])

    def noisy(x: float) -> float:
        return x * math.exp(rng.gauss(0.0, JITTER_SIGMA))

    n = len(copies)
    runtime, kind = [0.0] * n, [""] * n
    for new, old in enumerate(copies):
        runtime[order[new]] = max(1e-3, noisy(rng.choice(by_kind[wf.kind[old]])))
        kind[order[new]] = wf.kind[old]
    edges = []  # a copy is wired to every copy of each child (siblings share them)
    for new, old in enumerate(copies):
        for c, nbytes in wf.children[old]:
            for child in [feeds[new]] if new in feeds else where.get(c, ()):
                edges.append((order[new], order[child], round(noisy(nbytes))))
    edges.sort()
    tasks = [f"{k}_ID{i + 1:07d}" for i, k in enumerate(kind)]
    family, _, rest = wf.name.partition("-")
    out = Workflow(f"{family}-private-{rest.partition('-')[2]}", tasks, kind, runtime, edges)
    topological_order(out)  # raises on a cycle (copies keep the published DAG's order)
    return out


# ---------------------------------------------------------------- validation


def check_schedule(raw: object, wf: Workflow, n_procs: int) -> list[tuple[int, int]]:
    """The candidate's schedule as (task, processor) pairs, or kit.Invalid saying what is wrong."""
    if hasattr(raw, "tolist") and not isinstance(raw, (list, tuple)):
        raw = raw.tolist()  # a numpy array of pairs
    if not isinstance(raw, (list, tuple)):
        raise kit.Invalid(
            f"schedule() returned {type(raw).__name__}; expected a list of (task, processor) pairs"
        )
    if len(raw) != wf.n:
        raise kit.Invalid(f"schedule() returned {len(raw)} pairs; expected {wf.n}, one per task")
    placed = [False] * wf.n
    out = []
    for k, pair in enumerate(raw):
        if hasattr(pair, "tolist") and not isinstance(pair, (list, tuple)):
            pair = pair.tolist()
        if not isinstance(pair, (list, tuple)) or len(pair) != 2:
            raise kit.Invalid(f"entry {k} is {pair!r:.60}; expected a (task, processor) pair")
        t, p = pair
        for what, v in (("task", t), ("processor", p)):
            if isinstance(v, bool) or not isinstance(v, numbers.Integral):
                raise kit.Invalid(f"entry {k}: {what} {v!r:.40} is not an integer")
        t, p = int(t), int(p)
        if not 0 <= t < wf.n:
            raise kit.Invalid(f"entry {k}: task {t} does not exist (tasks are 0..{wf.n - 1})")
        if not 0 <= p < n_procs:
            raise kit.Invalid(
                f"entry {k}: task {t} on processor {p}, which does not exist (0..{n_procs - 1})"
            )
        if placed[t]:
            raise kit.Invalid(f"entry {k}: task {t} ({wf.tasks[t]}) is scheduled twice")
        for j, _ in wf.parents[t]:
            if not placed[j]:
                raise kit.Invalid(
                    f"entry {k}: task {t} ({wf.tasks[t]}) comes before its parent {j} "
                    f"({wf.tasks[j]}); list every task after all its parents"
                )
        placed[t] = True
        out.append((t, p))
    return out


# ---------------------------------------------------------------- the simulator


def earliest_slot(busy: list[tuple[float, float]], ready: float, duration: float) -> float:
    """The earliest start >= ready of an idle gap of `duration` among sorted busy intervals."""
    start = ready
    for s, f in busy:
        if start + duration <= s:
            break
        if f > start:
            start = f
    return start


def simulate(wf: Workflow, schedule: list[tuple[int, int]], plat: dict) -> dict:
    """Place a checked schedule; returns start, finish and processor per task, and the makespan."""
    speed, bw = plat["speed"], plat["bandwidth"]
    busy: list[list[tuple[float, float]]] = [[] for _ in speed]
    start = [0.0] * wf.n
    finish = [0.0] * wf.n
    proc = [-1] * wf.n
    comm = 0.0
    for t, p in schedule:
        ready = 0.0
        for j, nbytes in wf.parents[t]:
            q = proc[j]
            arrive = finish[j] if q == p else finish[j] + nbytes / bw[q][p]
            if q != p:
                comm += nbytes / bw[q][p]
            if arrive > ready:
                ready = arrive
        duration = wf.runtime[t] / speed[p]
        s = earliest_slot(busy[p], ready, duration)
        start[t], finish[t], proc[t] = s, s + duration, p
        bisect.insort(busy[p], (s, s + duration))
    return {
        "start": start,
        "finish": finish,
        "proc": proc,
        "makespan": max(finish, default=0.0),
        "comm_s": comm,
    }


# ---------------------------------------------------------------- the score


def checked_schedules(
    workflows: list, schedules: list, n_procs: int
) -> list[list[tuple[int, int]]]:
    """Each schedule as checked (task, processor) pairs, or kit.Invalid naming the workflow."""
    out = []
    for wf, raw in zip(workflows, schedules, strict=True):
        try:
            out.append(check_schedule(raw, wf, n_procs))
        except kit.Invalid as e:
            raise kit.Invalid(f"workflow {wf.name}: {e}") from None
    return out


def judge(outputs: object, workflows: list[Workflow]) -> dict:
    """Trusted side: re-check each schedule of `outputs` ({"schedules": [...]}, one per
    workflow) and replay it in the simulator; the score is -(geometric mean SLR)."""
    plat = platform()
    if not isinstance(outputs, dict) or not isinstance(outputs.get("schedules"), list):
        raise kit.Invalid("outputs must be a dict with a 'schedules' list")
    if len(outputs["schedules"]) != len(workflows):
        raise kit.Invalid(
            f"expected {len(workflows)} schedules (one per workflow), got {len(outputs['schedules'])}"
        )
    checked = checked_schedules(workflows, outputs["schedules"], len(plat["speed"]))
    metrics: dict[str, float] = {}
    logs, slrs, speedups, work_ratios, parts = [], [], [], [], []
    for wf, sched in zip(workflows, checked, strict=True):
        res = simulate(wf, sched, plat)
        span, cp = res["makespan"], cp_bound(wf, plat)
        slr = span / cp
        wr = span / work_bound(wf, plat)
        slrs.append(slr)
        logs.append(math.log(slr))
        speedups.append(sequential_time(wf, plat) / span)
        work_ratios.append(wr)
        metrics[f"slr_{wf.slug}"] = slr
        metrics[f"makespan_s_{wf.slug}"] = span
        parts.append(
            f"{wf.slug}: makespan {span:.2f} s, {slr:.3f} x CP bound {cp:.2f} s, "
            f"{wr:.3f} x work bound, {res['comm_s']:.1f} s of transfers"
        )
    ratio = math.exp(sum(logs) / len(logs))
    metrics = {
        "makespan_ratio": ratio,
        "mean_slr": sum(slrs) / len(slrs),
        "speedup": sum(speedups) / len(speedups),
        "work_ratio": sum(work_ratios) / len(work_ratios),
        **metrics,
    }
    hint = (
        "; ".join(parts) + ". CP bound = longest path of runtime / fastest speed; work bound = "
        "total runtime / total speed (no schedule beats either). makespan_ratio is the geometric "
        "mean of makespan / CP bound."
    )
    return {"score": -ratio, "metrics": metrics, "artifacts": {"hint": hint}}


# ---------------------------------------------------------------- bounds


def cp_bound(wf: Workflow, plat: dict) -> float:
    """Longest path of runtime / max speed, communication ignored (SLR's denominator)."""
    fastest = max(plat["speed"])
    finish = [0.0] * wf.n
    for i in topological_order(wf):
        ready = 0.0
        for j, _ in wf.parents[i]:
            if finish[j] > ready:
                ready = finish[j]
        finish[i] = ready + wf.runtime[i] / fastest
    return max(finish, default=0.0)


def work_bound(wf: Workflow, plat: dict) -> float:
    """All the work spread perfectly over all processors: sum(runtime) / sum(speed)."""
    return sum(wf.runtime) / sum(plat["speed"])


def sequential_time(wf: Workflow, plat: dict) -> float:
    """Every task one after another on the fastest processor (speedup's numerator)."""
    return sum(wf.runtime) / max(plat["speed"])


if __name__ == "__main__":  # a summary of the data, for the README
    plat = platform()
    for split, names in SPLITS.items():
        for name in names:
            with open(os.path.join(os.path.dirname(__file__), "data", name), encoding="utf-8") as f:
                wf = parse_wfformat(name, json.load(f))
            edges = [b for cs in wf.children for _, b in cs]
            print(
                f"{split:5} {wf.slug:24} tasks {wf.n:4} edges {len(edges):4} "
                f"work {sum(wf.runtime):9.1f} s  data {sum(edges) / 1e6:8.1f} MB  "
                f"cp_bound {cp_bound(wf, plat):8.2f}  work_bound {work_bound(wf, plat):8.2f}"
            )
