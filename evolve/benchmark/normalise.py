"""The benchmark's scale: 0 is the seed's held-out score, 100 the best of the programs the
folder ships: its baselines/ and its published programs under reference/ (FunSearch's evolved
heuristics for binpack, where the seed is the best baseline; eplb's and txn_scheduling's,
whose seeds are their best baselines too, so that a baseline a timing hair above or below
the seed never sets the scale).

Scores are higher-is-better throughout evolve (a minimised metric is stored negated), so one
formula serves every problem: 100 * (run - seed) / (best_baseline - seed). Above 100 beats
every human baseline the folder ships. Scripts that compare other systems' results with ours
(bench/search_race.py) import `normalised` and `references` so both sides use one scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from evolve.archive import ProgramStatus
from evolve.problem.baselines import baseline_files, scored


@dataclass(frozen=True)
class References:
    """The two held-out scores that fix the scale of a problem (None: not measurable)."""

    seed_test: float | None
    best_baseline_test: float | None
    best_baseline_name: str | None  # its file name in baselines/

    def normalised(self, score: float | None) -> float | None:
        return normalised(score, self.seed_test, self.best_baseline_test)

    def no_scale(self) -> str | None:
        """Why these references give no scale, in a few words; None when they do."""
        if self.seed_test is None or not math.isfinite(self.seed_test):
            return "the seed has no held-out score"
        if self.best_baseline_test is None or not math.isfinite(self.best_baseline_test):
            return "no baseline has a held-out score"
        if self.best_baseline_test == self.seed_test:
            return f"the best baseline, {self.best_baseline_name}, scores as the seed"
        if self.best_baseline_test < self.seed_test:
            return (
                f"no baseline beats the seed (the best, {self.best_baseline_name}, scores below it)"
            )
        return None


def normalised(
    score: float | None, seed_score: float | None, best_baseline_score: float | None
) -> float | None:
    """100 * (score - seed) / (best_baseline - seed); None when any of them is missing or
    not finite, or when no baseline beats the seed: it scores as the seed (binpack's seed is
    its best_fit baseline), or below it, where a scale would turn an improvement negative
    and, with the two a hair apart (eplb's seed is DeepSeek's own EPLB, timed), blow timing
    noise up into hundreds of points."""
    values = (score, seed_score, best_baseline_score)
    if any(v is None or not math.isfinite(v) for v in values):
        return None
    assert score is not None and seed_score is not None and best_baseline_score is not None
    span = best_baseline_score - seed_score
    if span <= 0:
        return None
    return 100.0 * (score - seed_score) / span


def references(
    problem_dir: str | Path, sandbox: str = "auto", data_seed: int | None = None
) -> References:
    """The seed's and the best baseline's held-out scores on the workloads of `data_seed`
    (the runs' private seed; None: the public data), scored in the sandbox once and cached
    with the web view's baseline scores (evolve/problem/baselines.py)."""
    from evolve.problem.load import load_problem

    root = Path(problem_dir)
    problem = load_problem(root)  # ProblemError (a ValueError): one line for the caller
    seed = scored(root, Path(problem.seed_file), sandbox, "seed", data_seed)
    baselines = _best(root, baseline_files(root), sandbox, data_seed)
    published = sorted((root / "reference").glob("*.py"))
    programs = _best(root, published, sandbox, data_seed, "reference/")
    best = max((b for b in (baselines, programs) if b), default=None)
    return References(
        seed.test_score if seed.status == ProgramStatus.OK else None,
        best[0] if best else None,
        best[1] if best else None,
    )


def _best(
    root: Path, files: list[Path], sandbox: str, data_seed: int | None, prefix: str = ""
) -> tuple[float, str] | None:
    """The best held-out score among files, with its name."""
    best: tuple[float, str] | None = None
    for f in files:
        b = scored(root, f, sandbox, data_seed=data_seed)
        t = b.test_score
        if (
            b.status == ProgramStatus.OK
            and t is not None
            and math.isfinite(t)
            and (best is None or t > best[0])
        ):
            best = (t, prefix + f.name)
    return best
