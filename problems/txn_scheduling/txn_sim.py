"""Transaction-scheduling simulator: workloads, the makespan cost model, bounds.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a
clean process that never loads the candidate); a broken rule raises kit.Invalid.
The cost model is the VLDB'24 simulator's, as used by ADRS, stated in seed.py's
docstring (`Timeline` there is the candidate's copy of `start_times` below).
"""

from __future__ import annotations

import bisect
import itertools
import numbers
import random

from evaluators import kit

Op = tuple[str, str]  # ("r", key) | ("w", key) | ("*", "")
Txn = list[Op]

DATA_FILE = "adrs_workloads.json"  # in the data folder; problem.toml's [[data]] has its SHA-256
TXNS_PER_WORKLOAD = 100


# ---------------------------------------------------------------- cost model


def parse_ops(text: str) -> Txn:
    """'w-17 r-5 *' -> [('w', '17'), ('r', '5'), ('*', '')]."""
    ops: Txn = []
    for tok in text.split():
        if tok == "*":
            ops.append(("*", ""))
        elif tok[:2] in ("r-", "w-") and len(tok) > 2:
            ops.append((tok[0], tok[2:]))
        else:
            raise ValueError(f"bad operation {tok!r}: expected r-KEY, w-KEY or *")
    return ops


def start_times(txns: list[Txn], order: list[int]) -> list[int]:
    """Start time of each transaction (indexed like txns) when placed in `order`."""
    last_read: dict[str, int] = {}
    last_write: dict[str, int] = {}
    starts = [0] * len(txns)
    for t in order:
        ops = txns[t]
        start = 1
        for j, (kind, key) in enumerate(ops):
            if kind == "w":
                bound = max(last_write.get(key, 0), last_read.get(key, 0))
            elif kind == "r":
                bound = last_write.get(key, 0)
            else:
                continue
            start = max(start, bound - j + 1)
        for j, (kind, key) in enumerate(ops):
            if kind == "*":
                continue
            table = last_write if kind == "w" else last_read
            if table.get(key, 0) < start + j:
                table[key] = start + j
        starts[t] = start
    return starts


def makespan(txns: list[Txn], order: list[int]) -> int:
    """The time the last transaction ends; 0 for an empty workload."""
    starts = start_times(txns, order)
    return max((starts[t] + len(txns[t]) - 1 for t in order), default=0)


def lower_bounds(txns: list[Txn]) -> tuple[int, int]:
    """(longest transaction, key bound), two lower bounds on any order's makespan.

    Key bound: on one key, all write operations run at distinct times, and any
    read of it runs at a time no write of it uses, so the makespan is at least
    max over keys of (#writes + 1 if the key is also read).
    """
    longest = max((len(t) for t in txns), default=0)
    writes: dict[str, int] = {}
    reads: set[str] = set()
    for t in txns:
        for kind, key in t:
            if kind == "w":
                writes[key] = writes.get(key, 0) + 1
            elif kind == "r":
                reads.add(key)
    key_bound = max((n + (key in reads) for key, n in writes.items()), default=0)
    return longest, key_bound


def check_order(order: object, n: int) -> list[int]:
    """The order as a list of ints if it is a permutation of range(n), else kit.Invalid."""
    if hasattr(order, "tolist") and not isinstance(order, (list, tuple)):
        order = order.tolist()  # numpy arrays
    if not isinstance(order, (list, tuple)):
        raise kit.Invalid(f"expected a list of {n} transaction indices, got {type(order).__name__}")
    for x in order:
        if not isinstance(x, numbers.Integral) or isinstance(x, bool):
            raise kit.Invalid(f"transaction indices must be ints, got {x!r:.50} ({type(x).__name__})")
    order = [int(x) for x in order]
    if len(order) != n:
        raise kit.Invalid(f"expected {n} transaction indices, got {len(order)}; "
                       "every transaction must appear exactly once")
    out_of_range = [x for x in order if not 0 <= x < n]
    if out_of_range:
        raise kit.Invalid(f"index {out_of_range[0]} is outside [0, {n})")
    seen: set[int] = set()
    dup = next((x for x in order if x in seen or seen.add(x)), None)
    if dup is not None:
        missing = min(set(range(n)) - set(order))
        raise kit.Invalid(f"transaction {dup} appears twice (and {missing} never); the order must be "
                       "a permutation: every transaction exactly once")
    return list(order)


