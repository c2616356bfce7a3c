"""Cloudcast: broadcast a dataset from one cloud region to many at the lowest cost
(seed: the cheapest path to each destination, as in the ADRS case study).

Fixed API (the code outside the EVOLVE block): the evaluator calls
plan_broadcast(src, dsts, graph, limits, data_vol_gb, num_partitions) once per
configuration and scores what it returns:

- src: the source region, e.g. "aws:ap-northeast-1"; dsts: the destination regions;
- graph[u][v] = {"cost": egress price in $/GB, "throughput": Gbps}, for every ordered
  pair of the 71 AWS / Azure / GCP regions (dicts keep the data's order);
- limits["ingress"][region], limits["egress"][region]: how many Gbps a region's VMs
  can receive / send in all;
- data_vol_gb: the data volume (GB), split in num_partitions equal partitions.

Return a plan: a list of num_partitions edge lists, one per partition, each a list
of (u, v) edges of the graph (relays allowed) along which that partition travels;
every partition's edges must reach every destination from the source.

Cost model (the one the score uses; `plan_cost` below implements it): every region
a plan touches runs VMS_PER_REGION VMs at VM_PRICE_PER_HOUR each for the whole
transfer. The used edges out of (into) a region share its egress (ingress) limit:
if their throughputs add up to more than the limit, each gets at most
limit / (number of them). An edge sends the partitions crossing it one after
another at its rate, so transfer time = the slowest edge's
(partitions on it) x (GB per partition) x 8 / rate. Cost = egress
(sum over used edges of partitions on it x GB per partition x price) + VM cost
(regions used x VMS_PER_REGION x VM_PRICE_PER_HOUR x transfer hours).
"""

import heapq
import math

VMS_PER_REGION = 2
VM_PRICE_PER_HOUR = 0.54  # $ per VM-hour


def plan_cost(plan, graph, limits, data_vol_gb):
    """The scoring model: {"total_cost", "egress_cost", "vm_cost", "transfer_s"} of a plan
    (it does not check that the plan reaches every destination)."""
    gb = data_vol_gb / len(plan)
    loads = {}
    for edges in plan:
        for e in set(map(tuple, edges)):
            loads[e] = loads.get(e, 0) + 1
    outs, ins = {}, {}
    for u, v in loads:
        outs.setdefault(u, []).append(graph[u][v]["throughput"])
        ins.setdefault(v, []).append(graph[u][v]["throughput"])

    def share(groups, table):
        return {
            r: table[r] / len(t) if math.fsum(t) > table[r] else math.inf for r, t in groups.items()
        }

    out_share, in_share = share(outs, limits["egress"]), share(ins, limits["ingress"])
    transfer_s = egress = 0.0
    for (u, v), n in loads.items():
        rate = min(graph[u][v]["throughput"], out_share[u], in_share[v])
        transfer_s = max(transfer_s, n * gb * 8 / rate)
        egress += n * gb * graph[u][v]["cost"]
    regions = len({r for e in loads for r in e})
    vm = regions * VMS_PER_REGION * VM_PRICE_PER_HOUR * transfer_s / 3600
    return {
        "total_cost": egress + vm,
        "egress_cost": egress,
        "vm_cost": vm,
        "transfer_s": transfer_s,
    }


# EVOLVE-BLOCK-START
def cheapest_path(graph, src, dst):
    """Dijkstra on egress price; ties go to the route found first (neighbours in graph order)."""
    best, prev, done = {src: 0.0}, {src: None}, set()
    heap, order = [(0.0, 0, src)], 1
    while heap:
        d, _, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        if u == dst:
            break
        for v, e in graph[u].items():
            if v not in done and (v not in best or d + e["cost"] < best[v]):
                best[v], prev[v] = d + e["cost"], u
                heapq.heappush(heap, (d + e["cost"], order, v))
                order += 1
    path = [dst]
    while prev[path[-1]] is not None:
        path.append(prev[path[-1]])
    return path[::-1]


def plan_broadcast(src, dsts, graph, limits, data_vol_gb, num_partitions):
    """Send every partition along the cheapest (egress-price) path to each destination;
    paths that share an edge share its transfer."""
    edges = []
    for dst in dsts:
        path = cheapest_path(graph, src, dst)
        edges += [(path[i], path[i + 1]) for i in range(len(path) - 1)]
    return [list(edges) for _ in range(num_partitions)]


# EVOLVE-BLOCK-END
