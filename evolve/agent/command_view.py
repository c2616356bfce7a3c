"""A `--proposer command:CMD` iteration as the program page shows it: the command line,
how it ended, its tokens and cost, each evolve-eval it made (score or error) and the tail of
its output, read from its one llm_calls row (model `command`; command_iteration.py writes
its reply as JSON).

Everything here but the numbers is the command's or the candidate's text: untrusted,
escaped wherever shown. A row of an older run lacks some fields: they read as empty."""

from __future__ import annotations

import json
from dataclasses import dataclass

from evolve.agent.command_spec import COMMAND_MODEL, PREFIX
from evolve.agent.transcript import read_evaluation
from evolve.archive import ArchiveReader, LlmCall, ProgramRow

MAX_EVAL_CALLS_KEPT = 100  # evolve-eval calls stored per run (refused ones included)
OUTPUT_TAIL = 4_000  # characters of the command's stdout kept
_TEXT = 4_000  # of what one evolve-eval answered
_ERROR = 400  # of an evaluation's error line(s), shown in its summary


def eval_call(said: str, evaluated: bool) -> dict:
    """One evolve-eval as stored: its status and score (None: nothing was evaluated), its
    error, and the whole answer the command read."""
    e = read_evaluation(0, said) if evaluated else None
    return {
        "status": e.status if e else None,
        "score": e.score if e else None,
        "error": _error(said) if e else "",
        "text": said[:_TEXT],
    }


def _error(said: str) -> str:
    """The `error:` artifact of an evaluation's answer (outcome_text writes it as a key
    line, then its text, up to the next artifact or the budget line)."""
    lines = said.splitlines()
    if "error:" not in lines:
        return ""
    out = []
    for line in lines[lines.index("error:") + 1 :]:
        if line.startswith("[evaluations left:") or (line.endswith(":") and " " not in line):
            break
        out.append(line)
    return "\n".join(out).strip()[-_ERROR:]


@dataclass(frozen=True)
class EvalCall:
    status: str | None  # None: refused, nothing was evaluated
    score: float | None
    error: str
    text: str


@dataclass(frozen=True)
class CommandView:
    command: str  # as the user gave it, `{task}` unfilled
    returncode: int | None  # None: stopped at its deadline
    reason: str
    oom_killed: bool
    procs_capped: bool
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    seconds: float
    evals: int
    eval_calls: tuple[EvalCall, ...]
    stdout_tail: str
    stderr_tail: str


def _str(v: object) -> str:
    return v if isinstance(v, str) else ""


def _num(v: object) -> float | None:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def from_call(call: LlmCall, proposer: str) -> CommandView:
    """The view of a command row; a reply that is not the JSON evolve writes reads empty."""
    try:
        got = json.loads(call.reply or "{}")
    except ValueError:
        got = {}
    out = got if isinstance(got, dict) else {}
    raw = out.get("eval_calls")
    calls = tuple(
        EvalCall(
            _str(c.get("status")) or None, _num(c.get("score")), _str(c.get("error")),
            _str(c.get("text")),
        )
        for c in (raw if isinstance(raw, list) else [])
        if isinstance(c, dict)
    )  # fmt: skip
    rc = out.get("returncode")
    evals = out.get("evals")
    return CommandView(
        proposer.removeprefix(PREFIX),
        rc if isinstance(rc, int) and not isinstance(rc, bool) else None,
        _str(out.get("reason")),
        out.get("oom_killed") is True,
        out.get("procs_capped") is True,
        call.prompt_tokens,
        call.completion_tokens,
        call.cost_usd,
        call.latency_s,
        evals if isinstance(evals, int) and not isinstance(evals, bool) else len(calls),
        calls,
        _str(out.get("stdout_tail")),
        _str(out.get("stderr_tail")),
    )


def of_program(reader: ArchiveReader, p: ProgramRow) -> CommandView | None:
    """The command run that made `p`; None for any other program."""
    if p.edit_kind != "agent" or p.iteration <= 0:
        return None
    calls = reader.agent_turns(p.run_id, p.iteration)
    if not calls or calls[-1].model != COMMAND_MODEL:
        return None
    run = reader.run(p.run_id)
    proposer = run.config.get("proposer") if run is not None else None
    return from_call(calls[-1], proposer if isinstance(proposer, str) else "")