# ---------------------------------------------------------------- train data


def load_adrs_workloads() -> list[tuple[str, list[Txn]]]:
    """The ADRS case study's three workloads (100 transactions each), from the data folder."""
    workloads = kit.read_json(kit.data_path(__file__, DATA_FILE))["workloads"]
    return [(name.lower(), [parse_ops(ops) for ops in txns.values()]) for name, txns in workloads.items()]


# ---------------------------------------------------------------- test generators
# Seeded, scaled-down versions of the access patterns of three OLTP benchmarks,
# 100 transactions each. `*` stands for work that touches no shared key
# (inserting a fresh row, computing); keys are strings.


def _zipf_sampler(rng: random.Random, n: int, theta: float):
    cum = list(itertools.accumulate(1.0 / (i + 1) ** theta for i in range(n)))
    perm = list(range(n))
    rng.shuffle(perm)  # hot keys are not simply the low ids

    def draw() -> int:
        return perm[min(bisect.bisect_left(cum, rng.random() * cum[-1]), n - 1)]

    return draw


def tpcc(seed: int, warehouses: int = 1, n: int = TXNS_PER_WORKLOAD, items: int = 200) -> list[Txn]:
    """TPC-C-like mix: NewOrder 45%, Payment 43%, OrderStatus, Delivery, StockLevel 4% each.

    Per warehouse w: W (ytd, written by Payment), 10 districts D (next order id,
    ytd), 30 customers per district, new-order queues NO per district, stock S
    per item; items I are read-only. NewOrder orders 3-8 items (TPC-C: 5-15).
    """
    rng = random.Random(seed)
    item = _zipf_sampler(rng, items, 0.6)
    txns: list[Txn] = []
    for _ in range(n):
        w = rng.randrange(warehouses)
        d = rng.randrange(10)
        c = rng.randrange(30)
        kind = rng.choices(["new_order", "payment", "order_status", "delivery", "stock_level"],
                           [45, 43, 4, 4, 4])[0]
        if kind == "new_order":
            ops: Txn = [("r", f"W{w}"), ("r", f"D{w}.{d}"), ("w", f"D{w}.{d}"), ("r", f"C{w}.{d}.{c}")]
            chosen: list[int] = []
            count = rng.randint(3, 8)
            while len(chosen) < count:
                i = item()
                if i not in chosen:
                    chosen.append(i)
            for i in chosen:
                ops += [("r", f"I{i}"), ("r", f"S{w}.{i}"), ("w", f"S{w}.{i}"), ("*", "")]
            ops += [("*", ""), ("w", f"NO{w}.{d}")]
        elif kind == "payment":
            ops = [("r", f"W{w}"), ("w", f"W{w}"), ("r", f"D{w}.{d}"), ("w", f"D{w}.{d}"),
                   ("r", f"C{w}.{d}.{c}"), ("w", f"C{w}.{d}.{c}"), ("*", "")]
        elif kind == "order_status":
            ops = [("r", f"C{w}.{d}.{c}"), ("*", ""), ("*", ""), ("*", "")]
        elif kind == "delivery":
            ops = []
            for dd in range(10):
                ops += [("r", f"NO{w}.{dd}"), ("w", f"NO{w}.{dd}"),
                        ("w", f"C{w}.{dd}.{rng.randrange(30)}")]
        else:  # stock_level
            ops = [("r", f"D{w}.{d}")] + [("r", f"S{w}.{item()}") for _ in range(10)]
        txns.append(ops)
    return txns


