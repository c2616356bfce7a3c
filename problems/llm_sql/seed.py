"""LLM-SQL prefix reuse: order a table's rows and each row's fields (seed: sort by cardinality).

Fixed API (the code outside the EVOLVE block): the evaluator calls
plan_table(columns, data, groups) once per table; it builds `df`, a pandas
DataFrame of strings (every value as written in the CSV file, '' when empty;
index 0..n-1), and calls reorder(df, groups). `groups` lists column groups
(lists of column names) that must stay together, in their order, in every
row (ADRS's col_merge).

reorder returns (row_order, field_orders):
  row_order     every row position 0..n-1 exactly once: the order in which the
                rows are sent to the LLM;
  field_orders  one field order for every row (a list of all column names or
                positions), or a list of n of them, the k-th for row row_order[k].
                Each is a permutation of the columns in which every group is
                contiguous and in its own order.
Lists, tuples or numpy arrays; plan_table turns pandas objects into lists.

Metric (the one the score uses): row k is serialised as the concatenation of
its values in its field order (no separators, no column names); its prefix hit
is the length of its longest common prefix with any earlier row (what a
prefix cache holding every earlier prompt would reuse); hit rate = hit
characters / all characters. Score = 0.95 * mean hit rate over the tables +
0.05 * (12 - min(12, mean seconds per table)) / 12; the seconds are the wall
time of each plan_table call, measured by the evaluator.
"""

import pandas as pd


def field_units(df, groups):
    """The fields as units: each group one unit (its columns in the group's order), placed where
    the first of its columns stands in the table, every other column a unit of its own; a list
    of lists of column names."""
    group_of = {c: list(g) for g in groups for c in g}
    units, done = [], set()
    for c in df.columns:
        unit = group_of.get(c, [c])
        if unit[0] in done:
            continue
        done.update(unit)
        units.append(unit)
    return units


def unit_values(df, units):
    """For each unit, its text in every row (the unit's values concatenated): a list of lists."""
    out = []
    for unit in units:
        text = df[unit[0]].tolist()
        for c in unit[1:]:
            text = [a + b for a, b in zip(text, df[c].tolist(), strict=True)]
        out.append(text)
    return out


# EVOLVE-BLOCK-START
def reorder(df, groups):
    """Sort by cardinality: one field order for every row, the units with the fewest
    distinct values first (ties: table order), then the rows sorted by their values in
    that order, so that rows sharing leading values come out next to each other."""
    units = field_units(df, groups)
    values = unit_values(df, units)
    distinct = [len(set(v)) for v in values]
    ranked = sorted(range(len(units)), key=lambda u: distinct[u])
    keys = list(zip(*(values[u] for u in ranked), strict=True))
    row_order = sorted(range(len(df)), key=keys.__getitem__)
    return row_order, [c for u in ranked for c in units[u]]


# EVOLVE-BLOCK-END


def _plain(x):
    """pandas and numpy values as lists (what travels back to the evaluator best)."""
    if isinstance(x, pd.DataFrame):
        return x.to_numpy().tolist()
    return x.tolist() if hasattr(x, "tolist") else x


def plan_table(columns, data, groups):
    """Called by the evaluator, once per table: data[j] is column j's values (strings)."""
    df = pd.DataFrame(dict(zip(columns, data, strict=True)), columns=list(columns), dtype=object)
    plan = reorder(df, [list(g) for g in groups])
    if not (isinstance(plan, (tuple, list)) and len(plan) == 2):
        return plan  # the evaluator says what is wrong with it
    row_order, field_orders = map(_plain, plan)
    if isinstance(field_orders, list) and field_orders and not isinstance(field_orders[0], str):
        field_orders = [_plain(f) for f in field_orders]
    return row_order, field_orders
