"""Expert-parallel load balancer for MoE inference (baseline: DeepSeek's hierarchical greedy).

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
def balanced_packing(weight: np.ndarray, num_packs: int) -> tuple[np.ndarray, np.ndarray]:
    """Pack each row's n items into num_packs packs of exactly n / num_packs items.

    Greedy: items in decreasing weight, each to the lightest pack that still
    has room. Returns (pack_index, rank_in_pack), both [rows, n].
    """
    rows, n = weight.shape
    per_pack = n // num_packs
    if per_pack == 1:
        idx = np.broadcast_to(np.arange(n), (rows, n)).copy()
        return idx, np.zeros((rows, n), dtype=np.int64)
    pack_index = np.empty((rows, n), dtype=np.int64)
    rank_in_pack = np.empty((rows, n), dtype=np.int64)
    order = np.argsort(-weight, axis=1, kind="stable")
    for r in range(rows):
        loads = [0.0] * num_packs
        counts = [0] * num_packs
        w = weight[r]
        for item in order[r]:
            best = min((p for p in range(num_packs) if counts[p] < per_pack), key=loads.__getitem__)
            pack_index[r, item] = best
            rank_in_pack[r, item] = counts[best]
            loads[best] += w[item]
            counts[best] += 1
    return pack_index, rank_in_pack


def replicate_experts(weight: np.ndarray, num_phy: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Give every expert one slot, then each extra slot to the expert with the
    highest load per replica. Returns phy2log [rows, num_phy], the replica rank
    of each slot [rows, num_phy] and logcnt [rows, n]."""
    rows, n = weight.shape
    phy2log = np.zeros((rows, num_phy), dtype=np.int64)
    rank = np.zeros((rows, num_phy), dtype=np.int64)
    phy2log[:, :n] = np.arange(n)
    logcnt = np.ones((rows, n), dtype=np.int64)
    r = np.arange(rows)
    for i in range(n, num_phy):
        best = np.argmax(weight / logcnt, axis=1)
        phy2log[:, i] = best
        rank[:, i] = logcnt[r, best]
        logcnt[r, best] += 1
    return phy2log, rank, logcnt


def _inverse(perm: np.ndarray) -> np.ndarray:
    inv = np.empty_like(perm)
    np.put_along_axis(inv, perm, np.broadcast_to(np.arange(perm.shape[1]), perm.shape), axis=1)
    return inv


def rebalance_hierarchical(weight, num_physical, num_groups, num_nodes, num_gpus):
    """Groups -> nodes, then replicate within each node, then replicas -> GPUs."""
    layers, experts = weight.shape
    group_size = experts // num_groups
    groups_per_node = num_groups // num_nodes
    phy_per_node = num_physical // num_nodes
    gpus_per_node = num_gpus // num_nodes

    # 1. spread the expert groups over the nodes, balancing the group loads
    group_load = weight.reshape(layers, num_groups, group_size).sum(axis=2)
    group_pack, group_rank = balanced_packing(group_load, num_nodes)
    base = (group_pack * groups_per_node + group_rank) * group_size
    log2mlog = (base[:, :, None] + np.arange(group_size)).reshape(layers, experts)
    mlog2log = _inverse(log2mlog)  # node-major order of the logical experts

    # 2. within each node, replicate the hottest experts into the node's slots
    node_load = np.take_along_axis(weight, mlog2log, axis=1).reshape(layers * num_nodes, -1)
    phy2mlog, phyrank, mlogcnt = replicate_experts(node_load, phy_per_node)

    # 3. within each node, pack the replicas onto its GPUs
    replica_load = np.take_along_axis(node_load / mlogcnt, phy2mlog, axis=1)
    pack_index, rank_in_pack = balanced_packing(replica_load, gpus_per_node)
    phy2pphy = pack_index * (phy_per_node // gpus_per_node) + rank_in_pack
    pphy2phy = _inverse(phy2pphy)
    pphy2mlog = np.take_along_axis(phy2mlog, pphy2phy, axis=1)
    offsets = np.arange(num_nodes) * (experts // num_nodes)
    pphy2mlog = (pphy2mlog.reshape(layers, num_nodes, -1) + offsets[:, None]).reshape(layers, -1)
    phy2log = np.take_along_axis(mlog2log, pphy2mlog, axis=1)
    phyrank = np.take_along_axis(phyrank, pphy2phy, axis=1).reshape(layers, -1)
    logcnt = np.take_along_axis(mlogcnt.reshape(layers, -1), log2mlog, axis=1)
    return phy2log, phyrank, logcnt


def rebalance_experts(weight: np.ndarray, num_replicas: int, num_groups: int,
                      num_nodes: int, num_gpus: int):
    """DeepSeek's EPLB: hierarchical when the groups divide evenly over the
    nodes, else one global pass (as if there were one group and one node)."""
    weight = np.asarray(weight, dtype=np.float64)
    layers, experts = weight.shape
    if num_groups % num_nodes == 0:
        phy2log, phyrank, logcnt = rebalance_hierarchical(
            weight, num_replicas, num_groups, num_nodes, num_gpus)
    else:
        phy2log, phyrank, logcnt = rebalance_hierarchical(weight, num_replicas, 1, 1, num_gpus)
    max_replicas = num_replicas - experts + 1
    log2phy = np.full((layers, experts * max_replicas), -1, dtype=np.int64)
    np.put_along_axis(log2phy, phy2log * max_replicas + phyrank,
                      np.broadcast_to(np.arange(num_replicas), phy2log.shape), axis=1)
    return phy2log, log2phy.reshape(layers, experts, max_replicas), logcnt


# EVOLVE-BLOCK-END
