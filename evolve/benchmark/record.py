"""A run's result as `bench_runs.result_json` keeps it, and summaries rebuilt from the rows.

Each row carries the references it was normalised against and the problem folder, so the
web view can show a benchmark from the archive alone, without scoring anything again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Protocol

from evolve.benchmark.measure import RunResult
from evolve.benchmark.normalise import References
from evolve.benchmark.table import ProblemSummary, summarise


class StoredRun(Protocol):
    """A `bench_runs` row as evolve.archive.reader.BenchRun holds it."""

    problem: str
    seed: int
    result: dict


def record(result: RunResult, problem_dir: str, refs: References) -> dict:
    """A run's `bench_runs.result_json`: its result, with what it is normalised against."""
    return {**result.to_json(), "problem_dir": problem_dir, "references": asdict(refs)}


def from_rows(rows: Sequence[StoredRun]) -> list[ProblemSummary]:
    """One summary per problem from stored rows, problems in the order they ran."""
    by_problem: dict[str, list[StoredRun]] = {}
    for r in rows:
        by_problem.setdefault(r.problem, []).append(r)
    out = []
    for name, rs in by_problem.items():
        first = rs[0].result
        stored = first.get("references") or {}
        refs = References(
            stored.get("seed_test"),
            stored.get("best_baseline_test"),
            stored.get("best_baseline_name"),
        )
        results = [RunResult.from_json(r.result) for r in sorted(rs, key=lambda r: r.seed)]
        out.append(summarise(name, str(first.get("problem_dir", "")), refs, results))
    return out
