"""Readers of DS3's two text formats: job files (task graphs) and SoC files (processing elements).

DS3 (github.com/segemena/DS3) describes an application as `job_<name>.txt`: its tasks
(function name, id, predecessor ids; HEAD/TAIL marks) and `comm_vol src dst volume`
lines; and a system-on-chip as `SoC.<name>.txt`: clusters (`add_new_resource ... capacity
c num_supported_functionalities n`) each followed by n `function execution_time_us` lines
(and power lines we ignore), then `comm_band_self b` and `comm_band cluster cluster b`.
A cluster of capacity c is c identical PEs, as DS3's parser expands it; the MEM cluster
holds no functions and is not a PE. Our own reader, written from the format's description.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Lines of a resource block that are not a function's execution time.
_POWER_KEYS = {
    "opp",
    "trip_freq",
    "DTPM_trip_freq",
    "power_profile",
    "PG_profile",
    "mesh_information",
}


class FormatError(ValueError):
    """A DS3 file that does not read as the format says."""


@dataclass
class App:
    """One application's task graph: tasks 0..n-1, edges carrying a data volume (bits)."""

    name: str
    funcs: list[str]  # function name of each task (the key into the SoC's execution times)
    parents: list[list[tuple[int, int]]]  # per task: (parent, volume)
    children: list[list[tuple[int, int]]] = field(default_factory=list)  # per task: (child, volume)

    @property
    def n(self) -> int:
        return len(self.funcs)


@dataclass
class SoC:
    """Processing elements (one per core) with their execution times and the link bandwidths."""

    pe_names: list[str]  # e.g. "A7_0"
    pe_types: list[str]  # the cluster's resource type, e.g. "LTL", "BIG", "ACC_2"
    exec_us: dict[str, list[float | None]]  # function -> per PE its time in us (None: unsupported)
    band: list[list[float]]  # PE x PE bandwidth; the diagonal is comm_band_self

    @property
    def n(self) -> int:
        return len(self.pe_names)


def _lines(text: str) -> list[list[str]]:
    return [
        ln.split() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
    ]


def parse_job(text: str) -> App:
    """A job_*.txt file as an App (task i = the task declared with id i)."""
    name, funcs, preds, vols = "", {}, {}, {}
    for tok in _lines(text):
        if tok[0] == "job_name":
            name = " ".join(tok[1:])
        elif tok[0] == "comm_vol":
            vols[int(tok[1]), int(tok[2])] = int(tok[3])
        elif (
            tok[0] == "add_new_tasks"
            or len(tok) < 2
            or tok[1] in ("HEAD", "TAIL", "earliest_start")
        ):
            continue
        elif tok[1].isdigit():
            tid = int(tok[1])
            if tid in funcs:
                raise FormatError(f"job {name!r}: task id {tid} declared twice")
            funcs[tid], preds[tid] = tok[0], [int(p) for p in tok[2:]]
        else:
            raise FormatError(f"job {name!r}: cannot read line {' '.join(tok)!r}")
    n = len(funcs)
    if sorted(funcs) != list(range(n)):
        raise FormatError(f"job {name!r}: task ids are not 0..{n - 1}")
    parents = [[(p, vols.get((p, t), 0)) for p in preds[t]] for t in range(n)]
    children: list[list[tuple[int, int]]] = [[] for _ in range(n)]
    for t in range(n):
        for p, v in parents[t]:
            if not 0 <= p < n:
                raise FormatError(f"job {name!r}: task {t} has unknown predecessor {p}")
            children[p].append((t, v))
    return App(name, [funcs[t] for t in range(n)], parents, children)


def parse_soc(text: str) -> SoC:
    """A SoC.*.txt file as a SoC: every cluster expanded to `capacity` PEs, MEM left out."""
    clusters: list[dict] = []  # type, name, capacity, funcs {name: us}, expected count
    band_self, cluster_band = 1.0, {}
    current = None
    for tok in _lines(text):
        if tok[0] == "add_new_resource":
            if len(tok) < 11:
                raise FormatError(f"cannot read resource line {' '.join(tok)!r}")
            current = {"type": tok[2], "name": tok[4], "id": int(tok[6]), "cap": int(tok[8]),
                       "want": int(tok[10]), "got": 0, "funcs": {}}  # fmt: skip
            clusters.append(current)
        elif tok[0] == "comm_band_self":
            band_self = float(tok[1])
        elif tok[0] == "comm_band":
            a, b = int(tok[1]), int(tok[2])
            cluster_band[a, b] = cluster_band[b, a] = float(tok[3])
        elif tok[0] in _POWER_KEYS:
            continue
        elif current is not None and current["got"] < current["want"]:
            current["funcs"][tok[0]] = float(tok[1])
            current["got"] += 1
        else:
            raise FormatError(f"cannot read SoC line {' '.join(tok)!r}")
    pes = [(c, k) for c in clusters if c["type"] != "MEM" for k in range(c["cap"])]
    funcs = sorted({f for c, _ in pes for f in c["funcs"]})
    exec_us = {f: [c["funcs"].get(f) for c, _ in pes] for f in funcs}
    band = [
        [
            band_self if i == j else cluster_band.get((ci["id"], cj["id"]), 1.0)
            for j, (cj, _) in enumerate(pes)
        ]
        for i, (ci, _) in enumerate(pes)
    ]
    return SoC([f"{c['name']}_{k}" for c, k in pes], [c["type"] for c, _ in pes], exec_us, band)
