"""Direct: every partition goes straight from the source to each destination (no relays)."""


# EVOLVE-BLOCK-START
def plan_broadcast(src, dsts, graph, limits, data_vol_gb, num_partitions):
    """One edge src -> dst per destination, the same for every partition."""
    return [[(src, dst) for dst in dsts] for _ in range(num_partitions)]


# EVOLVE-BLOCK-END
