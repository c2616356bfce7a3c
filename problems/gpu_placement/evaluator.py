"""Evaluator for GPU-sharing pod placement on a heterogeneous cluster (Alibaba GPU trace 2023).

Two halves with different trust. `evaluate()` runs inside the sandbox and calls
place() in the candidate's own, confined process (the kit's proxy) once per
arriving pod that fits somewhere; it sees copies of the cluster's free
resources, never this module, the data files or the pods to come, and it only
reports the decision per pod. `score()` runs on the trusted side, never
imports the candidate, rebuilds the workload and replays every decision in a
fresh simulator, which re-checks each one (node exists and fits, GPU model
allowed, chosen GPUs exist and have room) and computes the metrics.

The cluster, the workloads and the simulator are in placement_sim.py (its
docstring describes the simulator).
"""

from __future__ import annotations

import math

import numpy as np
import placement_sim as sim  # the simulator next to this file

from evaluators import kit


def _run(place, split: str) -> tuple[dict, dict]:
    """Sandbox side: call the candidate for each pod that fits somewhere, log its decisions."""
    place = kit.proxy(place)
    nodes = sim.load_nodes()
    out, pods = [], 0
    for w in sim.make_workloads(split):
        target = sim.target_workload(w)

        def decide(
            i: int, fits: np.ndarray, cluster: sim.Cluster, w: sim.Workload = w, target=target
        ):
            return place(
                sim.pod_view(w, i), cluster.view(fits), {k: v.copy() for k, v in target.items()}
            )

        decisions, _ = sim.simulate(nodes, w, decide)
        out.append(decisions)
        pods += len(w)
    return {"decisions": out}, {"workloads": len(out), "pods": pods}


def evaluate(program_path: str, split: str) -> dict:
    return kit.evaluate(program_path, split, "place", _run)


def _parse(outputs: object, workloads: list[sim.Workload]) -> list[list[list[int]]]:
    if not isinstance(outputs, dict) or not isinstance(outputs.get("decisions"), list):
        raise kit.Invalid("outputs must be a dict with a 'decisions' list")
    got = outputs["decisions"]
    if len(got) != len(workloads):
        raise kit.Invalid(f"expected decisions for {len(workloads)} workloads, got {len(got)}")
    for w, d in zip(workloads, got, strict=True):
        if not isinstance(d, list) or len(d) != len(w):
            raise kit.Invalid(f"{w.name}: expected a list of {len(w)} decisions, one per pod")
        for k, x in enumerate(d):
            if not (isinstance(x, list) and x and all(type(v) is int for v in x)):
                raise kit.Invalid(f"{w.name}, pod {k}: a decision is a non-empty list of ints")
    return got


def _judge(outputs: object, split: str) -> dict:
    """Trusted side: replay every logged decision in a fresh simulator and score it."""
    nodes = sim.load_nodes()
    workloads = sim.make_workloads(split)
    logged = _parse(outputs, workloads)
    per: list[dict[str, float]] = []
    for w, d in zip(workloads, logged, strict=True):

        def decide(i: int, fits: np.ndarray, cluster: sim.Cluster, d: list = d):
            return (d[i][0], d[i][1:])

        try:
            replayed, m = sim.simulate(nodes, w, decide)
        except kit.Invalid as e:
            raise kit.Invalid(f"replay: {e}") from None
        if replayed != d:  # a pod logged as auto-rejected that in fact fits somewhere, or so
            pos = next(j for j, (a, b) in enumerate(zip(replayed, d, strict=True)) if a != b)
            raise kit.Invalid(f"replay: {w.name}, pod {pos}: logged {d[pos]}, but it fits no node")
        per.append(m)
    metrics = {key: float(np.mean([m[key] for m in per])) for key in per[0]}
    for key in ("rejected_pods", "rejected_gpu_pods"):
        metrics[key] = float(sum(m[key] for m in per))
    if len(workloads) > 1:
        for w, m in zip(workloads, per, strict=True):
            metrics[f"allocated_gpu_pct_{w.name}"] = m["allocated_gpu_pct"]
            metrics[f"fragmentation_pct_{w.name}"] = m["fragmentation_pct"]
    parts = "; ".join(
        f"{w.name}: {m['allocated_gpu_pct']:.2f}% of GPU demand placed, "
        f"{int(m['rejected_gpu_pods'])} GPU pods rejected, fragmentation {m['fragmentation_pct']:.2f}% "
        f"of GPU capacity, utilisation {m['gpu_util_pct']:.1f}%"
        for w, m in zip(workloads, per, strict=True)
    )
    hint = (
        f"{parts}. Fragmentation (FGD, ATC'23) counts idle GPU shares that the frequent pod shapes "
        "could not use; placing pods where they add the least fragmentation keeps whole GPUs free "
        "for whole-GPU and multi-GPU pods."
    )
    if not math.isfinite(metrics["allocated_gpu_pct"]):
        raise kit.Invalid("no GPU demand in the workload")
    return {"score": metrics["allocated_gpu_pct"], "metrics": metrics, "artifacts": {"hint": hint}}


def score(outputs: object, split: str) -> dict:
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":
    raise SystemExit(kit.main(__name__, sim.SPLITS))
