"""Baseline: round robin, blind to the loads. Only the EVOLVE-BLOCK; evolve eval completes
it with seed.py's fixed code."""

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
