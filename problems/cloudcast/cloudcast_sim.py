"""Cloudcast broadcast simulator: the region graph, the configurations, plan checks, cost.

Trusted code shared by `evaluator.evaluate()` (in the sandbox) and `score()` (a
clean process that never loads the candidate); a broken rule raises kit.Invalid.
Written from the Cloudcast paper (NSDI'24) and the cost model of the ADRS case
study's simulator, with the modelling choices README.md lists:

- a region that a plan uses runs VMS_PER_REGION VMs, each VM_PRICE_PER_HOUR, for
  the whole transfer; an edge's throughput is VMS_PER_REGION x the measured
  single-VM iperf3 throughput, a region's ingress/egress limit VMS_PER_REGION x
  its provider's per-VM limit (from the configuration);
- a region whose used out-edges' throughputs sum above its egress limit splits
  that limit equally among them (each edge gets at most limit / count), and the
  same for ingress; both are decided from the measured throughputs, so the
  result does not depend on the order of anything;
- an edge carries the partitions that use it one after another at its rate:
  transfer time = max over used edges of (partitions on it) x (GB per partition)
  x 8 / rate;
- cost = sum over used edges of (partitions on it) x (GB per partition) x price
  + (regions used) x VMS_PER_REGION x VM_PRICE_PER_HOUR x transfer hours.
"""

from __future__ import annotations

import csv
import heapq
import math
import random
from dataclasses import dataclass, replace

from evaluators import kit

VMS_PER_REGION = 2  # ADRS's evaluator: num_vms = 2
VM_PRICE_PER_HOUR = 0.54  # $ per VM-hour: m5.8xlarge spot, the ADRS simulator's figure
GBIT_PER_GB = 8

COST_FILE = "profiles/cost.csv"  # src,dest,cost ($/GB egress)
THROUGHPUT_FILE = "profiles/throughput.csv"  # Skyplane's iperf3 grid (throughput_sent, bit/s)
CONFIG_DIR = "examples/config"
SPLITS = ("train", "test")
CONFIGS = {  # problem.toml's [[data]] `splits` keep the test files from train evaluations
    "train": ("intra_aws", "intra_azure", "intra_gcp"),
    "test": ("inter_agz", "inter_gaz2"),
}


@dataclass(frozen=True)
class Config:
    """One broadcast: a source, its destinations, the data volume and the partitions."""

    name: str
    src: str
    dsts: tuple[str, ...]
    data_vol_gb: float
    num_partitions: int
    ingress_limit: dict  # provider -> Gbps per VM
    egress_limit: dict


@dataclass(frozen=True)
class Network:
    """The region graph: graph[u][v] = {"cost": $/GB, "throughput": Gbps} (for the VMs of a region)."""

    graph: dict
    regions: tuple[str, ...]


# ---------------------------------------------------------------- data


