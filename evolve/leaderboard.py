"""The leaderboard: every score ranked against another was measured on the same data.

A run draws its own private workloads (evolve/data_seed.py), so the same code scores
differently in two runs, and ranking runs' own numbers together keeps whichever run drew the
easiest workload. So the archive holds one more private seed per problem, drawn by the first
run of the problem and kept for good (evolve/archive/boards.py), and a run scores its seed, and
its best as it ends (after the held-out re-scoring), once more under it: the train cascade and
the held-out split, as a run scores. Code already scored there (the seed of every run after the
first, the same program found twice) takes the score it has: one score per code, measured
once. A run killed before its best is scored scores it at the end of its resume, and a
program scored is never scored again. Cross-run views (`archive best`, `/problems/NAME`, exports'
leaderboard columns, the report's place on the leaderboard) rank by these numbers only; the
problem's baselines are scored under the same seed (evolve/web/baselines.py). The model never
sees them, and the seed reaches trusted code only, as a run's own does.
"""

from __future__ import annotations

from dataclasses import replace

from evolve import data_seed
from evolve.archive import Archive, BoardScore, ProgramRow, Status
from evolve.evaluation import CandidateEvaluator


class Leaderboard:
    """A problem's leaderboard in one archive, for the run that scores its bests on it."""

    def __init__(self, archive: Archive, evaluator: CandidateEvaluator):
        self.archive = archive
        self.problem = evaluator.problem
        self.seed = archive.leaderboard_seed(self.problem.name, data_seed.draw())
        self.evaluator = evaluator.under(self.seed)

    def measure(self, code: str) -> BoardScore:
        """Score `code` on the leaderboard data (blocking: call it in a thread)."""
        train = self.evaluator.evaluate(code)
        out = BoardScore(train.status, train.score, metrics=dict(train.metrics))
        split = self.problem.test_split
        if split and train.status == Status.OK:
            test = self.evaluator.run_split(code, split)
            out.test_score = test.score if test.status == Status.OK else None
            out.test_metrics = dict(test.metrics)
            if test.status != Status.OK:
                out.test_metrics["status"] = test.status
        return out

    def needs(self, row: ProgramRow) -> bool:
        """A valid program not yet scored here (one scored before a kill is never again)."""
        return row.status == Status.OK and self.archive.board_score(row.program_id) is None

    def known(self, row: ProgramRow) -> BoardScore | None:
        """The score of the same code already measured here, if any."""
        if row.code_hash is None:
            return None
        known = self.archive.board_of_code(self.problem.name, self.seed, row.code_hash)
        return replace(known, created_at=0.0) if known is not None else None  # stored now

    def record(self, row: ProgramRow, score: BoardScore) -> None:
        self.archive.set_board_score(row.program_id, self.problem.name, self.seed, score)
