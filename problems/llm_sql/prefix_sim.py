"""Prefix-cache reuse of a serialised table: the tables, the plan checks, the hit rate.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a
clean process that never loads the candidate); a broken rule raises kit.Invalid.

A *plan* for a table of n rows and m columns is a row order (a permutation of
0..n-1) and, for every row, a field order: a permutation of the m columns in
which every column group (columns that must stay together) is contiguous and in
its own order. Row k of the plan is serialised as the concatenation of its
field values in its field order (no separators, no column names: ADRS's
serialisation). Its prefix hit is the length of the longest common prefix it
shares with any earlier row (what a prefix cache, a trie of the earlier
prompts, would reuse); the hit rate is hit characters / all characters.
Stdlib only.
"""

from __future__ import annotations

import bisect
import csv
import numbers
import random
from dataclasses import dataclass

from evaluators import kit

SPLITS = ("train", "test")
PLAN_NOTE = "a plan is (row_order, field_orders)"


@dataclass(frozen=True)
class Spec:
    name: str
    file: str  # in the data folder; problem.toml's [[data]] has its SHA-256
    groups: tuple[tuple[str, ...], ...]  # columns that must stay together, in this order


TABLES: dict[str, tuple[Spec, ...]] = {
    "train": (
        Spec("beer", "beer.csv", (("beer/beerId", "beer/name"),)),  # ADRS's col_merge
        Spec("planes", "planes.csv", (("manufacturer", "model"),)),
        Spec("weather", "weather.csv", (("year", "month", "day", "hour"),)),
    ),
    "test": (
        Spec("flights", "flights.csv", (("year", "month", "day"), ("carrier", "flight"))),
        Spec("airports", "airports.csv", (("city", "state"),)),
    ),
}


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    data: tuple[tuple[str, ...], ...]  # column-major: data[j][i] is row i's value in column j
    groups: tuple[tuple[str, ...], ...]

    @property
    def n(self) -> int:
        return len(self.data[0]) if self.data else 0


# ---------------------------------------------------------------- tables


def read_table(path: str, spec: Spec) -> Table:
    """A CSV file as text: every value exactly as written in the file ('' when empty)."""
    try:
        with open(path, encoding="utf-8", newline="") as f:
            rows = list(csv.reader(f))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: data file missing (`evolve data fetch PROBLEM` or "
            "problems/llm_sql/fetch_data.py rebuilds it; $EVOLVE_DATA_DIR points elsewhere)"
        ) from None
    if not rows:
        raise ValueError(f"{path}: empty file (a held-out file is empty outside its split)")
    header, body = tuple(rows[0]), rows[1:]
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: duplicate column names")
    bad = next((i for i, r in enumerate(body) if len(r) != len(header)), None)
    if bad is not None:
        raise ValueError(f"{path}: data row {bad} has {len(body[bad])} values, not {len(header)}")
    for g in spec.groups:
        missing = [c for c in g if c not in header]
        if missing:
            raise ValueError(f"{path}: group column {missing[0]!r} is not a column")
    data = tuple(zip(*body, strict=True)) if body else tuple(() for _ in header)
    return Table(spec.name, header, data, spec.groups)


_cache: dict[tuple[str, str], Table] = {}


def tables(split: str, evaluator_file: str = __file__) -> list[Table]:
    """The split's tables, read from the data folder ($EVOLVE_DATA_DIR or data/)."""
    if split not in TABLES:
        raise ValueError(f"unknown split {split!r}; expected one of {SPLITS}")
    out = []
    for spec in TABLES[split]:
        path = kit.data_path(evaluator_file, spec.file)
        key = (path, spec.name)
        if key not in _cache:
            _cache[key] = read_table(path, spec)
        table = _cache[key]
        if split == "test" and kit.private_data():
            table = private_table(table, random.Random(kit.seed(PRIVATE_SEED, spec.name)))
        out.append(table)
    return out


# ---------------------------------------------------------------- private held-out tables

PRIVATE_SEED = 6060  # the public part of the private held-out tables' seed (kit.seed)
PRIVATE_ROWS = (0.6, 0.9)  # the share of the published rows a private table keeps
PRIVATE_SWAP = 0.25  # the chance that a field (a group: all its columns) comes from another row


