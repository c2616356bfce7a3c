"""One iteration of the controller: fill a slot (ask, the candidate the reply makes, its
evaluation, each step stored), or evaluate a tuned child, which costs no call. It acts on
the run's bookkeeping (bookkeeping.py); the loop (controller.py) starts the iterations.
"""

from __future__ import annotations

import asyncio

from evolve.agent.command_iteration import command_iteration
from evolve.agent.iteration import agent_iteration
from evolve.archive import CallOutcome, LlmCall, ProgramRow, ProgramStatus
from evolve.archive.vocab import CallPurpose, ProgramKind
from evolve.edits import normalized_hash, unified_diff
from evolve.pipeline.asking import Ask
from evolve.pipeline.bookkeeping import Bookkeeping
from evolve.pipeline.candidates import new_row, reply_to_row
from evolve.pipeline.errors import CallsSpent, RunAborted
from evolve.pipeline.evaluation import CascadeResult
from evolve.pipeline.proposal import NoParent
from evolve.search.meta import MAX_LINES, parse_notes, summaries
from evolve.search.tune import KIND as TUNED


class IterationSteps(Bookkeeping):
    """The steps of one iteration, as methods of the run's Controller (controller.py)."""

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
