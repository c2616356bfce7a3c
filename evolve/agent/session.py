"""One agent iteration: turns of the model on a working copy, until it submits or a budget
ends them.

Each turn is one answered LLM call, stored before anything is done with it (purpose
`agent`). A resumed iteration never asks for a stored turn again: every stored turn but the
last is replayed without a tool's side effects (its edits re-applied to the working copy,
its evaluations counted, not run again: their results are in the next turn's stored
prompt), and the last one's actions are then carried out, as they had not been (or not
all) before the kill. Budgets: --agent-turns turns, --agent-evals evaluations (asking for
one more ends the session), --agent-tokens tokens (summed over the turns, stored ones
included, so a resumed session counts what it had used); an evaluate of the parent unchanged,
or of a working copy evaluated before, spends none (small models ask for both). A session
that ends without a submit hands in its working copy when it differs from the parent, else
it ends with no candidate and says why."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from evolve.agent.protocol import TOOLS, Action, Turn, parse_turn, turn_messages
from evolve.agent.tools import Workspace, outcome_text
from evolve.archive import LlmCall
from evolve.llm.context_budget import estimate_tokens, messages_tokens
from evolve.pipeline.evaluation import CascadeResult

AskTurn = Callable[[list[dict], int, list[dict] | None], Awaitable[LlmCall]]
Evaluate = Callable[[str], Awaitable[CascadeResult]]
Seen = Callable[[str], str | None]  # a program of the run with this code, if any
# Runs an edit off the event loop (the controller's parsing thread); default: a thread.
Offload = Callable[[Callable[[str], str], str], Awaitable[str]]


async def _in_thread(fn: Callable[[str], str], arg: str) -> str:
    return await asyncio.to_thread(fn, arg)


def conversation_tokens(messages: list[dict]) -> int:
    """Estimated prompt tokens of a conversation, its tool calls' text counted too."""
    calls = "".join(json.dumps(m["tool_calls"]) for m in messages if m.get("tool_calls"))
    return messages_tokens(messages) + estimate_tokens(calls)


UNCHANGED = (
    "nothing to evaluate: the working copy is its parent unchanged (read feedback for its "
    "scores); edit it first"
)
# told after the evaluation of a reply that held an edit and no action line
IMPLIED = "\n(your reply had no ACTION line: its edit was evaluated; end each reply with one)"


class TurnsStopped(Exception):
    """No further turn may be asked (the run's --max-calls); raised by the AskTurn."""


@dataclass(frozen=True)
class AgentLimits:
    turns: int  # --agent-turns
    evals: int  # --agent-evals
    reply_chars: int  # a longer reply is not read (evolve/edits/bounds.py's reply limit)
    prompt_tokens: int | None = None  # the model's window less its reply (None: unknown)
    tokens: int | None = None  # --agent-tokens: prompt + completion over all turns (None: off)


def turn_tokens(call: LlmCall) -> int:
    """A turn's prompt + completion tokens as the endpoint reported them; estimated from
    its prompt and reply where it reported none (usage absent)."""
    used = call.prompt_tokens + call.completion_tokens
    if used > 0:
        return used
    return conversation_tokens(call.prompt) + estimate_tokens(call.reply or "")


@dataclass(frozen=True)
class SessionEnd:
    """How the session ended: the code it hands in (None: none, `reason` says why), the
    last answered turn (the program's llm_call_id), and what it used."""

    code: str | None
    reason: str
    last_call: LlmCall | None
    turns: int
    evals: int


class _Ended(Exception):
    def __init__(self, reason: str, submitted: bool = False):
        super().__init__(reason)
        self.reason, self.submitted = reason, submitted


