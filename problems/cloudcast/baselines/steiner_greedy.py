"""Greedy Steiner tree (Takahashi-Matsuyama, 1980): grow one tree from the source by
repeatedly joining the destination that is cheapest (in egress price) to reach from any
region already in the tree; every partition uses that tree."""


# EVOLVE-BLOCK-START
def cheapest_from(graph, tree):
    """Dijkstra on egress price from every region of `tree` at once: (price, predecessor)."""
    best, prev, done = {r: 0.0 for r in tree}, {r: None for r in tree}, set()
    heap = [(0.0, i, r) for i, r in enumerate(tree)]
    order = len(heap)
    while heap:
        d, _, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, e in graph[u].items():
            if v not in done and (v not in best or d + e["cost"] < best[v]):
                best[v], prev[v] = d + e["cost"], u
                heapq.heappush(heap, (d + e["cost"], order, v))
                order += 1
    return best, prev


def plan_broadcast(src, dsts, graph, limits, data_vol_gb, num_partitions):
    """Join destinations one at a time along their cheapest path from the tree so far."""
    tree, edges = [src], []
    left = [d for d in dsts if d != src]
    while left:
        best, prev = cheapest_from(graph, tree)
        target = min(left, key=lambda d: best[d])  # ties: the first listed
        path = [target]
        while prev[path[-1]] is not None:
            path.append(prev[path[-1]])
        path.reverse()
        for i in range(len(path) - 1):
            edges.append((path[i], path[i + 1]))
            tree.append(path[i + 1])
        left = [d for d in left if d not in tree]
    return [list(edges) for _ in range(num_partitions)]


# EVOLVE-BLOCK-END
