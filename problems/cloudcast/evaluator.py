"""Evaluator for Cloudcast broadcast (minimise the total cost of sending one dataset to many regions).

Two halves with different trust. `evaluate()` runs inside the sandbox next to
the candidate: it calls plan_broadcast(...) once per configuration of the split,
checks each plan (for an early, precise error) and reports the plans.
`score()` runs in a clean process that never imports the candidate: it reloads
the region graph and the configurations, re-checks every plan and prices it in
the trusted cost model (cloudcast_sim.simulate), so a candidate that patches this
module or the simulator in memory gains nothing.
"""

from __future__ import annotations

import copy
import time

import cloudcast_sim as sim  # the simulator next to this file

from evaluators import kit


def _checked(cfg: sim.Config, plan: object, graph: dict) -> list[set[tuple[str, str]]]:
    try:
        return sim.check_plan(plan, cfg, graph)
    except kit.Invalid as e:
        raise kit.Invalid(f"configuration {cfg.name!r}: {e}") from None


def _as_lists(parts: list[set[tuple[str, str]]]) -> list[list[list[str]]]:
    return [[list(e) for e in sorted(edges)] for edges in parts]


def _plan_all(fn, split: str) -> tuple[dict, dict]:
    """Sandbox side: ask the candidate for one plan per configuration of the split."""
    net = sim.load_network()
    plans, seconds = [], []
    for cfg in sim.load_split(split):
        t = time.perf_counter()
        raw = fn(
            cfg.src,
            list(cfg.dsts),
            copy.deepcopy(net.graph),
            sim.limits(cfg, net.regions),
            cfg.data_vol_gb,
            cfg.num_partitions,
        )
        seconds.append(f"{cfg.name}: {time.perf_counter() - t:.3f}")
        plans.append(_as_lists(_checked(cfg, raw, net.graph)))
    return {"plans": plans}, {"plan_s": ", ".join(seconds)}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "plan_broadcast", _plan_all)


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: re-check each plan and price it in the cost model."""
    net = sim.load_network()
    configs = sim.load_split(split)
    if not isinstance(outputs, dict) or not isinstance(outputs.get("plans"), list):
        raise kit.Invalid("outputs must be a dict with a 'plans' list")
    if len(outputs["plans"]) != len(configs):
        raise kit.Invalid(
            f"expected {len(configs)} plans (one per configuration), got {len(outputs['plans'])}"
        )
    metrics: dict[str, float] = {}
    total = egress = vm = seconds = bound = 0.0
    lines = []
    for cfg, plan in zip(configs, outputs["plans"], strict=True):
        r = sim.simulate(_checked(cfg, plan, net.graph), cfg, net.graph)
        least = sim.min_egress(cfg, net.graph)
        metrics[f"cost_{cfg.name}"] = r.total_cost
        metrics[f"transfer_s_{cfg.name}"] = r.transfer_s
        total += r.total_cost
        egress += r.egress_cost
        vm += r.vm_cost
        seconds += r.transfer_s
        bound += least
        u, v = r.bottleneck
        lines.append(
            f"{cfg.name}: ${r.total_cost:.2f} = egress {r.egress_cost:.2f} + VMs {r.vm_cost:.2f} "
            f"({r.transfer_s:.0f} s, {r.regions} regions, {r.edges} edges, slowest edge {u} -> {v} "
            f"at {r.rates[(u, v)]:.2f} Gbps); least possible egress {least:.2f}"
        )
    metrics.update(
        total_cost=total,
        egress_cost=egress,
        vm_cost=vm,
        transfer_s=seconds,
        egress_lower_bound=bound,
        gap_pct=100.0 * (total - bound) / bound,
    )
    hint = (
        f"total cost ${total:.2f} over {len(configs)} configurations (lower is better):\n"
        + "\n".join(lines)
        + "\nLeast possible egress: data volume x the cheapest Steiner tree from the source "
        "to all destinations (relays allowed); VM cost comes on top."
    )
    return {"score": -total, "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
