"""An agent iteration's transcript, read back from its stored turns (llm_calls, purpose
`agent`): what each turn said, the tools it called, what it was told of them, and the train
evaluations it ran, for the program page, `archive show`, the exports and `evolve bench`.

Nothing here is stored apart: a turn's tool results are the messages the next turn's prompt
carried after the turn's own reply (evolve/agent/protocol.py: turn_messages), so the
transcript is exactly what the model was told. The last turn's results were never told:
its tools are listed with no result. An evaluation's status and score are read from the
head of its result, which the session writes (evolve/agent/tools.py: outcome_text) before
any text of the candidate's; everything else is the model's or the candidate's text,
untrusted wherever it is shown.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from evolve.agent.auto_protocol import of_session
from evolve.agent.command_spec import COMMAND_MODEL
from evolve.agent.protocol import parse_text, parse_turn
from evolve.archive import ArchiveReader, LlmCall, ProgramRow

EVAL_HEAD = "evaluation on the training data:"
# What an edit's note may say before an evaluation it came with (session._act): fixed texts
EDIT_NOTES = ("edit applied to the working copy", "the edit changed nothing")
# A stored reply is already bounded by the client's reply cap: a transcript reads it whole
_LIMIT = 1 << 40


@dataclass(frozen=True)
class ToolUse:
    name: str  # list | read | edit | evaluate | submit; "" for a malformed action
    arg: str  # read's path, edit's text ("" for the others)
    result: str | None  # what the next turn's prompt told of it; None: never told


@dataclass(frozen=True)
class AgentTurn:
    turn: int  # from 1
    call_id: int | None
    model: str
    text: str  # the model's words (a native turn's content, a text turn's whole reply)
    tools: tuple[ToolUse, ...]
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class AgentEvaluation:
    """One `evaluate` the session ran on train: its status and score as the model was told
    them (None: its result was never told, the session ended after it), and the whole text."""

    turn: int
    status: str | None
    score: float | None
    text: str


@dataclass(frozen=True)
class Transcript:
    protocol: str  # text | native
    turns: tuple[AgentTurn, ...]
    evaluations: tuple[AgentEvaluation, ...]

    @property
    def tool_calls(self) -> int:
        return sum(len(t.tools) for t in self.turns)

    @property
    def tokens(self) -> int:
        return sum(t.prompt_tokens + t.completion_tokens for t in self.turns)

    def to_json(self) -> dict:
        return {
            "protocol": self.protocol,
            "turns": [asdict(t) for t in self.turns],
            "tool_calls": self.tool_calls,
            "tokens": self.tokens,
            "evaluations": [asdict(e) for e in self.evaluations],
        }


def build(calls: list[LlmCall], protocol: str, evals_limit: int | None = None) -> Transcript:
    """The transcript of an iteration's answered turns, in order. `evals_limit`: the run's
    --agent-evals, to tell whether the last turn's evaluate ran (its result was never told)."""
    turns: list[AgentTurn] = []
    evals: list[AgentEvaluation] = []
    for k, call in enumerate(calls):
        told = _told(call, calls[k + 1]) if k + 1 < len(calls) else None
        tools = _tools(call, protocol, told)
        turns.append(
            AgentTurn(
                k + 1,
                call.call_id,
                call.model,
                _words(call, protocol),
                tools,
                call.prompt_tokens,
                call.completion_tokens,
            )
        )
        for use in tools:
            if use.name != "evaluate":
                continue
            if use.result is not None:
                e = read_evaluation(k + 1, use.result)
                if e is not None:
                    evals.append(e)
            elif evals_limit is None or len(evals) < evals_limit:
                evals.append(AgentEvaluation(k + 1, None, None, "(never told: the session ended)"))
    return Transcript(protocol, tuple(turns), tuple(evals))


def _words(call: LlmCall, protocol: str) -> str:
    if protocol == "native":
        return parse_turn(call.reply or "", protocol, _LIMIT).content
    return call.reply or ""


def _told(call: LlmCall, after: LlmCall) -> tuple[dict, list[dict]] | None:
    """The turn's assistant message and the messages that answered it, as the next turn's
    prompt carried them; None where that prompt does not extend this one's."""
    base = len(call.prompt)
    prompt = after.prompt
    if len(prompt) <= base + 1 or not isinstance(prompt[base], dict):
        return None
    if prompt[base].get("role") != "assistant":
        return None
    return prompt[base], [m for m in prompt[base + 1 :] if isinstance(m, dict)]


