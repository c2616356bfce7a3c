"""Telemetry-repair simulator: snapshots, the ADRS fault injector, output checks.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a
clean process that never loads the candidate). A snapshot is one row of the
ADRS Abilene data: per directed link, the egress counter at its source router
(that interface's tx) and the ingress counter at its destination (the peer
interface's rx), in Mbps. The fault injector is the ADRS evaluator's,
restated (README.md, "Faults"); scoring lives in telemetry_score.py.
"""

from __future__ import annotations

import ast
import csv
import math
import numbers
import random
from dataclasses import dataclass

import telemetry_synth  # private held-out snapshots, next to this file

from evaluators import kit

TRAIN_FILE, TEST_FILE = "telemetry_train.csv", "telemetry_test.csv"
SPLITS = ("train", "test")
SNAPSHOTS, ADRS_SEED = 40, 42  # the ADRS evaluator: random.seed(42), then sample 30 of 40 rows
TEST_SEED = 2024  # public seed of the held-out faults; a run's private seed replaces it (kit.seed)
BUG_TYPES = ("dropped", "scaled", "correlated_dropped", "correlated_scaled")
FIELDS = ("rx_rate", "tx_rate", "interface_status")
csv.field_size_limit(1 << 24)


@dataclass
class Snapshot:
    """One Abilene snapshot: clean telemetry per interface and its ground truth."""

    name: str  # "2004/03/05 03:00 UTC"
    telemetry: dict[str, dict]  # interface id -> the fields a candidate sees
    truth: dict[str, tuple[float, float]]  # interface id -> (rx, tx)


@dataclass
class Instance:
    """One repair task: faulty telemetry, its topology, and the truth to score against."""

    name: str  # "2004/03/05 03:00 UTC (dropped)"
    bug_type: str
    telemetry: dict[str, dict]
    topology: dict[str, list[str]]
    truth: dict[str, tuple[float, float]]


# ---------------------------------------------------------------- snapshots


def _interface(local: str, remote: str) -> dict:
    return {"interface_status": "up", "rx_rate": 0.0, "tx_rate": 0.0,
            "connected_to": f"{remote}_to_{local}", "local_router": local, "remote_router": remote}  # fmt: skip


def _counter_column(col: str) -> tuple[str, str, str, int] | None:
    """(local router, remote router, field, truth slot) of a counter column, else None."""
    if col.startswith("low_"):
        for sep, field, slot in (("_egress_to_", "tx_rate", 1), ("_ingress_from_", "rx_rate", 0)):
            if sep in col:
                local, remote = col[4:].split(sep)
                return local, remote, field, slot
    return None


def parse_row(row: dict[str, str]) -> Snapshot:
    """A snapshot from one CSV row; interfaces in column order (as the ADRS adapter builds them).

    `low_A_egress_to_B` is the tx of interface A_to_B, `low_A_ingress_from_B` its rx.
    The input value is the cell's `perturbed` (its `ground_truth` when None).
    """
    telemetry: dict[str, dict] = {}
    truth: dict[str, list[float | None]] = {}
    for col, cell in row.items():
        parsed = _counter_column(col or "")
        if parsed is None:
            continue
        local, remote, field, slot = parsed
        value = ast.literal_eval(cell)
        if not isinstance(value, dict) or "ground_truth" not in value:
            raise ValueError(f"{col}: expected a dict with 'ground_truth', got {cell[:60]!r}")
        if_id = f"{local}_to_{remote}"
        telemetry.setdefault(if_id, _interface(local, remote))
        shown = value["perturbed"] if value.get("perturbed") is not None else value["ground_truth"]
        telemetry[if_id][field] = float(shown)
        truth.setdefault(if_id, [None, None])[slot] = float(value["ground_truth"])
    for if_id, (rx, tx) in truth.items():
        if rx is None or tx is None:
            raise ValueError(f"interface {if_id}: needs both an egress and an ingress column")
    return Snapshot(
        row.get("timestamp", "?"), telemetry, {k: (v[0], v[1]) for k, v in truth.items()}
    )


def load_snapshots(file: str) -> list[Snapshot]:
    """Snapshots of a split's data file, in file order."""
    path = kit.data_path(__file__, file)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: data file missing (`evolve data fetch PROBLEM` or "
                                "fetch_data.py downloads it)") from None  # fmt: skip
    if not rows:
        raise ValueError(f"{path}: no snapshots")
    return [parse_row(r) for r in rows]


def topology_of(telemetry: dict[str, dict]) -> dict[str, list[str]]:
    """router -> its interface ids, in interface order (as ADRS builds it)."""
    topology: dict[str, list[str]] = {}
    for if_id, data in telemetry.items():
        topology.setdefault(data["local_router"], []).append(if_id)
    return topology


# ---------------------------------------------------------------- faults


def _scale(rng: random.Random) -> float:
    down, up = rng.uniform(0.5, 0.8), rng.uniform(1.2, 1.5)  # both drawn, then one chosen
    return rng.choice([down, up])


