"""Best-so-far held-out score against answered LLM calls, one run's and a problem's median.

Point c is the held-out score of the run's best program by train score (ties: the earliest)
among the seed and the programs of its first c answered calls; point 0 is the seed. The
controller takes a held-out score only for programs that were a new best when they finished,
so a best that finished after a better one has none: its point keeps the last known value.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    """A valid program, by its train score, held-out score and when it was stored."""

    score: float
    test_score: float | None
    created_at: float


def best_so_far(seed: Candidate | None, per_call: Sequence[Candidate | None]) -> list[float | None]:
    """The held-out score of the best-so-far program after 0, 1, ..., len(per_call) calls
    (`per_call[i]` is the valid program call i+1 gave, or None)."""
    best = seed
    out: list[float | None] = [seed.test_score if seed else None]
    for cand in per_call:
        if cand is not None and (
            best is None or (cand.score, -cand.created_at) > (best.score, -best.created_at)
        ):
            best = cand
        value = best.test_score if best is not None else None
        out.append(value if value is not None else out[-1])
    return out


def median_curve(curves: Sequence[Sequence[float | None]]) -> list[float | None]:
    """The median over runs at each call; a run that made fewer calls keeps its last value
    (its best did not change after it stopped); missing values are left out of a median."""
    length = max((len(c) for c in curves), default=0)
    out: list[float | None] = []
    for i in range(length):
        values = [c[min(i, len(c) - 1)] for c in curves if c]
        known = [v for v in values if v is not None]
        out.append(statistics.median(known) if known else None)
    return out
