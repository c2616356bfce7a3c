"""`--agent-protocol auto`: native tool calls where the endpoint takes them, the text
protocol otherwise, decided once per run from its first answers.

Until the run has decided, a session probes: it is asked with `tools`, and its first
message gives the rules of both protocols (a native reply without tool calls is read as
text anyway: protocol.parse_turn). The decision is `native` at the first answer that calls
a tool, `text` at the first answer with no tool call but an ACTION line, or when the
endpoint refuses a request for its tools (HTTP 400/422 naming tools or functions: the
session is then asked again in text). It is one row of the run's decisions (kind
`agent_protocol`), written before anything else comes of it, and the run's notices say it
once, so a resumed run never decides again. A session keeps the protocol it started with,
read back on resume from its first stored turn: asked with tools, its reply holds the
tool-call mark (evolve/llm/answer.py), so a probing session stays native to its end."""

from __future__ import annotations

import re

from evolve.agent.protocol import has_action
from evolve.archive import Archive, ArchiveReader, LlmCall
from evolve.llm import LLMError
from evolve.llm.answer import TOOL_CALLS_MARK, read_tool_reply
from evolve.pipeline.state import RunObserver

KIND = "agent_protocol"  # its decisions row
_REJECTED = re.compile(r"HTTP 4(00|22)\b")
_ABOUT_TOOLS = re.compile(r"tool|function", re.I)


def decided(source: Archive | ArchiveReader, run_id: str) -> str | None:
    """The run's decision, where it has made one."""
    for d in source.decisions(run_id):
        if d.kind == KIND and d.detail.get("protocol") in ("text", "native"):
            return str(d.detail["protocol"])
    return None


def of_session(configured: str, stored: list[LlmCall], run: str | None) -> str:
    """The protocol a session runs with: the configured one, else its first stored turn's
    (asked with tools: native), else the run's decision, else native (a probe)."""
    if configured != "auto":
        return configured
    if stored:
        return "native" if TOOL_CALLS_MARK in (stored[0].reply or "") else "text"
    return run or "native"


def verdict(call: LlmCall) -> str | None:
    """What an answer asked with tools says of the endpoint: native (it called a tool),
    text (no tool call, an ACTION line), None (neither: not yet known)."""
    content, calls = read_tool_reply(call.reply or "")
    if calls:
        return "native"
    if has_action(content):
        return "text"
    return None


def rejects_tools(e: LLMError) -> bool:
    """Whether a failed request was refused for its tools (HTTP 400/422 naming them)."""
    text = str(e)
    return bool(_REJECTED.search(text)) and bool(_ABOUT_TOOLS.search(text))


def decide(
    archive: Archive, run_id: str, observer: RunObserver, at: int, protocol: str, why: str
) -> None:
    """Store the run's decision and say it, once (a later verdict changes nothing)."""
    if decided(archive, run_id) is not None:
        return
    archive.add_decision(run_id, at, KIND, {"protocol": protocol, "why": why})
    observer.note(f"--agent-protocol auto: {protocol} from now on ({why})")