def _read_csv(name: str) -> list[dict]:
    path = kit.data_path(__file__, name)
    try:
        with open(path, newline="", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: data file missing (`evolve data fetch PROBLEM` or "
            f"fetch_data.py downloads it; ${kit.DATA_ENV} points elsewhere)"
        ) from None
    if not rows:
        raise ValueError(f"{path}: no rows (a file held out from this split reads as empty)")
    return rows


def load_network() -> Network:
    """Every measured edge of throughput.csv (in its row order) with its price from cost.csv."""
    price = {(r["src"], r["dest"]): float(r["cost"]) for r in _read_csv(COST_FILE)}
    graph: dict[str, dict[str, dict[str, float]]] = {}
    for r in _read_csv(THROUGHPUT_FILE):
        u, v = r["src_region"], r["dst_region"]
        if u == v:
            continue
        graph.setdefault(u, {})
        graph.setdefault(v, {})
        if (u, v) not in price:
            raise ValueError(f"{THROUGHPUT_FILE}: edge {u} -> {v} has no price in {COST_FILE}")
        gbps = VMS_PER_REGION * float(r["throughput_sent"]) / 1e9
        graph[u][v] = {"cost": price[(u, v)], "throughput": gbps}
    return Network(graph=graph, regions=tuple(graph))


def load_config(name: str) -> Config:
    raw = kit.read_json(kit.data_path(__file__, CONFIG_DIR, name + ".json"))
    return Config(
        name=name,
        src=raw["source_node"],
        dsts=tuple(raw["dest_nodes"]),
        data_vol_gb=float(raw["data_vol"]),
        num_partitions=int(raw["num_partitions"]),
        ingress_limit=dict(raw["ingress_limit"]),
        egress_limit=dict(raw["egress_limit"]),
    )


def load_split(split: str) -> list[Config]:
    """The split's configurations: the published ones, or for `test` under a run's private
    data seed, new broadcasts drawn like them (private_configs)."""
    if split not in CONFIGS:
        raise ValueError(f"unknown split {split!r}; expected one of {list(SPLITS)}")
    public = [load_config(name) for name in CONFIGS[split]]
    if split == "test" and kit.private_data():
        return private_configs(public, load_network().regions)
    return public


PRIVATE_SEED = 4024  # the public part of the private held-out configurations' seed (kit.seed)


def private_configs(public: list[Config], regions: tuple[str, ...]) -> list[Config]:
    """Held-out broadcasts a candidate cannot carry answers for: per published configuration, a
    source drawn from its source's provider's regions and destinations drawn, without the
    source, with the same number per provider (inter_agz: 3 Azure, 2 AWS, 1 GCP); volume, partitions and limits
    unchanged. A configuration that extends an earlier one (inter_gaz2 = inter_agz + one AWS
    region) extends its private draw the same way. Drawn from kit.seed, so the sandbox's
    evaluate() and the trusted score() draw the same, and a candidate cannot."""
    rng = random.Random(kit.seed(PRIVATE_SEED))
    by_provider: dict[str, list[str]] = {}
    for r in regions:
        by_provider.setdefault(provider(r), []).append(r)
    out: list[Config] = []
    for k, cfg in enumerate(public):
        base = next(
            (
                (pub, mine)
                for pub, mine in zip(public[:k], out, strict=True)
                if pub.src == cfg.src and set(pub.dsts) < set(cfg.dsts)
            ),
            None,
        )
        if base is None:
            src, dsts, extra = rng.choice(by_provider[provider(cfg.src)]), [], list(cfg.dsts)
        else:
            src, dsts = base[1].src, list(base[1].dsts)
            extra = [d for d in cfg.dsts if d not in base[0].dsts]
        for d in extra:
            pool = [r for r in by_provider[provider(d)] if r != src and r not in dsts]
            dsts.append(rng.choice(pool))
        out.append(replace(cfg, name=f"private_{k + 1}", src=src, dsts=tuple(dsts)))
    return out


def provider(region: str) -> str:
    return region.split(":", 1)[0]


def limits(cfg: Config, regions: tuple[str, ...]) -> dict[str, dict[str, float]]:
    """{"ingress": {region: Gbps}, "egress": {region: Gbps}} for the VMs of each region."""
    return {
        kind: {r: VMS_PER_REGION * float(table[provider(r)]) for r in regions}
        for kind, table in (("ingress", cfg.ingress_limit), ("egress", cfg.egress_limit))
    }


# ---------------------------------------------------------------- plan checks


def check_plan(plan: object, cfg: Config, graph: dict) -> list[set[tuple[str, str]]]:
    """The plan as one set of edges per partition, or kit.Invalid naming the partition.

    A plan is a list (or tuple) of `num_partitions` edge lists; an edge is a pair
    (u, v) of region names that is an edge of the graph. Duplicates within a
    partition are one edge. Every partition's edges must reach every destination
    from the source.
    """
    if not isinstance(plan, (list, tuple)):
        raise kit.Invalid(
            f"the plan must be a list of {cfg.num_partitions} edge lists "
            f"(one per partition), got {type(plan).__name__}"
        )
    if len(plan) != cfg.num_partitions:
        raise kit.Invalid(
            f"expected {cfg.num_partitions} partitions (one edge list each), got {len(plan)}"
        )
    out = []
    for p, edges in enumerate(plan):
        if not isinstance(edges, (list, tuple)):
            raise kit.Invalid(
                f"partition {p}: expected a list of (u, v) edges, got {type(edges).__name__}"
            )
        chosen: set[tuple[str, str]] = set()
        for e in edges:
            if not (
                isinstance(e, (list, tuple)) and len(e) == 2 and all(isinstance(x, str) for x in e)
            ):
                raise kit.Invalid(
                    f"partition {p}: an edge must be a pair (u, v) of region names, got {_clip(e)}"
                )
            u, v = e
            if u not in graph:
                raise kit.Invalid(f"partition {p}: edge {_clip(e)}: unknown region {u!r}")
            if v not in graph[u]:
                what = f"unknown region {v!r}" if v not in graph else "no such edge in the graph"
                raise kit.Invalid(f"partition {p}: edge {_clip(e)}: {what}")
            chosen.add((u, v))
        reached = _reachable(cfg.src, chosen)
        for d in cfg.dsts:
            if d not in reached:
                raise kit.Invalid(
                    f"partition {p} does not reach destination {d!r} from the source {cfg.src!r}"
                )
        out.append(chosen)
    return out


def _clip(x: object) -> str:
    text = repr(x)
    return text if len(text) <= 120 else text[:117] + "..."


def _reachable(src: str, edges: set[tuple[str, str]]) -> set[str]:
    out: dict[str, list[str]] = {}
    for u, v in edges:
        out.setdefault(u, []).append(v)
    seen, stack = {src}, [src]
    while stack:
        for v in out.get(stack.pop(), ()):
            if v not in seen:
                seen.add(v)
                stack.append(v)
    return seen


# ---------------------------------------------------------------- cost model


@dataclass(frozen=True)
class Result:
    total_cost: float
    egress_cost: float
    vm_cost: float
    transfer_s: float
    regions: int  # regions the plan uses (each runs VMS_PER_REGION VMs)
    edges: int  # distinct edges the plan uses
    bottleneck: tuple[str, str]  # the edge that sets the transfer time
    rates: dict  # edge -> Gbps after the region limits


def edge_rates(loads: dict, cfg: Config, graph: dict) -> dict[tuple[str, str], float]:
    """Each used edge's rate (Gbps): its throughput, capped by equal shares of the limits of
    any region whose used edges' throughputs oversubscribe its egress (or ingress) limit."""
    lim = limits(cfg, tuple({r for e in loads for r in e}))
    outs: dict[str, list[tuple[str, str]]] = {}
    ins: dict[str, list[tuple[str, str]]] = {}
    for e in loads:
        outs.setdefault(e[0], []).append(e)
        ins.setdefault(e[1], []).append(e)

    def shares(groups: dict, table: dict) -> dict[str, float]:
        out = {}
        for r, es in groups.items():
            demand = math.fsum(graph[u][v]["throughput"] for u, v in es)
            out[r] = table[r] / len(es) if demand > table[r] else math.inf
        return out

    out_share, in_share = shares(outs, lim["egress"]), shares(ins, lim["ingress"])
    return {(u, v): min(graph[u][v]["throughput"], out_share[u], in_share[v]) for u, v in loads}


def simulate(parts: list[set[tuple[str, str]]], cfg: Config, graph: dict) -> Result:
    """Cost and transfer time of a checked plan (one edge set per partition)."""
    gb_per_partition = cfg.data_vol_gb / cfg.num_partitions
    loads: dict[tuple[str, str], int] = {}
    for edges in parts:
        for e in sorted(edges):
            loads[e] = loads.get(e, 0) + 1
    rates = edge_rates(loads, cfg, graph)
    times = {e: n * gb_per_partition * GBIT_PER_GB / rates[e] for e, n in loads.items()}
    bottleneck = max(sorted(times), key=lambda e: times[e])
    transfer_s = times[bottleneck]
    egress = math.fsum(n * gb_per_partition * graph[u][v]["cost"] for (u, v), n in loads.items())
    regions = len({r for e in loads for r in e})
    vm = regions * VMS_PER_REGION * VM_PRICE_PER_HOUR * transfer_s / 3600.0
    return Result(
        total_cost=egress + vm,
        egress_cost=egress,
        vm_cost=vm,
        transfer_s=transfer_s,
        regions=regions,
        edges=len(loads),
        bottleneck=bottleneck,
        rates=rates,
    )


# ---------------------------------------------------------------- a lower bound


def min_egress(cfg: Config, graph: dict) -> float:
    """The least egress cost of any valid plan: data volume x the cheapest directed Steiner
    tree (arborescence) from the source spanning every destination (Dreyfus-Wagner dynamic
    programme on prices). Every partition needs such a tree, so no plan pays less egress."""
    terms = list(dict.fromkeys(cfg.dsts))
    k, nodes = len(terms), list(graph)
    # best[mask][v]: cheapest tree rooted at v reaching the terminals in mask
    best = [dict.fromkeys(nodes, math.inf) for _ in range(1 << k)]
    rev: dict[str, list[tuple[str, float]]] = {v: [] for v in nodes}
    for u in nodes:
        for v, e in graph[u].items():
            rev[v].append((u, e["cost"]))
    for i, t in enumerate(terms):
        best[1 << i][t] = 0.0
    for mask in range(1, 1 << k):
        row = best[mask]
        sub = (mask - 1) & mask
        while sub:
            if sub < mask ^ sub:  # each split once
                a, b = best[sub], best[mask ^ sub]
                for v in nodes:
                    s = a[v] + b[v]
                    if s < row[v]:
                        row[v] = s
            sub = (sub - 1) & mask
        heap = [(c, v) for v, c in row.items() if c < math.inf]
        heapq.heapify(heap)
        while heap:  # grow the trees backwards along edges (a reverse Dijkstra)
            c, v = heapq.heappop(heap)
            if c > row[v]:
                continue
            for u, w in rev[v]:
                if c + w < row[u]:
                    row[u] = c + w
                    heapq.heappush(heap, (c + w, u))
    return round(cfg.data_vol_gb * best[(1 << k) - 1][cfg.src], 9)  # drop float noise
