"""One row per problem over its seeds: what `evolve bench` prints, stores and serves.

The normalised held-out score is given as its median and its spread (min..max) over seeds;
every other column is the median over seeds of one run's figure, shares being per answered
call. Runs that never started count nowhere; a run that failed part-way counts as it stands.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

from evolve.archive import RunStatus
from evolve.benchmark.curve import median_curve
from evolve.benchmark.measure import RunResult
from evolve.benchmark.normalise import References


@dataclass
class ProblemSummary:
    problem: str
    problem_dir: str
    references: References
    seeds: int  # runs asked for
    runs: int  # runs that started (have a row in `runs`)
    failed: int  # runs that did not finish
    normalised_median: float | None
    normalised_min: float | None
    normalised_max: float | None
    held_out_median: float | None
    valid_share: float | None
    duplicates: float | None
    new_yield: float | None
    behaviour_yield: float | None
    tuned: float | None  # tuned children a run evaluated (evolve/search/tune.py), no calls
    calls: float | None  # answered calls (an agent's turns among them)
    tokens: float | None
    evaluations: float | None  # candidates evaluated on train
    agent_evals: float | None  # train evaluations inside agent sessions (not candidates)
    wall_s: float | None
    curve: list[float | None] = field(default_factory=list)  # median normalised, 0..calls
    results: list[RunResult] = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        d["references"] = asdict(self.references)
        return d


def _median(values: Sequence[float | int | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def summarise(
    problem: str, problem_dir: str, refs: References, results: Sequence[RunResult]
) -> ProblemSummary:
    started = [r for r in results if r.status != "missing"]
    norm = [r.normalised for r in started if r.normalised is not None]
    return ProblemSummary(
        problem=problem,
        problem_dir=problem_dir,
        references=refs,
        seeds=len(results),
        runs=len(started),
        failed=sum(r.status != RunStatus.FINISHED for r in results),
        normalised_median=_median(norm),
        normalised_min=min(norm) if norm else None,
        normalised_max=max(norm) if norm else None,
        held_out_median=_median([r.held_out for r in started]),
        valid_share=_median([r.share(r.valid) for r in started]),
        duplicates=_median([r.duplicates for r in started]),
        new_yield=_median([r.share(r.new_programs) for r in started]),
        behaviour_yield=_median([r.share(r.behaviourally_new) for r in started]),
        tuned=_median([r.tuned for r in started]),
        calls=_median([r.calls for r in started]),
        tokens=_median([r.tokens for r in started]),
        evaluations=_median([r.evaluations for r in started]),
        agent_evals=_median([r.agent_evals for r in started]),
        wall_s=_median([r.wall_s for r in started]),
        curve=median_curve([r.curve for r in started]),
        results=list(results),
    )