def private_table(table: Table, rng: random.Random) -> Table:
    """A resampled table of the same dataset, which no carried plan fits: a random share of the
    rows in a random order; in each, every field (a group as one) swapped, with probability
    PRIVATE_SWAP, for the same field of another published row (each column keeps its values
    and their frequencies, rows mostly keep their own); the fields in a random column order
    (each group's columns together, in order)."""
    n = table.n
    keep = rng.sample(range(n), round(n * rng.uniform(*PRIVATE_ROWS)))
    fields = units(table.columns, table.groups)
    source = [[i] * len(fields) for i in keep]  # source[r][u]: the row field u comes from
    for row in source:
        for u in range(len(fields)):
            if rng.random() < PRIVATE_SWAP:
                row[u] = rng.randrange(n)
    perm = list(range(len(fields)))
    rng.shuffle(perm)
    cols = [(j, u) for u in perm for j in fields[u]]
    data = tuple(tuple(table.data[j][row[u]] for row in source) for j, u in cols)
    return Table(table.name, tuple(table.columns[j] for j, _ in cols), data, table.groups)


def units(columns: tuple[str, ...], groups: tuple[tuple[str, ...], ...]) -> list[tuple[int, ...]]:
    """Column positions by unit: each group is one unit, placed where the first of its columns
    stands in the table, every other column a unit of its own; in table order."""
    pos = {c: j for j, c in enumerate(columns)}
    group_of = {pos[c]: tuple(pos[x] for x in g) for g in groups for c in g}
    out, done = [], set()
    for j in range(len(columns)):
        unit = group_of.get(j, (j,))
        if unit[0] in done:
            continue
        done.update(unit)
        out.append(unit)
    return out


def table_order(table: Table) -> tuple[int, ...]:
    """The table's own column order, each group gathered where the first of its columns stands."""
    return tuple(j for unit in units(table.columns, table.groups) for j in unit)


# ---------------------------------------------------------------- plan checks


def _seq(x: object, what: str) -> list:
    if hasattr(x, "tolist") and not isinstance(x, (list, tuple)):
        x = x.tolist()  # numpy arrays
    if not isinstance(x, (list, tuple)):
        raise kit.Invalid(f"{what} must be a list, got {type(x).__name__}")
    return list(x)


def check_rows(order: object, n: int) -> list[int]:
    """The row order as a list of ints if it is a permutation of range(n), else kit.Invalid."""
    order = _seq(order, "row_order")
    for x in order:
        if not isinstance(x, numbers.Integral) or isinstance(x, bool):
            raise kit.Invalid(
                f"row_order: row indices must be ints, got {x!r:.50} ({type(x).__name__})"
            )
    order = [int(x) for x in order]
    if len(order) != n:
        raise kit.Invalid(
            f"row_order: expected {n} row indices, got {len(order)}; every row exactly once"
        )
    out_of_range = next((x for x in order if not 0 <= x < n), None)
    if out_of_range is not None:
        raise kit.Invalid(f"row_order: row {out_of_range} is outside [0, {n})")
    if len(set(order)) != n:
        seen: set[int] = set()
        dup = next(x for x in order if x in seen or seen.add(x))
        missing = min(set(range(n)) - set(order))
        raise kit.Invalid(
            f"row_order: row {dup} appears twice (and {missing} never); "
            "it must be a permutation: every row exactly once"
        )
    return order


class FieldChecker:
    """Turns one row's field order (column names or positions) into checked positions."""

    def __init__(self, table: Table) -> None:
        self.columns = table.columns
        self.m = len(table.columns)
        self.pos = {c: j for j, c in enumerate(table.columns)}
        self.groups = [tuple(self.pos[c] for c in g) for g in table.groups]
        self.seen: dict[tuple, tuple[int, ...]] = {}

    def __call__(self, fields: object, where: str) -> tuple[int, ...]:
        fields = _seq(fields, where)
        key = tuple(fields) if all(type(x) in (int, str) for x in fields) else None
        if key is not None and key in self.seen:
            return self.seen[key]
        out = []
        for x in fields:
            if isinstance(x, str):
                if x not in self.pos:
                    raise kit.Invalid(f"{where}: {x!r:.60} is not a column")
                out.append(self.pos[x])
            elif isinstance(x, numbers.Integral) and not isinstance(x, bool):
                if not 0 <= x < self.m:
                    raise kit.Invalid(f"{where}: column position {int(x)} is outside [0, {self.m})")
                out.append(int(x))
            else:
                raise kit.Invalid(
                    f"{where}: fields must be column names or positions, "
                    f"got {x!r:.50} ({type(x).__name__})"
                )
        if len(out) != self.m or len(set(out)) != self.m:
            missing = [self.columns[j] for j in range(self.m) if j not in out]
            raise kit.Invalid(
                f"{where}: expected each of the {self.m} columns exactly once, got "
                f"{len(out)} fields" + (f" (missing {missing[0]!r})" if missing else "")
            )
        at = {j: k for k, j in enumerate(out)}
        for g in self.groups:
            first = at[g[0]]
            if tuple(out[first : first + len(g)]) != g:
                names = [self.columns[j] for j in g]
                raise kit.Invalid(f"{where}: the columns {names} must stay together, in this order")
        checked = tuple(out)
        if key is not None:
            self.seen[key] = checked
        return checked


