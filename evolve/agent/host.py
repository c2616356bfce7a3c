"""What an agent's iteration uses of the run's controller (evolve/pipeline/controller.py), as a
Protocol: the iterations live in their own modules without importing the controller."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol

from evolve.agent.reservations import Reservations
from evolve.archive import Archive, ProgramRow
from evolve.pipeline.asking import Asker
from evolve.pipeline.config import RunConfig
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.pipeline.proposal import Proposer
from evolve.pipeline.state import RunObserver, RunStats
from evolve.problem.load import Problem
from evolve.search.state import SearchState


class Host(Protocol):
    archive: Archive
    run_id: str
    cfg: RunConfig
    problem: Problem
    evaluator: CandidateEvaluator
    observer: RunObserver
    proposer: Proposer
    asker: Asker
    search: SearchState
    stats: RunStats
    eval_sem: asyncio.Semaphore
    parsing: ThreadPoolExecutor
    notes: str
    reserved: Reservations

    def _calls_left(self) -> int | None: ...
    def _stop_reason(self, calls: bool = True) -> str | None: ...
    def _cascade_is_train(self) -> bool: ...
    def _seen(self, code_hash: str) -> str | None: ...
    def _program(self, pid: str) -> ProgramRow: ...
    def _refresh(self) -> None: ...
    def _mark_duplicate(self, row: ProgramRow) -> None: ...
    def _finish_now(self, row: ProgramRow) -> None: ...
    async def _maybe_meta(self, it: int) -> None: ...
    async def _evaluate_candidate(self, row: ProgramRow) -> None: ...
