"""The asyncio controller: steady-state proposals and evaluations, no barrier.

Every step ends in an archive transaction (LLM reply stored, candidate
stored, outcome stored), which is what makes `resume` exact after a kill -9:
a stored reply is never requested again, a finished evaluation is never
repeated, and iteration numbers are slots that are filled exactly once.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from evolve.agent.iteration import reserve_turns
from evolve.archive import ProgramStatus, RunStatus
from evolve.archive.vocab import ProgramKind
from evolve.llm import LLMError
from evolve.llm.pricing import UnpricedModel, require_prices
from evolve.pipeline.candidates import new_row, program_id
from evolve.pipeline.errors import CallsSpent, RunAborted
from evolve.pipeline.iteration import IterationSteps
from evolve.problem.check import tools_lacking

# An endpoint that answered this session and then answers nothing for this long ends the run
# (failed, resumable); shorter outages are ridden out, their iterations asked again.
MAX_LLM_OUTAGE_S = 300.0


@dataclass
class RunOutcome:
    """How a run of this controller ended (what `evolve.run` returns); the archive's
    RunSummary (evolve/archive/summaries.py) is a stored run as the views read it."""

    run_id: str
    status: RunStatus
    reason: str | None
    iterations_done: int
    best_score: float | None
    seed_score: float | None


class Controller(IterationSteps):
    """One run, from the seed to its last iteration. Its RunStats go to `observer` (the
    command line's live display, or no one) as they change."""

    # ---- setup -------------------------------------------------------------
    async def ensure_seed(self) -> None:
        if self.archive.program(program_id(self.run_id, 0)) is not None:
            return
        self.observer.note("evaluating the seed program")
        out = await asyncio.to_thread(self.evaluator.evaluate, self.problem.seed_code)
        row = new_row(
            self.run_id, self.problem, 0, 0, self.problem.seed_code, kind=ProgramKind.SEED, diff=""
        )
        await self._apply_outcome(row, out)
        self.archive.insert_program(row)
        if row.status != ProgramStatus.OK:
            detail = (
                row.artifacts.get("error")
                or row.artifacts.get("traceback")
                or row.artifacts.get("cascade", "")
            )
            last = (detail.strip().splitlines() or [""])[-1]
            if lacking := tools_lacking(self.problem, self.evaluator.sandbox):
                last = f"{last}; {lacking}"  # the likely cause, which the evaluator may not say
            raise RunAborted(
                f"{self.problem.seed_file}: seed program failed ({row.status}): {last}"
            )
        if "cascade" in row.artifacts:  # OpenEvolve: under a threshold, yet scored
            self.observer.note(f"warning: the seed stopped early: {row.artifacts['cascade']}")
        for island in range(1, self.cfg.num_islands):
            self.archive.add_migration(self.run_id, row.program_id, island, 0)
        await self._rescore_test(row)
        await self.board.score(row)

    async def resume_scores(self) -> None:
        """What a kill left unscored on the leaderboard: the seed (now), the best (queued)."""
        seed = self.archive.program(program_id(self.run_id, 0))
        if seed is not None:
            await self.board.score(seed)
        best = self.archive.best(run_id=self.run_id)
        if best is not None:
            self.board.offer(best)

    # ---- main loop ---------------------------------------------------------
    async def run(self) -> RunOutcome:
        # Enough threads for every evaluation in flight plus held-out re-scoring.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=self.cfg.parallel + 2, thread_name_prefix="eval")
        )
        self.observer.start(self.stats)
        try:
            self._check_prices()
            await self.ensure_seed()
            self.rebuild()
            await self.resume_scores()
            await self._loop()
            await self._rescore_best()
            status, reason = self._final_status()
        except asyncio.CancelledError:
            # Kill what is running now; unfinished candidates stay pending for `resume`.
            self.evaluator.sandbox.close()
            status, reason = RunStatus.STOPPED, "interrupted"
        except RunAborted as e:
            status, reason = RunStatus.FAILED, str(e)
        finally:
            await self.board.cancel()  # a failed or stopped run: its resume scores the rest
            self.observer.stop()
            self.parsing.shutdown(wait=False)
        self.archive.set_run_status(self.run_id, status, reason)
        best = self.archive.best(run_id=self.run_id)
        seed = self.archive.program(program_id(self.run_id, 0))
        return RunOutcome(
            self.run_id,
            status,
            reason,
            self.archive.finished_count(self.run_id),
            best.score if best else None,
            seed.score if seed else None,
        )

    def _check_prices(self) -> None:
        """A budget counts nothing for a model with no price: refuse before any work (the
        command line checks this first; a resumed run's --prices file may have changed).
        An agent's command reports its own cost: no price is needed."""
        if self.cfg.proposer.startswith("command:"):
            return
        try:
            require_prices([m.name for m in self.cfg.models], self.cfg.budget_usd, self.llm.prices)
        except UnpricedModel as e:
            raise RunAborted(str(e)) from None

    def _may_start(self) -> bool:
        """Another iteration may ask the model: nothing stops the run, and calls are left
        that no agent session in flight keeps (evolve/agent/reservations.py)."""
        left = self._calls_left()
        free = left is None or left - self.reserved.kept() > 0
        return self._stop_reason() is None and free

    def _final_status(self) -> tuple[RunStatus, str | None]:
        reason = self._stop_reason()
        spent = self.cfg.max_calls is not None and self.stats.calls >= self.cfg.max_calls
        if self.archive.finished_count(self.run_id) >= self.cfg.iterations or spent:
            return RunStatus.FINISHED, None
        return RunStatus.STOPPED, reason

    async def _loop(self) -> None:
        tasks: set[asyncio.Task] = set()
        # Work left over from a killed controller comes first.
        for prow in self.archive.programs(self.run_id, code=True, pending=True):
            tasks.add(asyncio.create_task(self._evaluate_candidate(prow)))
        replies = self.archive.unconsumed_replies(self.run_id)
        iteration_of: dict[asyncio.Task, int] = {}  # the tasks that ask the LLM
        for call in replies:
            t = asyncio.create_task(self._iteration(call.iteration, stored=call))
            iteration_of[t] = call.iteration
            tasks.add(t)
        # Slots are numbered as they start; --iterations counts the model's (a tuned child
        # fills one too, but costs no call and no iteration). Slots a kill left empty
        # (asked, never stored, or only clones rejected) are filled first.
        taken = self.archive.iterations(self.run_id) | {c.iteration for c in replies}
        top = max(taken | {0})
        to_ask = self.cfg.iterations - (len(taken - {0}) - self.archive.tuned_count(self.run_id))
        free = [i for i in range(1, top + 1) if i not in taken][: max(to_ask, 0)]
        to_ask -= len(free)
        self.next_slot = top + 1
        tuning: set[asyncio.Task] = set()
        retry: list[int] = []
        limit = self.cfg.parallel + self.cfg.llm_parallel
        try:
            while True:
                tuning &= tasks
                while len(tuning) < self.cfg.parallel and (row := self._tuned_child()) is not None:
                    t = asyncio.create_task(self._evaluate_candidate(row))
                    tuning.add(t)
                    tasks.add(t)
                while (free or retry or to_ask > 0) and len(tasks) < limit and self._may_start():
                    if retry or free:
                        it = retry.pop(0) if retry else free.pop(0)
                    else:
                        it, to_ask = self._new_slot(), to_ask - 1
                    if self.cfg.proposer == "agent":
                        reserve_turns(self, it)  # before the next pass asks _may_start
                    t = asyncio.create_task(self._iteration(it))
                    iteration_of[t] = it
                    tasks.add(t)
                if not tasks:
                    break
                done, tasks = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
                fatal: BaseException | None = None  # the first; every task's is retrieved
                for t in done:
                    iteration = iteration_of.pop(t, None)
                    exc = t.exception()
                    if exc is None or isinstance(exc, CallsSpent):
                        continue
                    if isinstance(exc, LLMError) and iteration is not None:
                        retry.append(iteration)
                        down_s = self.llm.clock.monotonic() - self.asker.ok_at
                        if self.asker.successes == 0 or down_s >= MAX_LLM_OUTAGE_S:
                            fatal = fatal or RunAborted(f"LLM endpoint unreachable: {exc}")
                    else:
                        fatal = fatal or exc
                if fatal is not None:
                    raise fatal
                self._maybe_migrate()
        finally:
            for t in tasks:
                t.cancel()
            if tasks:
                await asyncio.gather(*tasks, return_exceptions=True)

    async def _rescore_best(self) -> None:
        """The final best has its held-out score and its leaderboard score (the one score
        cross-run views rank, evolve/pipeline/leaderboard.py; never shown to the model)."""
        await self.board.settle()
        best = self.archive.best(run_id=self.run_id)
        if best is None:
            return
        if best.test_score is None and not best.test_metrics:
            await self._rescore_test(best)
        await self.board.score(best)  # killed before it is stored: resume does it
