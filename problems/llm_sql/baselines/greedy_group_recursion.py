"""Baseline: Greedy Group Recursion (GGR), Algorithm 1 of "Optimizing LLM Queries in Relational
Data Analytics Workloads" (Liu et al., MLSys 2025), without functional dependencies; column
groups are single fields (their values concatenated), as ADRS's col_merge makes them. Only the
EVOLVE-BLOCK; evolve eval completes it with seed.py's fixed code."""

# EVOLVE-BLOCK-START
import heapq


def reorder(df, groups):
    """GGR. On a sub-table (rows x remaining fields): take the (field, value) with the largest
    hit count len(value)^2 * (rows holding it - 1), ties to the earlier field then the value
    met first; the rows holding it come next, that field first, then GGR on them over the
    other fields; then GGR goes on with the rows left (all fields). One row: fields in table
    order; one field: rows sorted by it. The paper's recursion on the rows left is a loop
    here, over a max-heap of hit counts updated lazily as rows leave (same choices, fast)."""
    units = field_units(df, groups)
    values = unit_values(df, units)
    row_order, row_units = [], []

    def emit(rows, fields):
        row_order.extend(rows)
        row_units.extend([fields] * len(rows))

    def ggr(rows, avail, prefix):
        # rows: ascending row ids; avail: unit ids in table order; prefix: units already placed
        if len(avail) == 1:
            col = values[avail[0]]
            emit(sorted(rows, key=col.__getitem__), prefix + avail)
            return
        if len(rows) == 1:
            emit(rows, prefix + avail)
            return
        holders = {}
        for u in avail:
            col = values[u]
            for i in rows:
                holders.setdefault((u, col[i]), []).append(i)
        heap = [(-(len(v) ** 2) * (len(m) - 1), u, m[0], v) for (u, v), m in holders.items()]
        heapq.heapify(heap)
        taken = set()
        while heap:
            neg, u, first, v = heapq.heappop(heap)
            members = [i for i in holders[(u, v)] if i not in taken]
            if not members:
                continue
            key = (-(len(v) ** 2) * (len(members) - 1), u, members[0])
            if key != (neg, u, first):  # stale: rows left since it was pushed
                holders[(u, v)] = members
                heapq.heappush(heap, (*key, v))
                continue
            taken.update(members)
            ggr(members, [a for a in avail if a != u], prefix + [u])

    ggr(list(range(len(df))), list(range(len(units))), [])
    orders = {}
    field_orders = []
    for fields in row_units:
        key = tuple(fields)
        if key not in orders:
            orders[key] = [c for w in key for c in units[w]]
        field_orders.append(orders[key])
    return row_order, field_orders


# EVOLVE-BLOCK-END