def ycsb(seed: int, n: int = TXNS_PER_WORKLOAD, keys: int = 1000, theta: float = 0.9,
         ops_per_txn: int = 10, read_frac: float = 0.5, rmw: bool = False) -> list[Txn]:
    """YCSB-like: each transaction touches `ops_per_txn` Zipfian keys; each access is a read
    (probability read_frac) or else a blind write, or with rmw a read-modify-write (r then w)."""
    rng = random.Random(seed)
    key = _zipf_sampler(rng, keys, theta)
    txns: list[Txn] = []
    for _ in range(n):
        ops: Txn = []
        for _ in range(ops_per_txn):
            k = f"k{key()}"
            if rng.random() < read_frac:
                ops.append(("r", k))
            elif rmw:
                ops += [("r", k), ("w", k)]
            else:
                ops.append(("w", k))
        txns.append(ops)
    return txns


def smallbank(seed: int, n: int = TXNS_PER_WORKLOAD, accounts: int = 1000, hot: int = 10,
              hot_prob: float = 0.5) -> list[Txn]:
    """SmallBank-like: customers with an account row A (read-only), savings S and checking C.

    Mix (BenchBase's default weights): Amalgamate 15, Balance 15, DepositChecking 15,
    SendPayment 25, TransactSavings 15, WriteCheck 15. A customer is one of the
    `hot` hotspot accounts with probability hot_prob, else uniform.
    """
    rng = random.Random(seed)

    def cust(exclude: int = -1) -> int:
        while True:
            c = rng.randrange(hot) if rng.random() < hot_prob else rng.randrange(accounts)
            if c != exclude:
                return c

    txns: list[Txn] = []
    kinds = ["amalgamate", "balance", "deposit_checking", "send_payment", "transact_savings", "write_check"]
    for _ in range(n):
        kind = rng.choices(kinds, [15, 15, 15, 25, 15, 15])[0]
        a = cust()
        if kind == "amalgamate":
            b = cust(a)
            ops: Txn = [("r", f"A{a}"), ("r", f"A{b}"), ("r", f"S{a}"), ("r", f"C{a}"), ("*", ""),
                        ("w", f"S{a}"), ("w", f"C{a}"), ("r", f"C{b}"), ("w", f"C{b}")]
        elif kind == "balance":
            ops = [("r", f"A{a}"), ("r", f"S{a}"), ("r", f"C{a}"), ("*", "")]
        elif kind == "deposit_checking":
            ops = [("r", f"A{a}"), ("r", f"C{a}"), ("*", ""), ("w", f"C{a}")]
        elif kind == "send_payment":
            b = cust(a)
            ops = [("r", f"A{a}"), ("r", f"A{b}"), ("r", f"C{a}"), ("*", ""), ("w", f"C{a}"),
                   ("r", f"C{b}"), ("w", f"C{b}")]
        elif kind == "transact_savings":
            ops = [("r", f"A{a}"), ("r", f"S{a}"), ("*", ""), ("w", f"S{a}")]
        else:  # write_check
            ops = [("r", f"A{a}"), ("r", f"S{a}"), ("r", f"C{a}"), ("*", ""), ("w", f"C{a}")]
        txns.append(ops)
    return txns


# split "test": name -> generator call; held out, never shown in a prompt. The seeds are
# public; a run draws its held-out workloads under its private seed (kit.seed).
TEST_WORKLOADS = {
    "tpcc_1wh": lambda: tpcc(seed=kit.seed(301), warehouses=1),
    "tpcc_2wh": lambda: tpcc(seed=kit.seed(302), warehouses=2),
    "ycsb_a": lambda: ycsb(seed=kit.seed(303), theta=0.9, read_frac=0.5),
    "ycsb_rmw": lambda: ycsb(seed=kit.seed(304), theta=0.8, ops_per_txn=6, read_frac=0.3, rmw=True),
    "smallbank_hot": lambda: smallbank(seed=kit.seed(305), hot_prob=0.75),
    "smallbank_uniform": lambda: smallbank(seed=kit.seed(306), accounts=30, hot_prob=0.0),
}
SPLITS = ("train", "test")


def make_workloads(split: str) -> list[tuple[str, list[Txn]]]:
    """[(workload name, transactions)] of a split."""
    if split == "train":
        return load_adrs_workloads()
    if split == "test":
        return [(name, make()) for name, make in TEST_WORKLOADS.items()]
    raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
