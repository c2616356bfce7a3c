"""The iteration of `--proposer agent`: its turns stored as they are answered, replayed
from the archive on resume; moved out of the controller, which calls it for each slot."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from evolve.agent import auto_protocol
from evolve.agent.host import Host
from evolve.agent.protocol import agent_messages
from evolve.agent.reservations import promised_turns
from evolve.agent.session import AgentLimits, AgentSession, TurnsStopped
from evolve.agent.tools import Workspace, outcome_text
from evolve.agent.window import session_window
from evolve.archive import LlmCall, ProgramRow, ProgramStatus
from evolve.archive.vocab import CallPurpose
from evolve.edits import normalized_hash
from evolve.edits.bounds import reply_limit
from evolve.llm import LLMError
from evolve.llm.context_budget import TokenBudget
from evolve.pipeline.asking import Ask
from evolve.pipeline.candidates import agent_row
from evolve.pipeline.errors import CallsSpent, RunAborted
from evolve.pipeline.evaluation import CascadeResult
from evolve.pipeline.proposal import NoParent
from evolve.search.bandit import Choice


def parent_code(p: ProgramRow) -> str:
    """The code of a parent (a program with none is never chosen as one)."""
    if p.code is None:
        raise RunAborted(f"program {p.program_id} has no code")
    return p.code


async def evaluate_on_train(ctl: Host, code: str) -> CascadeResult:
    """An agent's evaluation of its work: the train cascade (never the held-out split), in
    one of the run's evaluation slots."""
    async with ctl.eval_sem:
        ctl.stats.eval_in_flight += 1
        ctl._refresh()
        try:
            return await asyncio.to_thread(ctl.evaluator.evaluate, code)
        finally:
            ctl.stats.eval_in_flight -= 1


def reserve_turns(ctl: Host, it: int, stored: list[LlmCall] | None = None) -> None:
    """Keep the calls slot `it`'s session may take (reservations.py), before it starts: the
    controller's loop asks whether another session may start only after this. `stored`: the
    slot's answered turns, when the caller has read them."""
    if stored is None:
        stored = ctl.archive.agent_turns(ctl.run_id, it)
    turns = ctl.cfg.agent_turns
    if stored:
        turns = promised_turns(stored[0].prompt) or turns
    elif (left := ctl._calls_left()) is not None:
        turns = max(min(turns, left - ctl.reserved.kept()), 1)
    ctl.reserved.open(it, turns, len(stored))


async def agent_iteration(ctl: Host, it: int) -> None:
    """Fill slot `it` with what an agent's session submits (evolve/agent/): its turns
    stored as they are answered, its evaluations on the train cascade only, its
    candidate checked, evaluated and re-scored like a single call's."""
    stored = ctl.archive.agent_turns(ctl.run_id, it)
    if it not in ctl.reserved.turns:
        reserve_turns(ctl, it, stored)
    try:
        await _agent_iteration(ctl, it, ctl.reserved.turns[it], stored)
    finally:
        ctl.reserved.close(it)


