"""A program's behaviour: what it scored on each training instance.

FunSearch clusters programs by their per-input score signature: two programs that score
the same on every instance behave alike for the search, whatever their text. Our
evaluators report the train score and per-instance (or per-set) numbers as metrics;
wall-clock readings differ run to run and are left out.
"""

from __future__ import annotations

import math
import re

_CLOCK = re.compile(r"(wall|elapsed|runtime|duration|eval_s$|cpu_s$|_ms$|seconds)", re.I)


def _rounded(x: float) -> str:
    return "nan" if not math.isfinite(x) else f"{x:.9g}"


def signature(score: float | None, metrics: dict) -> str | None:
    """The behaviour key of a program that scored; None for one that did not."""
    if score is None:
        return None
    parts = [_rounded(score)]
    for k in sorted(metrics):
        v = metrics[k]
        if isinstance(v, bool) or not isinstance(v, int | float) or _CLOCK.search(k):
            continue
        parts.append(f"{k}={_rounded(float(v))}")
    return "|".join(parts)
