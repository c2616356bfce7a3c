"""The reference an OpenEvolve-format folder is held to, written apart from evolve's
own code: evaluate() called in its folder as a user calls it, scored by OpenEvolve 0.4's
rule. Shared by tests/test_openevolve_folders.py and bench/openevolve_compat.py."""

from __future__ import annotations

import math

# Run in the fixture's folder: evaluate() called as a user would, the result written to a
# file (the evaluator may print to stdout). Values OpenEvolve would not count as numbers (a
# numpy integer, an object) travel as their repr, so openevolve_score skips them as well.
DIRECT_CHILD = """
import json, sys
import evaluator
program, function, out = sys.argv[1:4]
result = getattr(evaluator, function)(program)
metrics = getattr(result, "metrics", result)
artifacts = getattr(result, "artifacts", None) or {}
def plain(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else repr(v)
with open(out, "w") as f:
    json.dump({"metrics": {str(k): plain(v) for k, v in dict(metrics).items()},
               "artifacts": {str(k): v if isinstance(v, str) else repr(v)
                             for k, v in dict(artifacts).items()}}, f)
"""


def openevolve_score(metrics: dict) -> float:
    """OpenEvolve 0.4.0's fitness (utils/metrics_utils.get_fitness_score, no feature
    dimensions): combined_score if it reads as a number, else the mean of the numeric
    metrics, booleans and NaN left out; 0.0 when there are none."""
    if "combined_score" in metrics:
        try:
            return float(metrics["combined_score"])
        except (TypeError, ValueError):
            pass
    values = [
        float(v)
        for v in metrics.values()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not math.isnan(v)
    ]
    return sum(values) / len(values) if values else 0.0