def _tools(
    call: LlmCall, protocol: str, told: tuple[dict, list[dict]] | None
) -> tuple[ToolUse, ...]:
    if told is None:  # the last turn: its actions, as the session read them
        turn = parse_turn(call.reply or "", protocol, _LIMIT)
        return tuple(ToolUse(a.name, a.arg, None) for a in turn.actions)
    said, answers = told
    calls = said.get("tool_calls")
    if isinstance(calls, list) and calls:  # native: one tool message per call, in order
        out = []
        for i, c in enumerate(calls):
            got = c.get("function") if isinstance(c, dict) else None
            fn = got if isinstance(got, dict) else {}
            result = answers[i].get("content") if i < len(answers) else None
            out.append(ToolUse(str(fn.get("name", "")), _arg(fn), _str(result)))
        return tuple(out)
    text = _str(said.get("content")) or ""
    action = parse_text(text).actions[0]
    result = _str(answers[0].get("content")) if answers else None
    return (ToolUse(action.name, action.arg, result),)


def _arg(fn: dict) -> str:
    """A native call's argument (read's path, edit's text), its JSON text where unreadable."""
    raw = _str(fn.get("arguments")) or ""
    try:
        args = json.loads(raw)
    except (ValueError, RecursionError):
        return raw
    if isinstance(args, dict):
        for key in ("path", "edit"):
            if isinstance(args.get(key), str):
                return args[key]
        return ""
    return raw


def _str(v: object) -> str | None:
    return v if isinstance(v, str) else None


def read_evaluation(turn: int, result: str) -> AgentEvaluation | None:
    """An evaluate's result as an evaluation that ran, or None where it did not run (the
    edit before it failed, evaluate is off, or it was malformed)."""
    lines = result.splitlines()
    at = 1 if lines and lines[0] in EDIT_NOTES else 0
    if len(lines) < at + 3 or lines[at] != EVAL_HEAD:
        return None
    status = lines[at + 1].removeprefix("status: ")
    shown = lines[at + 2].removeprefix("score: ").split(" ", 1)[0]
    try:
        score = None if shown == "none" else float(shown)
    except ValueError:
        score = None
    return AgentEvaluation(turn, status[:40], score, "\n".join(lines[at:]))


def _settings(reader: ArchiveReader, run_id: str) -> tuple[str, int | None]:
    """The run's --agent-protocol and --agent-evals, as its stored config says (`auto`:
    each session's own, auto_protocol.of_session)."""
    run = reader.run(run_id)
    config = run.config if run is not None else {}
    limit = config.get("agent_evals")
    return str(config.get("agent_protocol") or "text"), limit if isinstance(limit, int) else None


def of_program(reader: ArchiveReader, p: ProgramRow) -> Transcript | None:
    """The transcript of the agent iteration that made `p`; None for any other program."""
    if p.edit_kind != "agent" or p.iteration <= 0:
        return None
    calls = reader.agent_turns(p.run_id, p.iteration)
    if not calls or calls[-1].model == COMMAND_MODEL:  # a command's run: command_view.py
        return None
    protocol, limit = _settings(reader, p.run_id)
    return build(calls, of_session(protocol, calls, None), limit)


@dataclass(frozen=True)
class AgentCounts:
    """A run's agent sessions summed: what the report and `evolve bench` count. Its turns
    are answered calls too; its evaluations are train evaluations inside sessions, not
    candidates."""

    sessions: int = 0
    turns: int = 0
    tool_calls: int = 0
    evaluations: int = 0
    tokens: int = 0


def run_counts(reader: ArchiveReader, run_id: str) -> AgentCounts:
    by_iteration = reader.run_agent_turns(run_id)
    if not by_iteration:
        return AgentCounts()
    protocol, limit = _settings(reader, run_id)
    sessions = [c for c in by_iteration.values() if c[-1].model != COMMAND_MODEL]
    commands = [c[-1] for c in by_iteration.values() if c[-1].model == COMMAND_MODEL]
    ts = [build(calls, of_session(protocol, calls, None), limit) for calls in sessions]
    return AgentCounts(
        len(ts) + len(commands),
        sum(len(t.turns) for t in ts) + len(commands),  # a command run is one call
        sum(t.tool_calls for t in ts),
        sum(len(t.evaluations) for t in ts) + sum(_command_evals(c) for c in commands),
        sum(t.tokens for t in ts) + sum(c.prompt_tokens + c.completion_tokens for c in commands),
    )


def _command_evals(call: LlmCall) -> int:
    """The evolve-eval evaluations a command's run made, as its stored outcome counts them."""
    try:
        n = json.loads(call.reply or "{}").get("evals")
    except (ValueError, AttributeError):
        return 0
    return n if isinstance(n, int) and not isinstance(n, bool) else 0
