"""How OpenEvolve 0.4 turns a dict of metrics into one fitness.

Standalone (stdlib only): the harness also loads this file by path to score OpenEvolve
evaluators, so a program's score here and in OpenEvolve come from the same rule.
"""

from __future__ import annotations

import math


def _value(v: object) -> float | None:
    """A metric counts when it is an int or float, but not a bool (a flag is not a
    score) and not NaN."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if math.isnan(f) else f


def safe_numeric_average(metrics: dict) -> float:
    """The mean of the numeric metrics; 0.0 when there is none."""
    values = [f for f in map(_value, (metrics or {}).values()) if f is not None]
    return sum(values) / len(values) if values else 0.0


def safe_numeric_sum(metrics: dict) -> float:
    """The sum of the numeric metrics (bools count here, as in OpenEvolve)."""
    total = 0.0
    for v in (metrics or {}).values():
        if isinstance(v, (int, float)):
            try:
                f = float(v)
            except (TypeError, ValueError, OverflowError):
                continue
            if not math.isnan(f):
                total += f
    return total


def get_fitness_score(metrics: dict, feature_dimensions: list | None = None) -> float:
    """`combined_score` when it reads as a number, else the mean of the numeric metrics
    that are not MAP-Elites feature dimensions (all of them if nothing else is left)."""
    if not metrics:
        return 0.0
    if "combined_score" in metrics:
        try:
            return float(metrics["combined_score"])
        except (TypeError, ValueError):
            pass
    dims = set(feature_dimensions or ())
    rest = {k: v for k, v in metrics.items() if k not in dims and _value(v) is not None}
    return safe_numeric_average(rest) if rest else safe_numeric_average(metrics)
