"""The leaderboard: every score ranked against another was measured on the same data.

A run draws its own private workloads (evolve/problem/data_seed.py), so the same code scores
differently in two runs, and ranking runs' own numbers together keeps whichever run drew the
easiest workload. So the archive holds one more private seed per problem, drawn by the first
run of the problem and kept for good (evolve/archive/boards.py), and a run scores its seed, and
each new best as it becomes best (beside its held-out re-scoring), once more under it: the
train cascade and the held-out split, as a run scores. Scoring a best is off the event loop,
one at a time, in one of the run's evaluation slots (`BestScorer`): bests found while one is
being scored wait, and only the newest of them is scored next, so a run finding many bests in
quick succession does not spend its evaluations on programs it already left behind; the run's
final best is always scored, at its end if not before. Code already scored there (the seed of every run after the
first, the same program found twice) takes the score it has: one score per code, measured
once. A run killed before its best is scored scores it as its resume starts, and a program
scored is never scored again. Cross-run views (`archive best`, `/problems/NAME`, exports'
leaderboard columns, the report's place on the leaderboard) rank by these numbers only; the
problem's baselines are scored under the same seed (evolve/web/baselines.py). The model never
sees them, and the seed reaches trusted code only, as a run's own does.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

from evolve.archive import Archive, BoardScore, ProgramRow, ProgramStatus
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem import data_seed


class Leaderboard:
    """A problem's leaderboard in one archive, for the run that scores its bests on it."""

    def __init__(self, archive: Archive, evaluator: CandidateEvaluator):
        self.archive = archive
        self.problem = evaluator.problem
        self.seed = archive.draw_leaderboard_seed(self.problem.name, data_seed.draw())
        self.evaluator = evaluator.under(self.seed)

    def measure(self, code: str) -> BoardScore:
        """Score `code` on the leaderboard data (blocking: call it in a thread)."""
        train = self.evaluator.evaluate(code)
        out = BoardScore(train.status, train.score, metrics=dict(train.metrics))
        split = self.problem.test_split
        if split and train.status == ProgramStatus.OK:
            test = self.evaluator.run_split(code, split)
            out.test_score = test.score if test.status == ProgramStatus.OK else None
            out.test_metrics = dict(test.metrics)
            if test.status != ProgramStatus.OK:
                out.test_metrics["status"] = test.status
        return out

    def needs(self, row: ProgramRow) -> bool:
        """A valid program not yet scored here (one scored before a kill is never again)."""
        return row.status == ProgramStatus.OK and self.archive.board_score(row.program_id) is None

    def known(self, row: ProgramRow) -> BoardScore | None:
        """The score of the same code already measured here, if any."""
        if row.code_hash is None:
            return None
        known = self.archive.board_of_code(self.problem.name, self.seed, row.code_hash)
        return replace(known, created_at=0.0) if known is not None else None  # stored now

    def record(self, row: ProgramRow, score: BoardScore) -> None:
        self.archive.set_board_score(row.program_id, self.problem.name, self.seed, score)


class BestScorer:
    """Scores a run's new bests on its leaderboard as they come, in the background: one
    scoring at a time, in one of the run's evaluation slots (`slots`). A best offered while
    none is being scored is scored; of those offered while one is, only the newest is scored
    next (the others were left behind meanwhile); the run's end scores its final best."""

    def __init__(self, board: Leaderboard, slots: asyncio.Semaphore):
        self.board, self.slots = board, slots
        self._next: ProgramRow | None = None  # the newest best not yet taken
        self._task: asyncio.Task | None = None

    async def score(self, row: ProgramRow) -> None:
        """Score `row` now (if it needs it), in an evaluation slot, off the event loop."""
        if self._needs(row):
            async with self.slots:
                await self._measure(row)

    def _needs(self, row: ProgramRow) -> bool:
        if not self.board.needs(row) or row.code is None:
            return False
        known = self.board.known(row)  # the same code, scored there by another run
        if known is not None:
            self.board.record(row, known)
        return known is None

    async def _measure(self, row: ProgramRow) -> None:
        self.board.record(row, await asyncio.to_thread(self.board.measure, row.code or ""))

    def offer(self, row: ProgramRow) -> None:
        """A new best: scored once the scoring under way (if any) is done, unless a newer
        best is offered before then. Raises what an earlier scoring raised."""
        if self._task is not None and self._task.done():
            task, self._task = self._task, None
            task.result()
        self._next = row
        if self._task is None:
            self._task = asyncio.create_task(self._drain())

    async def _drain(self) -> None:
        while (row := self._next) is not None:
            self._next = None
            await self.score(row)

    async def settle(self) -> None:
        """Wait for the scoring under way and the best waiting (the run's end)."""
        if self._task is not None:
            task, self._task = self._task, None
            await task

    async def cancel(self) -> None:
        """Stop scoring (the run stops): what is not recorded is scored on resume."""
        self._next = None
        if self._task is not None:
            task, self._task = self._task, None
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
