"""An agent's work made visible: scripted `--proposer agent` runs (the text protocol with a
hostile model and candidate, native tool calls) and a single-call run on the same toy
problem, then the program page and its JSON API, `archive show`, the export, the report and
`evolve bench`'s counts read back from the archive; and --agent-tokens ending a session,
also across a kill -9 and `resume`."""

from __future__ import annotations

import json
import signal
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest
from starlette.testclient import TestClient

from evolve.agent.session import turn_tokens
from evolve.archive import ArchiveReader, LlmCall
from evolve.benchmark.measure import measure
from evolve.benchmark.normalise import References
from evolve.benchmark.table import summarise
from evolve.export.report import write_report
from evolve.export.tables import write_tables
from evolve.llm.context_budget import estimate_tokens
from evolve.testing.cli_helpers import archive_json, popen, run_args
from evolve.testing.cli_helpers import evolve as evolve_cli
from evolve.testing.scripted_llm import Reply, ScriptedLLM, tool_call
from evolve.web.app import make_app
from tests.test_agent import block, rows, run, toy

SCRIPT = "<script>alert('pwned')</script>"
IMG = "<img src=x onerror=alert(1)>"
TEXT_TURNS = [
    f"{SCRIPT} Let me look first.\nACTION: read seed.py",
    block("return x + 5") + "ACTION: evaluate",
    block(f'raise ValueError("{IMG}")') + "ACTION: evaluate",  # the candidate's error text
    block("return x + 7") + "ACTION: submit",
]


@dataclass(frozen=True)
class Runs:
    runs: Path


@pytest.fixture(scope="module")
def agent_runs(tmp_path_factory) -> Runs:
    """Three runs of one iteration each in one archive: `ag` (text protocol), `nat` (native
    tool calls) and `one` (a single call)."""
    tmp = tmp_path_factory.mktemp("agent_visible")
    problem = toy(tmp)
    with ScriptedLLM.from_list(TEXT_TURNS, then="ACTION: submit") as srv:
        assert run(problem, srv, tmp, run_id="ag").best_score == 0.0
    native = [
        Reply("", tool_calls=[tool_call("list", "c1"), tool_call("edit", "c2", edit=block("return x + 7"))]),
        Reply("", tool_calls=[tool_call("evaluate", "c3")]),
        Reply("done", tool_calls=[tool_call("submit", "c4")]),
    ]  # fmt: skip
    with ScriptedLLM.from_list(native, then="ACTION: submit") as srv:
        assert run(problem, srv, tmp, run_id="nat", agent_protocol="native").best_score == 0.0
    with ScriptedLLM.from_list([block("return x + 7")]) as srv:
        assert run(problem, srv, tmp, run_id="one", proposer="single").best_score == 0.0
    return Runs(tmp / "runs")


def test_the_program_page_shows_the_transcript_collapsed_and_escaped(agent_runs):
    html = TestClient(make_app(agent_runs.runs)).get("/programs/ag:1").text
    assert 'id="agent-link"' in html and "agent transcript (4 turns)" in html
    section = html[html.index('<h2 id="agent">') :]
    assert "4 turns (text protocol), 4 tool calls, 2 train evaluations" in section
    # every turn and every evaluation collapsed: none of the transcript's details is open
    turns = section[
        section.index('id="agent-turns"') : section.index(
            "</ol>", section.index('id="agent-turns"')
        )
    ]
    assert turns.count("<details>") == 4 and "<details open" not in turns
    assert "turn 2: ok, train score -2" in section
    assert "turn 3: runtime_error, train score –" in section or "turn 3: runtime_error" in section
    # the model's and the candidate's text is text: escaped, never markup
    assert SCRIPT not in html and IMG not in html
    assert "&lt;script&gt;alert(&#39;pwned&#39;)&lt;/script&gt;" in turns
    evals = section[section.index('id="agent-evals"') : section.index('id="agent-turns"')]
    assert "&lt;img src=x onerror=alert(1)&gt;" in evals
    # a single call's program has no transcript
    assert 'id="agent"' not in TestClient(make_app(agent_runs.runs)).get("/programs/one:1").text


