"""evolve.optimize_anything: GEPA's optimize_anything, run by evolve. A GEPA user changes
one import (`from evolve import optimize_anything`) and keeps the rest of the script.

The evaluator is never called here. The script that defines it is the problem: evolve
runs it again inside the sandbox, where `evolve.optimize_anything` is the stand-in that
captures the call (evaluators/inside/gepa_compat/), and scores each candidate there. So the
evaluator must live in the script file that makes the call, and the seed the script passes
in the sandbox must be the one it passes here (a seed drawn at random is refused).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evolve.settings.errors import UsageError

STR_KEY = "current_candidate"  # GEPA's key of a str seed's one component


@dataclass(frozen=True)
class OptimizeResult:
    """What GEPA's result offers: every evaluated candidate (a dict of named texts; a str
    seed's under "current_candidate"), each one's score, the best's index. `run_id` names
    the run in the archive (`evolve show`, `evolve resume`)."""

    candidates: list[dict[str, str]]
    val_aggregate_scores: list[float]
    best_idx: int
    run_id: str
    str_candidate: bool = False
    iterations: list[int] = field(default_factory=list)

    @property
    def best_candidate(self) -> str | dict[str, str]:
        best = self.candidates[self.best_idx]
        return best[STR_KEY] if self.str_candidate else best

    @property
    def best_score(self) -> float:
        return self.val_aggregate_scores[self.best_idx]


def script_of(evaluator: Any) -> Path:
    """The script file that defines the evaluator and calls optimize_anything (UsageError)."""
    from evolve.problem.gepa import mentions_call

    try:
        path = inspect.getsourcefile(evaluator)
    except TypeError:
        path = None
    if path is None or not os.path.isfile(path) or not mentions_call(Path(path)):
        raise UsageError(
            "evolve.optimize_anything: evaluator= must be a function defined in the script "
            f"file that calls optimize_anything (it is run again in the sandbox); got {evaluator!r:.80}"
        )
    return Path(path).resolve()


def optimize_anything(
    seed_candidate: str | dict[str, str] | None = None,
    *,
    evaluator: Callable[..., Any] | None = None,
    batch_evaluator: Callable[..., Any] | None = None,
    dataset: list[Any] | None = None,
    valset: list[Any] | None = None,
    objective: str | None = None,
    background: str | None = None,
    test_set: list[Any] | None = None,
    config: Any = None,
    **settings: Any,
) -> OptimizeResult:
    """Run evolve on the calling script's problem; `settings` are evolve.run's (model,
    api_base, sandbox, runs_dir, iterations, ...). The budget is config's max_metric_calls
    (GEPAConfig(engine=EngineConfig(...))) or max_evals, unless `iterations` is given."""
    from evolve.archive import ArchiveReader
    from evolve.pipeline import api
    from evolve.problem.load import Overrides, ProblemError, load_problem
    from evolve.settings.flags import runs_dir

    if evaluator is None:
        raise UsageError("evolve.optimize_anything: evaluator= is required")
    script = script_of(evaluator)
    try:
        problem = load_problem(script, Overrides(sandbox=settings.get("sandbox")))
    except ProblemError as e:
        raise UsageError(str(e)) from None
    from evolve.problem.gepa_capture import facts_of

    facts = facts_of(problem.root, script.name, str(script), settings.get("sandbox"))
    if facts.seed != seed_candidate:
        raise UsageError(
            f"evolve.optimize_anything: {script.name} passes a different seed_candidate in the "
            "sandbox than here; the seed must not depend on randomness or the machine"
        )
    summary = api.run(script, **settings)
    rows = ArchiveReader(runs_dir(settings.get("runs_dir"))).programs(summary.run_id, code=True)
    from evaluators.tree import decode

    scored = [r for r in rows if r.score is not None and r.code is not None]
    if not scored:
        raise UsageError(f"evolve.optimize_anything: run {summary.run_id} scored no candidate")
    str_seed = isinstance(facts.seed, str)
    candidates = [
        {STR_KEY: r.code or ""} if str_seed else decode(r.code or "", problem.entry) for r in scored
    ]
    scores = [float(r.score or 0.0) for r in scored]
    return OptimizeResult(
        candidates=candidates,
        val_aggregate_scores=scores,
        best_idx=max(range(len(scores)), key=lambda i: (scores[i], -i)),
        run_id=summary.run_id,
        str_candidate=str_seed,
        iterations=[r.iteration for r in scored],
    )
