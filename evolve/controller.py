"""The asyncio controller: steady-state proposals and evaluations, no barrier.

Every step ends in an archive transaction (LLM reply stored, candidate
stored, outcome stored), which is what makes `resume` exact after a kill -9:
a stored reply is never requested again, a finished evaluation is never
repeated, and iteration numbers are slots that are filled exactly once.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from evolve.archive import Archive, ProgramRow
from evolve.config import RunConfig
from evolve.edits import apply_reply, normalized_hash
from evolve.evaluation import INVALID, CandidateEvaluator, Outcome, too_large
from evolve.llm import LLMClient, LLMError
from evolve.llm.client import FailedAttempt
from evolve.llm.pricing import UnpricedModel, require_prices
from evolve.population import Features, Population, SelectionPolicy
from evolve.problem import Problem
from evolve.prompts import PromptBuilder
from evolve.proposal import NoParent, Proposer
from evolve.run_state import NullObserver, RunObserver, RunStats

# An endpoint that answered this session and then answers nothing for this long ends the run
# (failed, resumable); shorter outages are ridden out, their iterations asked again.
MAX_LLM_OUTAGE_S = 300.0
LONG_LLM_WAIT_S = 5.0  # a retry waiting this long (outage, Retry-After) is also a note


class RunAborted(RuntimeError):
    """The run cannot go on (endpoint down, seed broken); the archive stays resumable."""


@dataclass
class RunSummary:
    run_id: str
    status: str
    reason: str | None
    iterations_done: int
    best_score: float | None
    seed_score: float | None


def program_id(run_id: str, iteration: int) -> str:
    return f"{run_id}:{iteration}"


class Controller:
    """One run, from the seed to its last iteration. Its RunStats go to `observer` (the
    command line's live display, or no one) as they change."""

    def __init__(
        self,
        archive: Archive,
        run_id: str,
        cfg: RunConfig,
        problem: Problem,
        evaluator: CandidateEvaluator,
        llm: LLMClient,
        observer: RunObserver | None = None,
        prompts: PromptBuilder | None = None,
    ):
        self.archive, self.run_id, self.cfg, self.problem = archive, run_id, cfg, problem
        self.evaluator, self.llm = evaluator, llm
        self.observer: RunObserver = observer or NullObserver()
        self.prompts = prompts or PromptBuilder(problem)
        self.features = Features(problem.seed_code, problem.feature_dims, problem.feature_bins)
        self.pop = Population(cfg.num_islands, SelectionPolicy(), cfg.seed)
        self.proposer = Proposer(
            archive,
            self.pop,
            self.prompts,
            self._program,
            cfg.edit_format,
            cfg.crossover_rate,
            self.observer.note,
        )
        self.eval_sem = asyncio.Semaphore(cfg.parallel)
        self.llm_sem = asyncio.Semaphore(cfg.llm_parallel)
        self.in_flight_hashes: dict[str, str] = {}
        self.stats = RunStats(target=cfg.iterations)
        self.last_migration = -1  # `done` at the last ring migration
        self.llm_successes = 0
        self.llm_ok_at = time.monotonic()  # the last answer (or the start)
        self.started = time.monotonic()

    # ---- setup -------------------------------------------------------------
    async def ensure_seed(self) -> None:
        if self.archive.get_program(program_id(self.run_id, 0)) is not None:
            return
        self.observer.note("evaluating the seed program")
        out = await asyncio.to_thread(self.evaluator.evaluate, self.problem.seed_code)
        row = self._row(0, 0, self.problem.seed_code, None, None, "seed", None, None, "")
        await self._apply_outcome(row, out)
        self.archive.insert_program(row)
        if row.status != "ok":
            detail = (
                row.artifacts.get("error")
                or row.artifacts.get("traceback")
                or row.artifacts.get("cascade", "")
            )
            last = (detail.strip().splitlines() or [""])[-1]
            raise RunAborted(
                f"{self.problem.seed_file}: seed program failed ({row.status}): {last}"
            )
        if "cascade" in row.artifacts:  # OpenEvolve: under a threshold, yet scored
            self.observer.note(f"warning: the seed stopped early: {row.artifacts['cascade']}")
        for island in range(1, self.cfg.num_islands):
            self.archive.add_migration(self.run_id, row.program_id, island, 0)
        await self._rescore_test(row)

    def rebuild(self) -> None:
        """Derive the population from the archive (fresh start and resume alike)."""
        for p in self.archive.programs(self.run_id, "status!='pending'"):
            self.pop.add(p)
            self._count(p)
        for pid, island, _ in self.archive.migrations(self.run_id):
            self.pop.migrate(pid, island)
        self.stats.set_usage(self.archive.usage(self.run_id))

    # ---- main loop ---------------------------------------------------------
    async def run(self) -> RunSummary:
        # Enough threads for every evaluation in flight plus held-out re-scoring.
        asyncio.get_running_loop().set_default_executor(
            ThreadPoolExecutor(max_workers=self.cfg.parallel + 2, thread_name_prefix="eval")
        )
        self.observer.start(self.stats)
        try:
            self._check_prices()
            await self.ensure_seed()
            self.rebuild()
            await self._loop()
            await self._rescore_best()
            status, reason = self._final_status()
        except asyncio.CancelledError:
            # Kill what is running now; unfinished candidates stay pending for `resume`.
            self.evaluator.sandbox.close()
            status, reason = "stopped", "interrupted"
        except RunAborted as e:
            status, reason = "failed", str(e)
        finally:
            self.observer.stop()
        self.archive.set_run_status(self.run_id, status, reason)
        best = self.archive.best(run_id=self.run_id)
        seed = self.archive.get_program(program_id(self.run_id, 0))
        return RunSummary(
            self.run_id,
            status,
            reason,
            self._done(),
            best.score if best else None,
            seed.score if seed else None,
        )

    def _check_prices(self) -> None:
        """A budget counts nothing for a model with no price: refuse before any work (the
        command line checks this first; a resumed run's --prices file may have changed)."""
        try:
            require_prices([m.name for m in self.cfg.models], self.cfg.budget_usd, self.llm.prices)
        except UnpricedModel as e:
            raise RunAborted(str(e)) from None

    def _done(self) -> int:
        r = self.archive.db.execute(
            "SELECT COUNT(*) FROM programs WHERE run_id=? AND iteration>0 AND status!='pending'",
            (self.run_id,),
        ).fetchone()
        return int(r[0])

    def _stop_reason(self) -> str | None:
        if self.cfg.budget_usd is not None and self.stats.cost_usd >= self.cfg.budget_usd:
            return f"budget of ${self.cfg.budget_usd:g} spent (${self.stats.cost_usd:.4f})"
        if (
            self.cfg.time_limit_s is not None
            and time.monotonic() - self.started >= self.cfg.time_limit_s
        ):
            return f"time limit of {self.cfg.time_limit_s:g} s reached"
        return None

    def _final_status(self) -> tuple[str, str | None]:
        reason = self._stop_reason()
        if self._done() >= self.cfg.iterations:
            return "finished", None
        return "stopped", reason

    async def _loop(self) -> None:
        tasks: set[asyncio.Task] = set()
        # Work left over from a killed controller comes first.
        for prow in self.archive.programs(self.run_id, "status='pending'"):
            tasks.add(asyncio.create_task(self._evaluate_candidate(prow)))
        replies = self.archive.unconsumed_replies(self.run_id)
        for call in replies:
            tasks.add(asyncio.create_task(self._consume_reply(call)))
        taken = self.archive.iterations(self.run_id) | {c["iteration"] for c in replies}
        free = [i for i in range(1, self.cfg.iterations + 1) if i not in taken]
        retry: list[int] = []
        iteration_of: dict[asyncio.Task, int] = {}  # the tasks that ask the LLM
        limit = self.cfg.parallel + self.cfg.llm_parallel
        try:
            while free or retry or tasks:
                while (free or retry) and len(tasks) < limit and self._stop_reason() is None:
                    it = retry.pop(0) if retry else free.pop(0)
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
                    if exc is None:
                        continue
                    if isinstance(exc, LLMError) and iteration is not None:
                        retry.append(iteration)
                        down_s = time.monotonic() - self.llm_ok_at
                        if self.llm_successes == 0 or down_s >= MAX_LLM_OUTAGE_S:
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

    # ---- one iteration -----------------------------------------------------
    async def _iteration(self, it: int) -> None:
        island = it % self.cfg.num_islands
        try:
            proposal = self.proposer.propose(island)
        except NoParent as e:
            raise RunAborted(str(e)) from None
        parent, second, fmt = proposal.parent, proposal.second, proposal.edit_format
        messages = proposal.messages
        model = self.llm.pick_model()
        self.stats.llm_in_flight += 1
        self._refresh()

        def record(
            content: str | None,
            error: str | None,
            tokens_in: int,
            tokens_out: int,
            cost_usd: float,
            latency_s: float,
        ) -> int:
            """One LLM call into the archive, answered or failed."""
            second_id = second.program_id if second else None
            return self.archive.insert_llm_call(
                self.run_id,
                it,
                island,
                parent.program_id,
                second_id,
                fmt,
                model,
                messages,
                content,
                error,
                tokens_in,
                tokens_out,
                cost_usd,
                latency_s,
            )

        def on_retry(attempt: FailedAttempt) -> None:
            """A failed attempt that will be tried again: one llm_calls row (no reply, its
            error) and the status line; a long wait is also a note."""
            record(None, attempt.describe(), 0, 0, 0.0, attempt.latency_s)
            self.stats.add_llm_fault(attempt.fault, retried=True)
            self._refresh()
            if attempt.wait_s >= LONG_LLM_WAIT_S:
                self.observer.note(
                    f"LLM {model}: {attempt.error}; waiting {attempt.wait_s:.0f} s"
                    f"{' (Retry-After)' if attempt.retry_after_s is not None else ''}"
                    f" before attempt {attempt.attempt + 1}/{attempt.max_attempts}"
                )

        try:
            async with self.llm_sem:
                reply = await self.llm.complete(
                    messages, model, seed=self.cfg.seed * 100003 + it, on_retry=on_retry
                )
        except LLMError as e:
            record(None, str(e), 0, 0, 0.0, e.latency_s)
            self.stats.add_llm_fault(e.fault, retried=False)
            self._refresh()
            self.observer.note(f"LLM call for iteration {it} failed: {e}")
            raise
        finally:
            self.stats.llm_in_flight -= 1
        self.llm_ok_at = time.monotonic()
        self.llm_successes += 1
        call_id = record(
            reply.content,
            None,
            reply.prompt_tokens,
            reply.completion_tokens,
            reply.cost_usd,
            reply.latency_s,
        )
        self.stats.add_call(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)
        await self._consume_reply(
            {
                "call_id": call_id,
                "iteration": it,
                "island": island,
                "parent_id": parent.program_id,
                "second_parent_id": second.program_id if second else None,
                "edit_format": fmt,
                "model": model,
                "reply": reply.content,
            }
        )

    async def _consume_reply(self, call: dict) -> None:
        parent = self._program(call["parent_id"])
        asked = "block" if call["edit_format"] == "crossover" else call["edit_format"]
        edit = apply_reply(_code(parent), call["reply"], asked)
        kind = "crossover" if call["edit_format"] == "crossover" else "mutation"
        # over the size cap: invalid, unevaluated, and not stored twice (the reply has it)
        too_big = too_large(self.problem, edit.code) if edit.ok and edit.code else None
        row = self._row(
            call["iteration"],
            call["island"],
            None if too_big else edit.code,
            parent.program_id,
            call["second_parent_id"],
            kind,
            edit.kind,
            call["model"],
            None if too_big else edit.diff,
        )
        row.llm_call_id = call["call_id"]
        if not edit.ok or edit.code is None:
            row.status, row.code = "invalid_edit", None
            row.artifacts = {"error": f"the reply could not be applied: {edit.error}"}
            return self._finish_now(row)
        if too_big:
            row.status, row.artifacts = INVALID, {"error": too_big}
            self.observer.note(
                f"iteration {row.iteration} recorded invalid, unevaluated: {too_big}"
            )
            return self._finish_now(row)
        assert row.code_hash is not None  # _row hashes the code it is given
        dup = self.archive.hash_seen(self.run_id, row.code_hash) or self.in_flight_hashes.get(
            row.code_hash
        )
        if dup:
            row.status = "duplicate"
            row.artifacts = {
                "error": f"duplicate of {dup}: the program was already evaluated in this run"
            }
            return self._finish_now(row)
        row.status = "pending"
        self.archive.insert_program(row)
        await self._evaluate_candidate(row)

    def _finish_now(self, row: ProgramRow) -> None:
        self.archive.insert_program(row)
        self.pop.add(row)
        self._count(row)
        self._refresh()

    async def _evaluate_candidate(self, row: ProgramRow) -> None:
        if row.code_hash:
            self.in_flight_hashes[row.code_hash] = row.program_id
        try:
            async with self.eval_sem:
                self.stats.eval_in_flight += 1
                self._refresh()
                try:
                    out = await asyncio.to_thread(self.evaluator.evaluate, _code(row))
                finally:
                    self.stats.eval_in_flight -= 1
            await self._apply_outcome(row, out)
            self.archive.finish_program(row)
        finally:
            self.in_flight_hashes.pop(row.code_hash or "", None)
        prev_best = self.pop.best()
        self.pop.add(row)
        self._count(row)
        self._refresh()
        if (
            row.status == "ok"
            and row.score is not None
            and (prev_best is None or row.score > prev_best.score)
        ):
            self.observer.note(f"new best {row.score:.6g} at iteration {row.iteration}")
            await self._rescore_test(row)

    # ---- helpers -------------------------------------------------------------
    def _row(
        self, it, island, code, parent_id, second_id, kind, edit_kind, model, diff
    ) -> ProgramRow:
        return ProgramRow(
            program_id=program_id(self.run_id, it),
            run_id=self.run_id,
            problem=self.problem.name,
            iteration=it,
            island=island,
            status="pending",
            code=code,
            parent_id=parent_id,
            second_parent_id=second_id,
            kind=kind,
            edit_kind=edit_kind,
            model=model,
            diff=diff,
            code_hash=normalized_hash(code) if code is not None else None,
        )

    async def _apply_outcome(self, row: ProgramRow, out: Outcome) -> None:
        row.status, row.score, row.scores = out.status, out.score, out.scores
        row.metrics, row.artifacts, row.eval_s = out.metrics, out.artifacts, out.eval_s
        if row.status == "ok":  # off the loop: a big program's features take a while
            row.features = await asyncio.to_thread(self.features.values, _code(row), row.metrics)
            row.cell = self.features.cell(row.features)

    async def _rescore_test(self, row: ProgramRow) -> None:
        """Held-out score for a new best; it is stored, never shown to the model."""
        split = self.problem.test_split
        if not split or row.status != "ok":
            return
        async with self.eval_sem:
            res = await asyncio.to_thread(self.evaluator.run_split, _code(row), split)
        metrics: dict[str, object] = dict(res.metrics)
        if res.status != "ok":
            metrics["status"] = res.status
        self.archive.set_test_result(row.program_id, res.score, metrics)
        best = self.pop.best()
        if best is None or best.program_id == row.program_id:  # re-scores may finish out of order
            self.stats.best_test = res.score
            self._refresh()

    async def _rescore_best(self) -> None:
        best = self.archive.best(run_id=self.run_id)
        if best is not None and best.test_score is None and not best.test_metrics:
            await self._rescore_test(best)

    def _maybe_migrate(self) -> None:
        done = self.stats.done
        interval = self.cfg.migration_interval
        if done == 0 or done % interval or self.last_migration == done:
            return
        self.last_migration = done
        for pid, island in self.pop.migration_plan():
            self.archive.add_migration(self.run_id, pid, island, done)
            self.pop.migrate(pid, island)

    def _count(self, p: ProgramRow) -> None:
        if p.iteration == 0:
            self.stats.seed_score = p.score
        else:
            self.stats.done += 1
            self.stats.ok += p.status == "ok"
        if (
            p.status == "ok"
            and p.score is not None
            and (self.stats.best is None or p.score > self.stats.best)
        ):
            self.stats.best = p.score

    def _refresh(self) -> None:
        self.observer.update(self.stats)

    def _program(self, pid: str) -> ProgramRow:
        """A program the population or a stored reply names: it is in the archive."""
        p = self.archive.get_program(pid)
        if p is None:
            raise RunAborted(f"program {pid} is not in the archive")
        return p


def _code(p: ProgramRow) -> str:
    """The code of a program that has some (all but the replies that could not be applied)."""
    if p.code is None:
        raise RunAborted(f"program {p.program_id} has no code")
    return p.code
