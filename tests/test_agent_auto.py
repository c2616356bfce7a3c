"""`--agent-protocol auto` (the default): a scripted endpoint that refuses `tools`, one
that takes them but answers in text, and one that calls tools; the run decides once, says
so once, and a resumed run keeps the decision."""

from __future__ import annotations

import evolve
from evolve.pipeline.state import NullObserver
from evolve.testing.scripted_llm import Reply, ScriptedLLM, tool_call
from tests.test_agent import block, rows, run, toy

REFUSED = "tools is not supported by this server: remove 'tools' from the request"


class Notes(NullObserver):
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)


def decisions(tmp_path) -> list[tuple]:
    return rows(tmp_path, "SELECT kind, detail_json FROM decisions WHERE kind='agent_protocol'")


def said(notes: Notes) -> list[str]:
    return [n for n in notes.lines if n.startswith("--agent-protocol auto:")]


def text_agent(refuse_tools: bool):
    """Answers in the text protocol: edit and submit; with tools asked, a 400 or text."""

    def answer(request: dict) -> Reply:
        if refuse_tools and "tools" in request:
            return Reply(REFUSED, status=400)
        return Reply(block("return x + 7") + "ACTION: submit")

    return answer


def test_an_endpoint_that_refuses_tools_gets_the_text_protocol(tmp_path):
    notes = Notes()
    with ScriptedLLM(text_agent(refuse_tools=True)) as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_protocol="auto", observer=notes)
        requests = srv.requests
    assert (summary.status, summary.best_score) == ("finished", 0.0)
    assert ["tools" in r for r in requests] == [True, False]  # refused once, then text
    assert "ACTION: submit" in requests[1]["messages"][-1]["content"]  # the text rules
    ((_, detail),) = decisions(tmp_path)
    assert '"protocol": "text"' in detail and "refused tools" in detail
    (line,) = said(notes)
    assert "text from now on (the endpoint refused tools: " in line and "HTTP 400" in line


def test_a_text_answer_to_tools_switches_the_run_and_resume_keeps_it(tmp_path):
    notes = Notes()
    with ScriptedLLM(text_agent(refuse_tools=False)) as srv:
        run(toy(tmp_path), srv, tmp_path, agent_protocol="auto", observer=notes)
        first = srv.requests
        resumed = evolve.resume("ag", runs_dir=tmp_path / "runs", iterations=3, observer=notes)
        later = srv.requests[len(first) :]
    assert resumed.status == "finished"
    assert ["tools" in r for r in first] == [True]  # the probe: asked with tools, answered in text
    assert later and not any("tools" in r for r in later)  # decided: text, also after resume
    ((_, detail),) = decisions(tmp_path)
    assert '"protocol": "text"' in detail and "an ACTION line, no tool call" in detail
    assert len(said(notes)) == 1


def test_an_endpoint_that_calls_tools_keeps_native_tool_calls(tmp_path):
    notes = Notes()
    calls = [
        Reply("", tool_calls=[tool_call("edit", "c1", edit=block("return x + 7"))]),
        Reply("", tool_calls=[tool_call("submit", "c2")]),
    ]
    with ScriptedLLM.from_list(calls) as srv:
        summary = run(
            toy(tmp_path),
            srv,
            tmp_path,
            agent_protocol="auto",
            iterations=2,
            parallel=1,
            observer=notes,
        )
        requests = srv.requests
    assert summary.status == "finished" and summary.best_score == 0.0
    assert requests and all("tools" in r for r in requests)
    ((_, detail),) = decisions(tmp_path)
    assert '"protocol": "native"' in detail
    (line,) = said(notes)
    assert "native from now on (a tool was called)" in line
    # the first session's rules offered both ways; a decided run's only the tools
    opening = len(requests[0]["messages"])
    firsts = [r["messages"][-1]["content"] for r in requests if len(r["messages"]) == opening]
    assert len(firsts) == 2 and "If you cannot call tools" in firsts[0]
    assert "Use the tools" in firsts[1] and "If you cannot call tools" not in firsts[1]