def check_plan(raw: object, table: Table) -> tuple[list[int], list[tuple[int, ...]], list[int]]:
    """(row order, distinct field orders, index of each plan row's field order) from what the
    candidate returned for `table`, or kit.Invalid naming the table and the rule."""
    try:
        return _check_plan(raw, table)
    except kit.Invalid as e:
        raise kit.Invalid(f"table {table.name!r}: {e}") from None


def _check_plan(raw: object, table: Table) -> tuple[list[int], list[tuple[int, ...]], list[int]]:
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        got = type(raw).__name__ + (
            f" of length {len(raw)}" if isinstance(raw, (list, tuple)) else ""
        )
        raise kit.Invalid(f"{PLAN_NOTE}, got a {got}")
    rows = check_rows(raw[0], table.n)
    fields = _seq(raw[1], "field_orders")
    check = FieldChecker(table)
    first = fields[0] if fields else None
    if not (isinstance(first, (list, tuple)) or getattr(first, "ndim", 0)):  # one order for all
        return rows, [check(fields, "field_orders (one order for every row)")], [0] * table.n
    if len(fields) != table.n:
        raise kit.Invalid(
            f"field_orders: expected one field order for all rows or one per row "
            f"({table.n}), got {len(fields)}"
        )
    distinct: dict[tuple[int, ...], int] = {}
    which = []
    for k, f in enumerate(fields):
        order = check(f, f"field_orders[{k}] (row {rows[k]})")
        which.append(distinct.setdefault(order, len(distinct)))
    return rows, list(distinct), which


def pack(rows: list[int], orders: list[tuple[int, ...]], which: list[int]) -> dict:
    """A checked plan as JSON-able outputs."""
    return {"rows": rows, "orders": [list(o) for o in orders], "which": which}


def unpack(plan: object, table: Table) -> tuple[list[int], list[tuple[int, ...]], list[int]]:
    """Re-check a plan reported by evaluate() (trusted side); kit.Invalid on anything off."""
    if not isinstance(plan, dict) or plan.get("table") != table.name:
        raise kit.Invalid(f"the plan for table {table.name!r} is missing or out of order")
    try:
        rows = check_rows(plan.get("rows"), table.n)
        check = FieldChecker(table)
        orders = [
            check(o, f"orders[{i}]") for i, o in enumerate(_seq(plan.get("orders"), "orders"))
        ]
        which = _seq(plan.get("which"), "which")
        if len(which) != table.n or not all(type(w) is int and 0 <= w < len(orders) for w in which):
            raise kit.Invalid("'which' must give one field order index per row")
    except kit.Invalid as e:
        raise kit.Invalid(f"table {table.name!r}: {e}") from None
    return rows, orders, which


# ---------------------------------------------------------------- the metric


def serialise(
    table: Table, rows: list[int], orders: list[tuple[int, ...]], which: list[int]
) -> list[str]:
    """The prompts in plan order: each row's values concatenated in its field order."""
    data = table.data
    return ["".join(data[j][i] for j in orders[w]) for i, w in zip(rows, which, strict=True)]


def _lcp(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # binary search on prefix equality: slices compare in C
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def prefix_hits(prompts: list[str]) -> tuple[int, int]:
    """(hit characters, all characters): each prompt's longest common prefix with any
    earlier prompt, as a trie of the earlier ones would give. Among sorted strings, the
    longest common prefix with x is reached at x's neighbours in sorted order."""
    seen: list[str] = []
    hits = total = 0
    for s in prompts:
        i = bisect.bisect_left(seen, s)
        best = _lcp(seen[i - 1], s) if i else 0
        if i < len(seen):
            best = max(best, _lcp(seen[i], s))
        hits += best
        total += len(s)
        seen.insert(i, s)
    return hits, total


def hit_rate(prompts: list[str]) -> float:
    hits, total = prefix_hits(prompts)
    return hits / total if total else 0.0


RUNTIME_CAP_S = 12.0  # ADRS: the runtime term is (12 - min(12, t)) / 12


def combined_score(mean_hit_rate: float, mean_seconds: float) -> float:
    """ADRS's score: 0.95 * hit rate + 0.05 * (12 - min(12, seconds)) / 12."""
    return (
        0.95 * mean_hit_rate
        + 0.05 * (RUNTIME_CAP_S - min(RUNTIME_CAP_S, mean_seconds)) / RUNTIME_CAP_S
    )
