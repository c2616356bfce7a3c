"""`archive show` of a program an agent made: its session in a few lines (turns, tool
calls, tokens, the train evaluations it ran and their scores), then each turn's tools.

Tool arguments and results are the model's and the candidate's text: they go through
safe_rich, cut to a line each; `--json` carries the whole transcript (`agent`)."""

from __future__ import annotations

from rich.console import Console

from evolve.agent.transcript import Transcript
from evolve.cli.safe_text import safe_rich

SHOWN = 100  # characters of a tool's argument or result's first line


def _line(text: str | None) -> str:
    first = (text or "").strip().splitlines()[:1]
    s = first[0] if first else ""
    return s if len(s) <= SHOWN else s[:SHOWN] + "..."


def _score(v: float | None) -> str:
    return "none" if v is None else f"{v:.6g}"


def print_transcript(out: Console, t: Transcript) -> None:
    n, e = len(t.turns), len(t.evaluations)
    out.print(
        safe_rich(
            f"agent session ({t.protocol} protocol): {n} turn{'s' * (n != 1)},"
            f" {t.tool_calls} tool call{'s' * (t.tool_calls != 1)},"
            f" {e} train evaluation{'s' * (e != 1)}, {t.tokens} tokens",
            style="bold",
        )
    )
    for ev in t.evaluations:
        told = (
            "result never told (the session ended)"
            if ev.status is None
            else f"{ev.status}, train score {_score(ev.score)}"
        )
        out.print(safe_rich(f"  evaluation at turn {ev.turn}: {told}"), highlight=False)
    for turn in t.turns:
        tools = ", ".join(u.name or "malformed action" for u in turn.tools) or "no tool"
        tokens = turn.prompt_tokens + turn.completion_tokens
        out.print(safe_rich(f"  turn {turn.turn}: {tools} ({tokens} tokens)"), highlight=False)
        for u in turn.tools:
            arg = f" {_line(u.arg)}" if u.arg and u.name != "edit" else ""
            result = "never told" if u.result is None else _line(u.result)
            out.print(safe_rich(f"    {u.name or '?'}{arg} -> {result}"), highlight=False)
