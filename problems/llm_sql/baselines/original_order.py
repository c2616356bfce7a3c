"""Baseline: the table as stored. Only the EVOLVE-BLOCK; evolve eval completes it with seed.py's
fixed code (pandas, field_units, unit_values, plan_table)."""


# EVOLVE-BLOCK-START
def reorder(df, groups):
    """The rows in their stored order, every row with the table's column order (each group
    gathered where the first of its columns stands, in its own order)."""
    return list(range(len(df))), [c for unit in field_units(df, groups) for c in unit]


# EVOLVE-BLOCK-END