async def _agent_iteration(ctl: Host, it: int, turns: int, stored: list[LlmCall]) -> None:
    messages: list[dict] = []
    opening: list[dict] = []  # a new session's prompt, before the rules
    evals = ctl.cfg.agent_evals
    if stored:  # resumed: the same parent, prompt, model and temperature
        first = stored[0]
        parent = ctl._program(first.parent_id or "")
        island, second, fmt = first.island, first.second_parent_id, first.edit_format
        temp = first.temperature if first.temperature is not None else ctl.cfg.temperature
        choice = Choice(first.model, temp, first.decision or "")
    else:
        async with ctl.asker.slot():
            await ctl._maybe_meta(it)
            island = it % ctl.cfg.num_islands
            try:
                proposal = ctl.proposer.propose(island, 0, ctl.notes)
            except NoParent as e:
                raise RunAborted(str(e)) from None
        parent, fmt = proposal.parent, proposal.edit_format
        second = proposal.second.program_id if proposal.second else None
        choice = ctl.search.choose(0)
        opening = proposal.messages
    # read after the proposal waited for its slot: a session asked before may have decided
    configured = ctl.cfg.agent_protocol
    run_protocol = auto_protocol.decided(ctl.archive, ctl.run_id) if configured == "auto" else None
    protocol = auto_protocol.of_session(configured, stored, run_protocol)
    probe = configured == "auto" and run_protocol is None
    if not stored:
        messages = agent_messages(opening, "auto" if probe else protocol, turns, evals)

    async def ask(msgs: list[dict], turn: int, tools: list[dict] | None) -> LlmCall:
        async with ctl.asker.slot():
            left = ctl._calls_left()
            if left is not None and left <= 0:
                raise TurnsStopped()
            ctl.reserved.asked(it)
            seed = ctl.cfg.seed * 100003 + it * 16 + turn % 15
            a = Ask(
                it,
                island,
                parent.program_id,
                second,
                fmt,
                CallPurpose.AGENT,
                msgs,
                choice,
                seed,
                tools,
            )
            call = await ctl.asker.ask(a)
        if probe and (said := auto_protocol.verdict(call)) is not None:
            why = "a tool was called" if said == "native" else "an ACTION line, no tool call"
            auto_protocol.decide(ctl.archive, ctl.run_id, ctl.observer, it, said, why)
        return call

    async def evaluate(code: str) -> CascadeResult:
        return await evaluate_on_train(ctl, code)

    async def offload(edit: Callable[[str], str], text: str) -> str:
        """An edit in the parsing thread, as a reply's is: never behind an evaluation."""
        return await asyncio.get_running_loop().run_in_executor(ctl.parsing, edit, text)

    lang = ctl.problem.language
    names = [m.name for m in ctl.cfg.models]
    cw = session_window(ctl.cfg.context_window, ctl.cfg.proposer, names)
    window = TokenBudget.for_model(cw, ctl.cfg.max_tokens) if cw else None
    feedback = outcome_text(parent.status, parent.score, parent.metrics, parent.artifacts)

    def session(protocol: str) -> AgentSession:
        return AgentSession(
            Workspace(ctl.problem, parent_code(parent), fmt, ctl.notes, feedback),
            AgentLimits(
                turns,
                ctl.cfg.agent_evals,
                reply_limit(ctl.problem.max_code_bytes),
                window.prompt_tokens if window else None,
                ctl.cfg.agent_tokens,
            ),
            protocol,
            ask,
            evaluate,
            lambda code: ctl._seen(normalized_hash(code, lang)),
            held_out_safe=ctl._cascade_is_train(),
            offload=offload,
        )

    try:
        asked = session(protocol)
        try:
            end = await asked.run(messages, stored)
        except LLMError as e:  # a probe's first request refused for its tools: ask in text
            if not (probe and not stored and not asked.turns and auto_protocol.rejects_tools(e)):
                raise
            why = f"the endpoint refused tools: {str(e)[:200]}"
            auto_protocol.decide(ctl.archive, ctl.run_id, ctl.observer, it, "text", why)
            probe, protocol = False, "text"
            messages = agent_messages(opening, protocol, turns, evals)
            end = await session(protocol).run(messages, [])
    except TurnsStopped:
        raise CallsSpent() from None
    assert end.last_call is not None  # a session ends after at least one answered turn
    row = agent_row(end.last_call, end.code, end.reason, parent, ctl.run_id, ctl.problem)
    if row.status == ProgramStatus.INVALID_EDIT:
        ctl.observer.note(f"iteration {it} recorded invalid, unevaluated: {end.reason}")
    ctl._mark_duplicate(row)
    if row.status != ProgramStatus.PENDING:
        return ctl._finish_now(row)
    ctl.archive.insert_program(row)
    await ctl._evaluate_candidate(row)