class AgentSession:
    def __init__(
        self,
        ws: Workspace,
        limits: AgentLimits,
        protocol: str,
        ask: AskTurn,
        evaluate: Evaluate,
        seen: Seen,
        held_out_safe: bool = True,
        offload: Offload = _in_thread,
    ):
        self.ws, self.limits, self.protocol = ws, limits, protocol
        self.ask, self.evaluate, self.seen = ask, evaluate, seen
        self.held_out_safe = held_out_safe  # False: the cascade reads the test split
        self.offload = offload
        self.turns = self.evals = self.tokens = 0
        self.told: dict[str, str] = {}  # code -> its evaluation's text, to tell it again free
        self.last: LlmCall | None = None

    async def run(self, messages: list[dict], stored: list[LlmCall]) -> SessionEnd:
        """Ask, act, repeat. `messages`: the first turn's prompt (unused when `stored` has
        turns: the last one's prompt is the conversation so far)."""
        tools = TOOLS if self.protocol == "native" else None
        try:
            for k, call in enumerate(stored):
                turn = self._taken(call)
                if k < len(stored) - 1:
                    await self._act(turn, replay=True)
                else:
                    messages = [*call.prompt, *await self._act(turn)]
            while True:
                if self.turns >= self.limits.turns:
                    raise _Ended(f"{self.turns} turns used (--agent-turns)")
                window = self.limits.prompt_tokens
                if self.turns and window is not None and conversation_tokens(messages) > window:
                    raise _Ended(f"the conversation fills the model's window ({window} tokens)")
                self._check_tokens(messages)
                try:
                    call = await self.ask(messages, self.turns, tools)
                except TurnsStopped:
                    if self.turns == 0:
                        raise
                    raise _Ended("no LLM calls left (--max-calls)") from None
                messages = [*messages, *await self._act(self._taken(call))]
        except _Ended as e:
            return self._end(e)

    def _check_tokens(self, messages: list[dict]) -> None:
        """End the session when the next turn's prompt would take its tokens past
        --agent-tokens (the first turn is always asked)."""
        budget = self.limits.tokens
        if budget is None or not self.turns:
            return
        if self.tokens + conversation_tokens(messages) > budget:
            raise _Ended(f"{self.tokens} of {budget} tokens used (--agent-tokens)")

    def _taken(self, call: LlmCall) -> Turn:
        self.turns += 1
        self.tokens += turn_tokens(call)
        self.last = call
        return parse_turn(call.reply or "", self.protocol, self.limits.reply_chars)

    def _end(self, e: _Ended) -> SessionEnd:
        if e.submitted or self.ws.changed:
            reason = e.reason if e.submitted else f"{e.reason}: the working copy was submitted"
            return SessionEnd(self.ws.code, reason, self.last, self.turns, self.evals)
        why = f"agent: {e.reason}, and the working copy is its parent unchanged"
        return SessionEnd(None, why, self.last, self.turns, self.evals)

    async def _act(self, turn: Turn, replay: bool = False) -> list[dict]:
        """Carry out a turn: its edit, then its actions in order. The messages that tell
        the model what came of it (none on replay); _Ended when the session ends here."""
        results = []
        note = await self.offload(self.ws.edit, turn.edit) if turn.edit is not None else ""
        for action in turn.actions:
            if note.startswith("edit not applied") and action.name in ("evaluate", "submit"):
                results.append(f"so {action.name} was not done")
            else:
                results.append(await self._tool(action, replay))
        if note and results:
            results[0] = f"{note}\n{results[0]}"
        budget = (
            f"[turns left: {self.limits.turns - self.turns};"
            f" evaluations left: {self.limits.evals - self.evals}]"
        )
        if results:
            results[-1] = f"{results[-1]}\n{budget}"
        return [] if replay else turn_messages(turn, results, self.protocol)

    async def _tool(self, a: Action, replay: bool) -> str:
        if a.problem is not None:
            return a.problem
        if a.name == "list":
            return self.ws.list()
        if a.name == "read":
            return self.ws.read(a.arg)
        if a.name == "edit":
            return await self.offload(self.ws.edit, a.arg)
        if a.name == "evaluate":
            if not self.held_out_safe:
                return "evaluate is off for this problem (its cascade reads held-out data)"
            if not self.ws.changed:  # costs no evaluation: its scores are the feedback
                return UNCHANGED
            if (told := self.told.get(self.ws.code)) is not None:
                return f"evaluated before, unchanged since:\n{told}"
            if self.evals >= self.limits.evals:
                raise _Ended(f"{self.evals} evaluations used (--agent-evals)")
            self.evals += 1
            if replay:
                self.told[self.ws.code] = "(its result was told in an earlier turn)"
                return ""
            out = await self.evaluate(self.ws.code)
            told = outcome_text(out.status, out.score, out.metrics, out.artifacts)
            self.told[self.ws.code] = told
            return f"evaluation on the training data:\n{told}" + (IMPLIED if a.implied else "")
        assert a.name == "submit"
        if not self.ws.changed:
            return "nothing to submit: the working copy is its parent unchanged; edit it first"
        if replay:  # a stored turn after this one: the submit was refused then
            return ""
        dup = self.seen(self.ws.code)
        if dup is not None:
            return f"not submitted: the working copy repeats {dup} of this run; change it"
        raise _Ended("submitted", submitted=True)