def inject(snap: Snapshot, rng: random.Random, bug_type: str | None = None) -> Instance:
    """ADRS's injector: ±2% noise on every counter, then one bug type (drawn if not given).

    dropped / scaled: each interface, with probability 0.2, has rx and tx zeroed /
    scaled by 0.5-0.8 or 1.2-1.5 (chosen per counter). correlated_*: each router, with
    probability 0.2, has every interface reset to its noiseless value and then zeroed /
    scaled. The draws follow the ADRS evaluator's order exactly.
    """
    if bug_type is None:
        bug_type = rng.choice(list(BUG_TYPES))
    topology = topology_of(snap.telemetry)
    faulty: dict[str, dict] = {}
    for if_id, clean in snap.telemetry.items():
        d = dict(clean)
        d["rx_rate"] *= rng.uniform(0.98, 1.02)
        d["tx_rate"] *= rng.uniform(0.98, 1.02)
        if bug_type == "dropped" and rng.random() < 0.20:
            d["rx_rate"] = d["tx_rate"] = 0
        elif bug_type == "scaled" and rng.random() < 0.20:
            d["rx_rate"] *= _scale(rng)
            d["tx_rate"] *= _scale(rng)
        faulty[if_id] = d
    for if_ids in topology.values():
        if rng.random() < 0.80:
            continue
        for if_id in if_ids:
            if bug_type == "correlated_dropped":
                faulty[if_id] = {**snap.telemetry[if_id], "rx_rate": 0, "tx_rate": 0}
            elif bug_type == "correlated_scaled":
                d = dict(snap.telemetry[if_id])
                d["rx_rate"] *= _scale(rng)
                d["tx_rate"] *= _scale(rng)
                faulty[if_id] = d
    return Instance(f"{snap.name} ({bug_type})", bug_type, faulty, topology, dict(snap.truth))


def held_out_snapshots() -> list[Snapshot]:
    """The public held-out snapshots, or under a run's private seed new ones drawn from them
    (telemetry_synth.py), so that carrying the public data finds nothing to look up."""
    public = load_snapshots(TEST_FILE)
    if not kit.private_data():
        return public
    return telemetry_synth.synthesize(public, kit.seed(TEST_SEED, "snapshots"), Snapshot)


def make_instances(split: str) -> list[Instance]:
    """train: the ADRS evaluator's 30 tasks, exactly; test: 10 held-out snapshots x 4 bug types."""
    if split == "train":
        rng = random.Random(ADRS_SEED)
        rng.sample(range(SNAPSHOTS), 30)  # the rows it picked are the train file, in this order
        return [inject(s, rng) for s in load_snapshots(TRAIN_FILE)]
    if split == "test":
        rng = random.Random(kit.seed(TEST_SEED))
        return [inject(s, rng, bug) for s in held_out_snapshots() for bug in BUG_TYPES]
    raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")


# ---------------------------------------------------------------- output checks


def _number(x: object, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, numbers.Real) or not math.isfinite(float(x)):
        raise kit.Invalid(f"{what} must be a finite number, got {x!r:.50} ({type(x).__name__})")
    return float(x)


def _confidence(x: object, what: str) -> float:
    c = _number(x, f"{what} confidence")
    if not 0.0 <= c <= 1.0:
        raise kit.Invalid(f"{what} confidence must be in [0, 1], got {c!r}")
    return c


def check_field(if_id: str, field: str, value: object, width: int) -> list:
    """[repaired, confidence] of one field; `value` is (original, repaired, confidence) as the
    candidate returns it (width 3) or [repaired, confidence] as evaluate() forwards it (width 2)."""
    what = f"interface {if_id!r} {field}"
    if not isinstance(value, (list, tuple)) or len(value) != width:
        shape = "(original, repaired, confidence)" if width == 3 else "[repaired, confidence]"
        raise kit.Invalid(f"{what}: expected a tuple {shape}, got {value!r:.60}")
    repaired, conf = value[width - 2], value[width - 1]
    if field == "interface_status":
        if not isinstance(repaired, str) or repaired not in ("up", "down"):
            raise kit.Invalid(
                f"{what}: the repaired status must be 'up' or 'down', got {repaired!r:.40}"
            )
        return [str(repaired), _confidence(conf, what)]
    return [_number(repaired, f"{what}: the repaired value"), _confidence(conf, what)]


def check_repair(reply: object, inst: Instance, width: int) -> dict[str, dict[str, list]]:
    """{interface id: {field: [repaired, confidence]}} for every interface of the instance."""
    try:
        if not isinstance(reply, dict):
            raise kit.Invalid(
                f"expected a dict of interface id -> fields, got {type(reply).__name__}"
            )
        out = {}
        for if_id in inst.truth:
            fields = reply.get(if_id)
            if fields is None:
                raise kit.Invalid(
                    f"interface {if_id!r} is missing; return every interface of the input"
                )
            if not isinstance(fields, dict):
                raise kit.Invalid(
                    f"interface {if_id!r}: expected a dict of fields, got {type(fields).__name__}"
                )
            missing = [f for f in FIELDS if f not in fields]
            if missing:
                raise kit.Invalid(f"interface {if_id!r}: {missing[0]!r} is missing")
            out[if_id] = {f: check_field(if_id, f, fields[f], width) for f in FIELDS}
        extra = [k for k in reply if k not in inst.truth]
        if width == 2 and extra:  # evaluate() forwards exactly the snapshot's interfaces
            raise kit.Invalid(f"unexpected interface {extra[0]!r:.60}")
        return out
    except kit.Invalid as e:
        raise kit.Invalid(f"{inst.name}: {e}") from None
