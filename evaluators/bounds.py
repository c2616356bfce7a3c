"""How much of one evaluation's result the host keeps.

An evaluator (or a candidate that rewrote its result file) may name any number of
metrics: one OpenEvolve evaluator echoed 250,000 of them, which made one program's
page 11 MB and its CSV export take 48 s. The host keeps the first MAX_METRICS
metrics (and stages) and MAX_ARTIFACTS artifacts whose names are at most
MAX_NAME_CHARS characters long, in the order given, and says in the `dropped`
artifact how many it left out. Each artifact's value is cut to ARTIFACT_CHARS
(harness_result._clip).
"""

from __future__ import annotations

from typing import TypeVar

MAX_METRICS = 256  # numeric metrics per result, and stage scores
MAX_ARTIFACTS = 64  # text artifacts per result, besides the host's own
MAX_NAME_CHARS = 100  # of a metric's, stage's or artifact's name
DROPPED = "dropped"  # the artifact that says what was left out

V = TypeVar("V")


def keep_first(items: dict[str, V], limit: int) -> tuple[dict[str, V], int]:
    """The first `limit` items whose names are short enough, and how many were left out."""
    kept: dict[str, V] = {}
    for name, value in items.items():
        if len(kept) >= limit:
            break
        if len(name) <= MAX_NAME_CHARS:
            kept[name] = value
    return kept, len(items) - len(kept)


def dropped_note(counts: dict[str, tuple[int, int]]) -> str | None:
    """One line naming what was left out: {"metrics": (dropped, limit), ...}; None if nothing."""
    parts = [f"{n:,} {what} (at most {limit} are kept)" for what, (n, limit) in counts.items() if n]
    if not parts:
        return None
    return (
        "left out " + ", ".join(parts) + f": the first ones in the order given, names of at most"
        f" {MAX_NAME_CHARS} characters"
    )