def test_the_api_gives_each_turn_its_tools_and_what_they_were_told(agent_runs):
    client = TestClient(make_app(agent_runs.runs))
    agent = client.get("/api/programs/ag:1").json()["agent"]
    assert agent["protocol"] == "text" and len(agent["turns"]) == 4
    assert [[u["name"] for u in t["tools"]] for t in agent["turns"]] == [
        ["read"], ["evaluate"], ["evaluate"], ["submit"]
    ]  # fmt: skip
    first = agent["turns"][0]
    assert first["text"] == TEXT_TURNS[0] and first["tools"][0]["arg"] == "seed.py"
    assert first["tools"][0]["result"].startswith("seed.py:\n# EVOLVE-BLOCK-START")
    assert agent["turns"][3]["tools"][0]["result"] is None  # the last turn's: never told
    (ok, failed) = agent["evaluations"]
    assert (ok["turn"], ok["status"], ok["score"]) == (2, "ok", -2.0)
    assert (failed["turn"], failed["status"], failed["score"]) == (3, "runtime_error", None)
    assert IMG in failed["text"]  # JSON carries the text as it is; the page escapes it
    calls = rows(agent_runs.runs.parent, "SELECT prompt_tokens + completion_tokens FROM llm_calls"
                 " WHERE run_id='ag' ORDER BY call_id")  # fmt: skip
    assert agent["tokens"] == sum(c[0] for c in calls) > 0

    native = client.get("/api/programs/nat:1").json()["agent"]
    tools = [[(u["name"], u["arg"][:20]) for u in t["tools"]] for t in native["turns"]]
    assert tools == [[("list", ""), ("edit", "```python\n# EVOLVE-B")], [("evaluate", "")],
                     [("submit", "")]]  # fmt: skip
    told = native["turns"][0]["tools"]
    assert told[0]["result"].startswith("files: seed.py") and "edit applied" in told[1]["result"]
    assert [(e["turn"], e["status"], e["score"]) for e in native["evaluations"]] == [(2, "ok", 0.0)]
    assert client.get("/api/programs/one:1").json()["agent"] is None


def test_archive_show_prints_the_session_and_its_json_carries_the_transcript(agent_runs):
    runs = agent_runs.runs
    shown = evolve_cli("archive", "show", "ag:1", "--runs-dir", runs)
    assert shown.returncode == 0, shown.stderr
    out = " ".join(shown.stdout.split())  # a narrow terminal may wrap
    assert "agent session (text protocol): 4 turns, 4 tool calls, 2 train evaluations" in out
    assert "evaluation at turn 2: ok, train score -2" in out
    assert "evaluation at turn 3: runtime_error, train score none" in out
    assert "turn 1: read" in out and "read seed.py -> seed.py:" in out
    assert "submit -> never told" in out
    d = archive_json(runs, "show", "ag:1")
    assert len(d["agent"]["turns"]) == 4 and d["agent"]["tool_calls"] == 4
    assert "agent" not in archive_json(runs, "show", "one:1")


def test_the_export_and_the_report_include_the_agents_turns(agent_runs, tmp_path):
    reader = ArchiveReader(agent_runs.runs)
    write_tables(reader, tmp_path / "ag.jsonl", "jsonl", run_id="ag")
    progs = pd.read_json(tmp_path / "ag.jsonl", lines=True).set_index("program_id")
    child = progs.loc["ag:1"]
    assert (child["agent.turns"], child["agent.tool_calls"], child["agent.evals"]) == (4, 4, 2)
    calls = pd.read_json(tmp_path / "ag.llm_calls.jsonl", lines=True)
    assert list(calls["agent_turn"]) == [1, 2, 3, 4]
    tools = [json.loads(t) for t in calls["agent_tools"]]
    assert tools[1] == [{"name": "evaluate", "arg": "", "result": tools[1][0]["result"]}]
    assert "score: -2 (higher is better)" in tools[1][0]["result"]
    write_tables(reader, tmp_path / "one.csv", "csv", run_id="one")  # no agent: empty columns
    one = pd.read_csv(tmp_path / "one.llm_calls.csv")
    assert one["agent_turn"].isna().all() and "agent.turns" not in pd.read_csv(tmp_path / "one.csv")
    write_report(reader, "ag", tmp_path / "report.html")
    report = (tmp_path / "report.html").read_text()
    assert "agent sessions" in report
    assert "4 turns, 4 tool calls, 2 train evaluations inside sessions" in report


def test_bench_counts_calls_tokens_evaluations_and_agent_evaluations_apart(agent_runs):
    reader = ArchiveReader(agent_runs.runs)
    refs = References(None, None, None)
    agent = measure(reader, "ag", 0, refs, 0, 1.0)
    single = measure(reader, "one", 0, refs, 0, 1.0)
    # the agent's turns are its calls; its two train evaluations are not candidates
    assert (agent.calls, agent.evaluations, agent.agent_sessions, agent.agent_evals) == (4, 1, 1, 2)
    assert (single.calls, single.evaluations, single.agent_sessions, single.agent_evals) == (
        1,
        1,
        0,
        0,
    )
    assert agent.tokens > single.tokens > 0
    summary = summarise("toy", "", refs, [agent])
    assert (summary.calls, summary.evaluations, summary.agent_evals) == (4, 1, 2)
    assert summary.to_json()["results"][0]["agent_evals"] == 2


