"""Expert-parallel load balancer for MoE inference (baseline: round robin).

Fixed API (the code outside the EVOLVE block): the evaluator calls
rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_gpus) once
per window of recorded expert loads. `weight` is a float64 array
[num_layers, num_experts] (tokens routed to each logical expert in the last
window). Return (phy2log, log2phy, logcnt), integer numpy arrays:
  phy2log [num_layers, num_replicas]: the logical expert held by each physical
          slot; slot p sits on GPU p // (num_replicas // num_gpus), and GPUs
          are spread evenly over the nodes in order;
  log2phy [num_layers, num_experts, max_replicas]: each expert's slots, padded
          with -1 (any max_replicas >= the largest count works);
  logcnt  [num_layers, num_experts]: each expert's replica count.
The placement is scored on the NEXT window's loads: an expert's load is split
evenly over its replicas and a GPU's load is the sum over its slots.
rebalance_experts must be a deterministic function of its arguments.
"""

import numpy as np


# EVOLVE-BLOCK-START
def rebalance_experts(weight: np.ndarray, num_replicas: int, num_groups: int,
                      num_nodes: int, num_gpus: int):
    """Round robin: slot p holds expert p mod num_experts, whatever the loads.

    The first num_replicas - num_experts experts get a second replica; the
    loads, groups and nodes are ignored.
    """
    layers, experts = np.shape(weight)
    slots = np.arange(num_replicas)
    expert_of = slots % experts
    rank = slots // experts
    counts = np.bincount(expert_of, minlength=experts)
    table = np.full((experts, int(counts.max())), -1, dtype=np.int64)
    table[expert_of, rank] = slots
    phy2log = np.tile(expert_of, (layers, 1))
    log2phy = np.tile(table, (layers, 1, 1))
    logcnt = np.tile(counts, (layers, 1))
    return phy2log, log2phy, logcnt


# EVOLVE-BLOCK-END
