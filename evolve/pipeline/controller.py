"""The asyncio controller: steady-state proposals and evaluations, no barrier.

Every step ends in an archive transaction (LLM reply stored, candidate
stored, outcome stored), which is what makes `resume` exact after a kill -9:
a stored reply is never requested again, a finished evaluation is never
repeated, and iteration numbers are slots that are filled exactly once.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from evolve.agent.command_iteration import command_iteration
from evolve.agent.iteration import agent_iteration, reserve_turns
from evolve.agent.reservations import Reservations
from evolve.archive import Archive, CallOutcome, LlmCall, ProgramRow, ProgramStatus, RunStatus
from evolve.archive.vocab import CallPurpose, ProgramKind
from evolve.edits import normalized_hash, unified_diff
from evolve.llm import LLMClient, LLMError
from evolve.llm.pricing import UnpricedModel, require_prices
from evolve.pipeline.asking import Ask, Asker
from evolve.pipeline.candidates import new_row, program_id, reply_to_row
from evolve.pipeline.config import RunConfig
from evolve.pipeline.errors import CallsSpent, RunAborted
from evolve.pipeline.evaluation import CandidateEvaluator, CascadeResult
from evolve.pipeline.leaderboard import BestScorer, Leaderboard
from evolve.pipeline.proposal import NoParent, Proposer
from evolve.pipeline.state import NullObserver, RunObserver, RunStats
from evolve.problem.check import tools_lacking
from evolve.problem.load import Problem
from evolve.search.meta import MAX_LINES, parse_notes, summaries
from evolve.search.population import Features, Population, SelectionPolicy
from evolve.search.prompts import PromptBuilder
from evolve.search.state import SearchSettings, SearchState
from evolve.search.tune import KIND as TUNED
from evolve.search.tune import Tuner

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
        self.features = Features(
            problem.seed_code, problem.feature_dims, problem.feature_bins, problem.fixed_files
        )
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
        self.search = SearchState(
            SearchSettings(
                {m.name: m.weight for m in cfg.models},
                cfg.temperatures or (cfg.temperature,),
                cfg.repair_attempts,
                cfg.stagnation,
                cfg.burst_calls,
                cfg.escalation_model,
                cfg.seed,
            )
        )
        self.tuner = Tuner(
            cfg.tune_evals if problem.language.is_python else 0, fixed=problem.fixed_files
        )
        self.notes = ""  # the latest meta-notes, shown in every prompt
        self.reserved = Reservations()  # calls kept for agent sessions in flight
        self.replaying = False  # rebuild: decisions are replayed from the archive, not taken
        self.meta_lock = asyncio.Lock()
        self.eval_sem = asyncio.Semaphore(cfg.parallel)
        # the cross-run ranking's data: the seed and each new best scored on it
        self.board = BestScorer(Leaderboard(archive, evaluator), self.eval_sem)
        self.in_flight_hashes: dict[str, str] = {}
        # Replies are parsed here, one at a time: never behind a long evaluation's thread.
        self.parsing = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parse")
        self.stats = RunStats(target=cfg.iterations)
        self.asker = Asker(
            archive, run_id, llm, cfg.llm_parallel, self.stats, self.observer, self._refresh
        )
        self.last_migration = -1  # `done` at the last ring migration
        self.next_slot = 1  # the next iteration number (set by _loop from the archive)
        self.started = time.monotonic()

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

    def rebuild(self) -> None:
        """Derive the population and the search's state from the archive (fresh start and
        resume alike): programs in order, each island restart where it was taken."""
        resets = [d for d in self.archive.decisions(self.run_id) if d.kind == "stagnation"]
        added = 0
        self.replaying = True
        for p in self.archive.programs(self.run_id, code=True, pending=False):
            while resets and resets[0].at_done <= added:
                self._replay_reset(resets.pop(0).detail)
            self._add(p)
            added += p.iteration > 0 and p.kind != TUNED
        self.replaying = False
        for d in resets:
            self._replay_reset(d.detail)
        for pid, island, _ in self.archive.migrations(self.run_id):
            self.pop.migrate(pid, island)
        rejected = self.archive.rejected_by_model(self.run_id)
        for model in rejected:
            self.search.rejected(model)
        asked = self.archive.repair_parents(self.run_id)
        self.search.repairs = deque(pid for pid in self.search.repairs if pid not in asked)
        self._restore_notes()
        usage = self.archive.usage(self.run_id)
        self.stats.set_usage(usage)
        self.stats.calls = usage["answered"]
        self.stats.rejected = len(rejected)

    def _replay_reset(self, detail: dict) -> None:
        if detail.get("island") is not None and detail.get("from"):
            self.pop.reset_island(int(detail["island"]), str(detail["from"]))

    def _restore_notes(self) -> None:
        """The latest meta-note; a meta reply stored before a kill gets its note now."""
        for call in self.archive.meta_calls(self.run_id):
            if call["text"] is None:
                text = parse_notes(call["reply"])
                self.archive.add_meta_note(self.run_id, self.stats.calls, call["call_id"], text)
                call["text"] = text
            self.notes = call["text"] or self.notes

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

    def _calls_left(self) -> int | None:
        """Calls --max-calls still allows, those in flight counted as spent."""
        if self.cfg.max_calls is None:
            return None
        return self.cfg.max_calls - self.stats.calls - self.stats.llm_in_flight

    def _stop_reason(self, calls: bool = True) -> str | None:
        left = self._calls_left()
        if calls and left is not None and left <= 0:
            return f"{self.cfg.max_calls} LLM calls answered (--max-calls)"
        if self.cfg.budget_usd is not None and self.stats.cost_usd >= self.cfg.budget_usd:
            return f"budget of ${self.cfg.budget_usd:g} spent (${self.stats.cost_usd:.4f})"
        if (
            self.cfg.time_limit_s is not None
            and time.monotonic() - self.started >= self.cfg.time_limit_s
        ):
            return f"time limit of {self.cfg.time_limit_s:g} s reached"
        return None

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

    # ---- one iteration -----------------------------------------------------
    async def _iteration(self, it: int, stored: LlmCall | None = None) -> None:
        """Fill slot `it`: ask (a reply stored before a kill is used first), and ask again,
        hotter and told so, while the reply repeats a program of the run (each rejected
        reply stays an llm_calls row); then evaluate what came back. With --proposer agent,
        an agent's turns make the candidate instead (its stored turns are replayed)."""
        if self.cfg.proposer == "agent":
            return await agent_iteration(self, it)
        if self.cfg.proposer != "single":
            return await command_iteration(self, it)
        resample = self.archive.rejected_call_count(self.run_id, it)
        while True:
            if stored is not None:
                call, stored = stored, None
            else:
                call = await self._ask(it, resample)
            row = await self._candidate(call)
            if (
                row.status == ProgramStatus.DUPLICATE
                and resample < self.cfg.max_resamples
                and self._stop_reason() is None
            ):
                assert call.call_id is not None  # stored before it was used
                self.archive.reject_call(call.call_id, CallOutcome.REJECTED_DUPLICATE)
                self.search.rejected(call.model)
                self.stats.rejected += 1
                resample += 1
                continue
            break
        if row.status != ProgramStatus.PENDING:
            return self._finish_now(row)
        self.archive.insert_program(row)
        await self._evaluate_candidate(row)

    def _cascade_is_train(self) -> bool:
        """Whether an evaluation of the cascade reads no held-out split (an agent may run it)."""
        test = self.problem.test_split
        return not test or all(stage.split != test for stage in self.problem.cascade)

    def _tuned_child(self) -> ProgramRow | None:
        """The next variant of a program's numbers, if one waits and nothing stops the run
        but spent calls (evolve/search/tune.py): stored in a slot of its own, no call."""
        if self._stop_reason(calls=False) is not None:
            return None
        lang = self.problem.language
        v = self.tuner.next(lambda code: bool(self._seen(normalized_hash(code, lang))))
        self.stats.tune_left = self.tuner.left()
        if v is None:
            return None
        parent = self._program(v.parent_id)
        row = new_row(
            self.run_id,
            self.problem,
            self._new_slot(),
            parent.island,
            v.code,
            parent_id=parent.program_id,
            kind=TUNED,
            diff=unified_diff(_code(parent), v.code),
        )
        self.archive.insert_program(row)
        return row

    def _new_slot(self) -> int:
        self.next_slot += 1
        return self.next_slot - 1

    def _seen(self, code_hash: str) -> str | None:
        """The program of the run (evaluated or in flight) with this code hash, if any."""
        return self.archive.hash_seen(self.run_id, code_hash) or self.in_flight_hashes.get(
            code_hash
        )

    async def _ask(self, it: int, resample: int) -> LlmCall:
        """One LLM call for slot `it`, recorded whether answered or failed. Its prompt is
        built once the call may go out, from the population as it is then: a failure that
        finished meanwhile is repaired first."""
        async with self.asker.slot():
            await self._maybe_meta(it)
            left = self._calls_left()
            if left is not None and left <= 0:
                raise CallsSpent()
            return await self._ask_now(it, resample)

    async def _ask_now(self, it: int, resample: int) -> LlmCall:
        island = it % self.cfg.num_islands
        repair = None if resample else self.search.next_repair()
        proposal = self.proposer.repair(self._program(repair), self.notes) if repair else None
        if proposal is None:
            try:
                proposal = self.proposer.propose(island, resample, self.notes)
            except NoParent as e:
                raise RunAborted(str(e)) from None
        fmt = proposal.edit_format
        purpose = (
            CallPurpose.REPAIR
            if fmt == "repair"
            else CallPurpose.RESAMPLE
            if resample
            else CallPurpose.CROSSOVER
            if fmt == "crossover"
            else CallPurpose.MUTATION
        )
        choice = self.search.choose(resample)
        second = proposal.second.program_id if proposal.second else None
        return await self.asker.ask(
            Ask(
                it,
                island,
                proposal.parent.program_id,
                second,
                fmt,
                purpose,
                proposal.messages,
                choice,
                self.cfg.seed * 100003 + it * 16 + resample,
            )
        )

    async def _maybe_meta(self, it: int) -> None:
        """Every --meta-interval answered calls, one call writes the run's meta-notes."""
        every = self.cfg.meta_interval
        if not every or self.stats.calls < every:
            return
        async with self.meta_lock:
            written = len(self.archive.meta_calls(self.run_id))
            left = self._calls_left()
            if self.stats.calls < (written + 1) * every or (left is not None and left <= 1):
                return
            programs = self.archive.programs(self.run_id, code=True, pending=False)
            children = [p for p in programs if p.iteration > 0]
            scores = {p.program_id: p.score for p in programs}
            best = self.pop.best()
            messages = self.prompts.meta(
                summaries(children, scores),
                self.notes,
                self.stats.seed_score,
                best.score if best else None,
                MAX_LINES,
            )
            ask = Ask(
                it,
                it % self.cfg.num_islands,
                None,
                None,
                "meta",
                CallPurpose.META,
                messages,
                self.search.choose(),
                self.cfg.seed * 100003 + it * 16 + 15,
            )
            call = await self.asker.ask(ask)
            assert call.call_id is not None and call.reply is not None  # stored, answered
            self.notes = parse_notes(call.reply)
            self.archive.add_meta_note(self.run_id, self.stats.calls, call.call_id, self.notes)
            self.observer.note(f"meta-notes after {self.stats.calls} calls")

    async def _candidate(self, call: LlmCall) -> ProgramRow:
        """The program a reply makes (not yet stored): pending, or why it is not evaluated.
        The reply is parsed in the parsing thread, off the event loop: its work is bounded
        by the text (evolve/pipeline/candidates.py), so no clock decides it and resume agrees."""
        parent = self._program(call.parent_id or "")  # every proposing call names its parent
        loop = asyncio.get_running_loop()
        row = await loop.run_in_executor(
            self.parsing, reply_to_row, call, parent, self.run_id, self.problem
        )
        if row.status == ProgramStatus.INVALID:
            self.observer.note(
                f"iteration {row.iteration} recorded invalid, unevaluated: {row.artifacts['error']}"
            )
        self._mark_duplicate(row)
        return row

    def _mark_duplicate(self, row: ProgramRow) -> None:
        """A pending candidate that repeats a program of the run is a duplicate."""
        if row.status != ProgramStatus.PENDING:
            return
        assert row.code_hash is not None  # new_row hashes the code it keeps
        dup = self._seen(row.code_hash)
        if dup:
            row.status = ProgramStatus.DUPLICATE
            row.artifacts = {
                "error": f"duplicate of {dup}: the program was already evaluated in this run"
            }

    def _finish_now(self, row: ProgramRow) -> None:
        self.archive.insert_program(row)
        self._add(row)
        self._refresh()

    def _add(self, row: ProgramRow) -> bool:
        """A finished program into the population, the search's state and the counts; True
        if it is a new best. After a stagnation it restarts the worst island."""
        prev_best = self.pop.best()
        novel = self.pop.novel(row)
        self.pop.add(row)
        self._count(row)
        best = (
            row.status == ProgramStatus.OK
            and row.score is not None
            and (prev_best is None or row.score > prev_best.score)
        )
        parent = self.pop.members.get(row.parent_id or "")
        parent_score = parent.score if parent else None
        self.search.finished(row, parent_score, novel, best, self._depth(row))
        self.tuner.finished(row, parent_score, novel)
        self.stats.tune_left = self.tuner.left()  # counted where the queue changes, not per refresh
        self.stats.novel += novel and row.iteration > 0
        if self.search.stagnant() and not self.replaying:
            self._on_stagnation()
        return best

    def _depth(self, row: ProgramRow) -> int:
        """Repairs in a row that led to row."""
        depth, p = 0, row
        while p.kind == ProgramKind.REPAIR and p.parent_id:
            depth += 1
            parent = self.archive.program(p.parent_id)
            if parent is None:
                break
            p = parent
        return depth

    def _on_stagnation(self) -> None:
        """No new best for --stagnation iterations: a burst of calls on the escalation model
        at the hottest temperature, and the worst island restarted from the best program."""
        self.search.start_burst()
        best = self.pop.selectable_best()
        island = self.pop.worst_island(best.program_id if best else None)
        detail = {
            "model": self.search.escalation_model(),
            "calls": self.cfg.burst_calls,
            "island": island,
            "from": best.program_id if best else None,
            "after": self.cfg.stagnation,
        }
        if island is not None and best is not None:
            self.pop.reset_island(island, best.program_id)
        self.archive.add_decision(self.run_id, self.stats.done, "stagnation", detail)
        restart = (
            f"; island {island} restarted from {best.program_id}"
            if island is not None and best
            else ""
        )
        self.observer.note(
            f"no new best in {self.cfg.stagnation} iterations: {self.cfg.burst_calls} calls on"
            f" {detail['model']}{restart}"
        )

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
        best = self._add(row)
        self._refresh()
        if best:
            self.observer.note(f"new best {row.score:.6g}: {_origin(row)}")
            await self._rescore_test(row)
            self.board.offer(row)  # on the leaderboard's data, in the background

    # ---- helpers -------------------------------------------------------------
    async def _apply_outcome(self, row: ProgramRow, out: CascadeResult) -> None:
        row.status, row.score, row.scores = out.status, out.score, out.scores
        row.metrics, row.artifacts, row.eval_s = out.metrics, out.artifacts, out.eval_s
        if row.status == ProgramStatus.OK:  # off the loop: a big program's features take a while
            row.features = await asyncio.to_thread(self.features.values, _code(row), row.metrics)
            row.cell = self.features.cell(row.features)

    async def _rescore_test(self, row: ProgramRow) -> None:
        """Held-out score for a new best; it is stored, never shown to the model."""
        split = self.problem.test_split
        if not split or row.status != ProgramStatus.OK:
            return
        async with self.eval_sem:
            res = await asyncio.to_thread(self.evaluator.run_split, _code(row), split)
        metrics: dict[str, object] = dict(res.metrics)
        if res.status != ProgramStatus.OK:
            metrics["status"] = res.status
        self.archive.set_test_result(row.program_id, res.score, metrics)
        best = self.pop.best()
        if best is None or best.program_id == row.program_id:  # re-scores may finish out of order
            self.stats.best_test = res.score
            self._refresh()

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
        elif p.kind == TUNED:
            self.stats.tuned += 1
        else:
            self.stats.done += 1
            self.stats.ok += p.status == ProgramStatus.OK
        if (
            p.status == ProgramStatus.OK
            and p.score is not None
            and (self.stats.best is None or p.score > self.stats.best)
        ):
            self.stats.best = p.score

    def _refresh(self) -> None:
        self.observer.update(self.stats)

    def _program(self, pid: str) -> ProgramRow:
        """A program the population or a stored reply names: it is in the archive."""
        p = self.archive.program(pid)
        if p is None:
            raise RunAborted(f"program {pid} is not in the archive")
        return p


def _code(p: ProgramRow) -> str:
    """The code of a program that has some (all but the replies that could not be applied)."""
    if p.code is None:
        raise RunAborted(f"program {p.program_id} has no code")
    return p.code


def _origin(row: ProgramRow) -> str:
    """Which candidate: a tuned child's slot lies beyond --iterations, so never "iteration N"."""
    if row.kind == TUNED:
        return f"{row.program_id}, {row.parent_id}'s numbers tuned (no call)"
    if row.iteration == 0:
        return f"{row.program_id}, the seed"
    return f"{row.program_id}, the model's" + (
        f" ({row.kind})" if row.kind != ProgramKind.MUTATION else ""
    )
