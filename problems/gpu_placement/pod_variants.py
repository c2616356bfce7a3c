"""The held-out pod-list variants' generator (stdlib only), shared by fetch_data.py, which
writes the published variant files with the public seeds below, and placement_sim.py, which
draws a run's private variants from the default list under the run's data seed (kit.seed).

In the spirit of the trace's own variants (openb_pod_list_gpushare*, multigpu*, gpuspec*):

- gpushare: 60% of the pods are GPU-sharing pods (one GPU, gpu_milli < 1000), the others
  drawn from the rest of the list.
- multigpu: 10% of the pods are multi-GPU pods (2 to 8 GPUs).
- gpuspec: 33% of the GPU pods require a GPU model (G2, G3, P100, T4 or V100M16|V100M32,
  drawn in proportion to the cluster's GPUs of that model among the models whose nodes have
  enough GPUs). The published file constrains the default list itself; a private variant
  constrains a resample of it (every slot drawn from all pods), so that its pods are not the
  train list's, in the train list's order.

A resampled list keeps the default list's creation times slot by slot: slot k (the k-th pod
by creation time) gets a pod drawn with replacement from the favoured class with probability
p, else from the other pods; the drawn pod keeps its cpu, memory, GPU demand and lifetime
(deletion - creation), and is renamed gen-<variant>-<k>.
"""

from __future__ import annotations

import random

# variant -> (public seed, favoured class, share of slots); gpuspec: (seed, None, share of
# the GPU pods constrained)
RECIPES: dict[str, tuple[int, str | None, float]] = {
    "gpushare": (2023_06, "gpushare", 0.60),
    "multigpu": (2023_10, "multigpu", 0.10),
    "gpuspec": (2023_33, None, 0.33),
}
SPECS = ("G2", "G3", "P100", "T4", "V100M16|V100M32")


def pod_class(row: dict) -> str:
    n, m = int(row["num_gpu"]), int(row["gpu_milli"])
    if n >= 2:
        return "multigpu"
    if n == 1 and m < 1000:
        return "gpushare"
    return "other"


def resample(pods: list[dict], variant: str, seed: int, share: float) -> list[dict]:
    """Slot k of the default list's creation order gets a pod of class `variant` with
    probability `share`, else one of the others (all pods where no pod is of that class)."""
    rng = random.Random(seed)
    favoured = [r for r in pods if pod_class(r) == variant]
    rest = [r for r in pods if pod_class(r) != variant]
    slots = sorted(pods, key=lambda r: int(r["creation_time"]))
    out = []
    for k, slot in enumerate(slots):
        pod = rng.choice(favoured if rng.random() < share else rest)
        t = int(slot["creation_time"])
        life = int(pod["deletion_time"]) - int(pod["creation_time"])
        out.append(
            {
                **pod,
                "name": f"gen-{variant}-{k:04d}",
                "creation_time": t,
                "deletion_time": t + life,
                "scheduled_time": t,
            }
        )
    return out


def constrain(pods: list[dict], nodes: list[dict], seed: int, share: float) -> list[dict]:
    """The pods, `share` of the GPU pods with a gpu_spec drawn in proportion to the GPUs of
    each model among the models with a node that has enough GPUs for the pod."""
    rng = random.Random(seed)
    gpus = {spec: 0 for spec in SPECS}
    most = {spec: 0 for spec in SPECS}  # the most GPUs one node of the spec has
    for node in nodes:
        for spec in SPECS:
            if node["model"] in spec.split("|"):
                gpus[spec] += int(node["gpu"])
                most[spec] = max(most[spec], int(node["gpu"]))
    out = []
    for pod in pods:
        pod = dict(pod)
        n = int(pod["num_gpu"])
        if n > 0 and rng.random() < share:
            specs = [s for s in SPECS if most[s] >= n]
            pod["gpu_spec"] = rng.choices(specs, weights=[gpus[s] for s in specs])[0]
        out.append(pod)
    return out


def published(variant: str, pods: list[dict], nodes: list[dict]) -> list[dict]:
    """The published variant (fetch_data.py writes it), from the public seed."""
    seed, favoured, share = RECIPES[variant]
    if favoured is None:
        return constrain(pods, nodes, seed, share)
    return resample(pods, favoured, seed, share)


def private(variant: str, pods: list[dict], nodes: list[dict], seed: int) -> list[dict]:
    """A run's private variant, drawn from `seed` (kit.seed of the public one)."""
    _, favoured, share = RECIPES[variant]
    if favoured is None:
        rng = random.Random(seed)
        drawn = resample(pods, variant, rng.getrandbits(63), 0.0)
        return constrain(drawn, nodes, rng.getrandbits(63), share)
    return resample(pods, favoured, seed, share)
