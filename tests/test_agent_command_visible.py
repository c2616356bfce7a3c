"""A `--proposer command:CMD` iteration made visible: the program page and its JSON API show
the command line, how it ended, its tokens and cost, each evolve-eval (score or error) and
the end of its output, all escaped; `evolve bench`'s counts take its run as one call."""

from __future__ import annotations

import pytest
from starlette.testclient import TestClient

from evolve.agent.transcript import run_counts
from evolve.archive import ArchiveReader
from evolve.web.app import make_app
from tests.test_agent import toy
from tests.test_agent_command import agent, run

SCRIPT = "<script>alert('pwned')</script>"
IMG = "<img src=x onerror=alert(1)>"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("command_visible")
    bodies = ["return x + 5", f'raise ValueError("{IMG}")', "return x + 7"]
    proposer = agent("bodies", *bodies, SCRIPT)
    assert run(toy(tmp), tmp, proposer, agent_evals=2).status == "finished"
    return tmp / "runs"


def test_the_program_page_shows_the_command_readably_and_escaped(runs):
    html = TestClient(make_app(runs)).get("/programs/cmd:1").text
    assert 'id="command-link"' in html and '<h2 id="command">Agent command</h2>' in html
    section = html[html.index('<h2 id="command">') :]
    summary = section[section.index('id="command-summary"') :].split("</p>")[0]
    assert 'exited with status <b data-k="returncode">0</b>' in summary
    assert "1000 prompt + 200 completion tokens, $0.25" in summary
    assert "2 evolve-eval evaluations" in summary
    line = section[section.index('id="command-line"') :].split("</pre>")[0]
    assert "bodies" in line and "&lt;script&gt;" in line
    evals = section[section.index('id="command-evals"') :].split("</ol>")[0]
    assert evals.count("<li>") == 3
    assert "evolve-eval 1: ok, train score" in evals
    assert 'evolve-eval 2: runtime_error: <span class="error">ValueError: &lt;img' in evals
    assert "evolve-eval 3: nothing evaluated" in evals and "no evaluations left" in evals
    out = section[section.index('id="command-stdout"') :].split("</pre>")[0]
    err = section[section.index('id="command-stderr"') :].split("</pre>")[0]
    assert "&lt;script&gt;alert(" in out and "&lt;script&gt;alert(" in err
    for hostile in (SCRIPT, IMG):  # every untrusted text escaped, nowhere raw
        assert hostile not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in evals
    # the raw JSON reply is not the page's: the section stands for it
    assert '"stdout_tail"' not in html and 'id="agent-turns"' not in html


def test_the_api_and_the_bench_counts_read_the_command_run(runs):
    got = TestClient(make_app(runs)).get("/api/programs/cmd:1").json()
    assert got["agent"] is None
    command = got["command"]
    assert command["returncode"] == 0 and command["evals"] == 2
    assert [c["status"] for c in command["eval_calls"]] == ["ok", "runtime_error", None]
    assert command["eval_calls"][0]["score"] == -2.0
    assert IMG in command["eval_calls"][1]["error"]
    reader = ArchiveReader(runs)
    counts = run_counts(reader, "cmd")
    assert (counts.sessions, counts.turns, counts.tool_calls) == (1, 1, 0)
    assert (counts.evaluations, counts.tokens) == (2, 1200)