def test_a_turn_without_usage_is_counted_by_its_estimate():
    prompt = [{"role": "user", "content": "improve the program"}]
    reported = LlmCall("r", 1, 0, "m", "block", prompt, "ACTION: list", prompt_tokens=7,
                       completion_tokens=3)  # fmt: skip
    assert turn_tokens(reported) == 10
    absent = LlmCall("r", 1, 0, "m", "block", prompt, "ACTION: list")
    assert (
        turn_tokens(absent)
        >= estimate_tokens("improve the program") + estimate_tokens("ACTION: list")
        > 0
    )


def test_agent_tokens_ends_the_session_and_hands_in_the_working_copy(tmp_path):
    # the first turn uses all 150,000 tokens: the second's prompt would pass them
    first = Reply(block("return x + 7") + "ACTION: read seed.py", prompt_tokens=149_000,
                  completion_tokens=1_000)  # fmt: skip
    with ScriptedLLM.from_list([first], then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_tokens=150_000)
        assert len(srv.requests) == 1
    assert summary.best_score == 0.0  # the edited working copy was submitted
    ((status, kind),) = rows(tmp_path, "SELECT status, edit_kind FROM programs WHERE iteration=1")
    assert (status, kind) == ("ok", "agent")


def test_agent_tokens_must_be_a_positive_count(tmp_path):
    r = evolve_cli("run", toy(tmp_path), "--proposer", "agent", "--agent-tokens", "0",
                   "--runs-dir", tmp_path / "runs")  # fmt: skip
    assert r.returncode != 0 and "--agent-tokens" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) <= 2


def test_kill_9_and_resume_count_the_stored_turns_tokens(tmp_path):
    """Turns of 100,000 tokens under --agent-tokens 250,000: turns 1 and 2 are stored, turn 3
    is in flight at the kill and asked again on resume; a fourth would pass the budget only
    if the stored turns count, so it is never asked."""
    runs, problem = tmp_path / "runs", toy(tmp_path)
    usage = {"prompt_tokens": 99_000, "completion_tokens": 1_000}
    script = ["ACTION: read seed.py", block("return x + 7") + "ACTION: list"]
    lock, asked = threading.Lock(), [0]

    def answer(request: dict) -> Reply:
        with lock:
            asked[0] += 1
            k = asked[0]
        if k <= len(script):
            return Reply(script[k - 1], **usage)
        if k == len(script) + 1:
            return Reply("too late", delay_s=60, **usage)  # in flight when the kill comes
        return Reply("ACTION: list", **usage)

    args = ["--sandbox", "local", "--run-id", "tk", "--tune-evals", "0", "--proposer", "agent",
            "--agent-tokens", "250000", "--agent-turns", "10"]  # fmt: skip
    with ScriptedLLM(answer) as srv:
        proc = popen(*run_args(srv.base_url, runs, *args, problem=problem, iterations=1))
        deadline = time.monotonic() + 240
        while len(srv.requests) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        resumed = evolve_cli("resume", "tk", "--runs-dir", runs, "--no-progress", timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        requests = srv.requests
    assert len(requests) == 4 and requests[2]["messages"] == requests[3]["messages"]
    assert archive_json(runs, "best", "--run", "tk")["score"] == 0.0
    turns = rows(tmp_path, "SELECT prompt_tokens FROM llm_calls WHERE reply IS NOT NULL")
    assert turns == [(99_000,)] * 3


def test_bench_agent_sessions_says_what_each_turn_did_and_how_sessions_ended(agent_runs):
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "bench" / "agent_sessions.py"
    out = Path(agent_runs.runs.parent) / "sessions.json"
    r = subprocess.run(
        [sys.executable, str(script), str(agent_runs.runs), "--json", str(out)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    by_run = {row["run_id"]: row for row in json.loads(out.read_text())}
    assert sorted(by_run) == ["ag", "nat"]  # the single-call run has no session
    text = by_run["ag"]
    assert (text["sessions"], text["turns"]) == (1, 4)
    assert text["actions"] == {"read": 1, "evaluate": 2, "submit": 1}
    assert text["edits"] == {"applied": 2, "never told": 1}  # the last turn's: submitted
    assert text["evaluations"] == {"ok": 1, "runtime_error": 1}
    assert (text["ends"], text["programs"]) == ({"submit": 1}, {"ok": 1})
    native = by_run["nat"]
    assert native["actions"] == {"list": 1, "evaluate": 1, "submit": 1}
    assert native["edits"] == {"applied": 1} and native["ends"] == {"submit": 1}
    assert "| all (2 runs) | 2 | 7 |" in r.stdout
