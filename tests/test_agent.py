"""`--proposer agent`: an iteration as turns of a model on a copy of its parent, with the
scripted server (text ACTION lines and native tool calls), the toy problem (train and a
held-out split the agent's evaluations never read) and a program of several files."""

from __future__ import annotations

import json
import signal
import sqlite3
import threading
import time
from pathlib import Path

import evolve
from evaluators import tree
from evolve.archive import Archive
from evolve.testing.cli_helpers import archive_json, popen, run_args
from evolve.testing.cli_helpers import evolve as evolve_cli
from evolve.testing.scripted_llm import Reply, ScriptedLLM, tool_call
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / "tests" / "fixtures" / "tree_policy"
# f(3) should be 10; `held_out` is 1 on the test split only, so a text that shows it
# comes from a held-out evaluation
EVALUATOR = """
import importlib.util

def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"outputs": {"value": float(m.f(3)), "held_out": float(split == "test")}}

def score(outputs, split):
    metrics = {"value": outputs["value"], "held_out": outputs["held_out"]}
    return {"score": -abs(outputs["value"] - 10.0), "metrics": metrics}
"""
SEED = "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"


def toy(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    root.mkdir()
    (root / "problem.toml").write_text(
        '[problem]\nname = "toy"\nentry = "seed.py"\n'
        '[evaluation]\ntimeout_s = 30\nsplits = ["train", "test"]\ntest_split = "test"\n'
    )
    (root / "seed.py").write_text(SEED)
    (root / "evaluator.py").write_text(EVALUATOR)
    return root


def block(body: str) -> str:
    return f"```python\n# EVOLVE-BLOCK-START\ndef f(x):\n    {body}\n# EVOLVE-BLOCK-END\n```\n"


def run(problem: Path, srv: ScriptedLLM, tmp_path: Path, **kw):
    settings = {
        "model": "scripted",
        "api_base": srv.base_url,
        "sandbox": "local",
        "runs_dir": tmp_path / "runs",
        "run_id": "ag",
        "iterations": 1,
        "tune_evals": 0,
        "repair_attempts": 0,
        "llm_parallel": 1,
        "proposer": "agent",
        "agent_protocol": "text",  # the default (auto) has its own tests: test_agent_auto.py
        **kw,
    }
    return evolve.run(problem, **settings)


def rows(tmp_path: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(tmp_path / "runs" / "archive.db")
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def said(request: dict) -> list[str]:
    """The texts of a request's messages after the first turn's prompt."""
    return [str(m.get("content")) for m in request["messages"][2:]]


def test_text_protocol_reads_edits_evaluates_and_submits_a_better_program(tmp_path):
    script = [
        "Let me look first.\nACTION: read seed.py",
        "Try adding five.\n" + block("return x + 5") + "ACTION: evaluate",
        "Closer.\n" + block("return x + 7") + "```\nACTION: submit\n```",
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path)
        requests = srv.requests
    assert (summary.status, summary.best_score) == ("finished", 0.0)
    assert len(requests) == 3 and all("tools" not in r for r in requests)
    assert "ACTION: evaluate" in requests[0]["messages"][-1]["content"]  # told the rules
    assert "seed.py:\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n" in said(requests[1])[-1]
    told = said(requests[2])[-1]
    assert "edit applied" in told and "evaluation on the training data" in told
    assert "score: -2 (higher is better)" in told and "held_out=0" in told
    assert "[turns left: 4; evaluations left: 1]" in told
    # held-out data: never in what the agent is told, yet the new best was re-scored on it
    assert not any("held_out=1" in json.dumps(r["messages"]) for r in requests)
    ((code, kind, edit_kind, test_score, call),) = rows(
        tmp_path,
        "SELECT code, kind, edit_kind, test_score, llm_call_id FROM programs WHERE iteration=1",
    )
    assert "return x + 7" in code and (kind, edit_kind, test_score) == ("mutation", "agent", 0.0)
    calls = rows(tmp_path, "SELECT call_id, purpose, reply FROM llm_calls ORDER BY call_id")
    assert [c[1] for c in calls] == ["agent"] * 3 and call == calls[-1][0]
    assert calls[0][2] == script[0]


def test_native_tool_calls_edit_evaluate_and_submit(tmp_path):
    edit = block("return x + 7")
    script = [
        Reply("", tool_calls=[tool_call("list", "c1"), tool_call("edit", "c2", edit=edit)]),
        Reply("", tool_calls=[tool_call("evaluate", "c3")]),
        Reply("done", tool_calls=[tool_call("submit", "c4")]),
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_protocol="native")
        requests = srv.requests
    assert (summary.status, summary.best_score) == ("finished", 0.0)
    assert len(requests) == 3
    names = [t["function"]["name"] for t in requests[0]["tools"]]
    assert names == ["list", "read", "edit", "evaluate", "submit"]
    second = requests[1]["messages"]
    assert second[-3]["tool_calls"][1]["function"]["name"] == "edit"
    assert [(m["role"], m["tool_call_id"]) for m in second[-2:]] == [("tool", "c1"), ("tool", "c2")]
    assert "seed.py" in second[-2]["content"] and "edit applied" in second[-1]["content"]
    assert "score: -0 (higher is better)" in requests[2]["messages"][-1]["content"]


def test_budgets_end_the_session_and_an_unchanged_copy_is_a_failed_proposal(tmp_path):
    with ScriptedLLM.from_list(["ACTION: read seed.py"], then="ACTION: list") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_turns=2)
        assert len(srv.requests) == 2
    assert summary.status == "finished"
    ((status, code, artifacts),) = rows(
        tmp_path, "SELECT status, code, artifacts_json FROM programs WHERE iteration=1"
    )
    assert (status, code) == ("invalid_edit", None)
    assert json.loads(artifacts)["error"] == (
        "agent: 2 turns used (--agent-turns), and the working copy is its parent unchanged"
    )


def test_asking_for_an_evaluation_past_the_budget_submits_the_working_copy(tmp_path):
    script = [block("return x + 7") + "ACTION: evaluate"]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_evals=0)
        assert len(srv.requests) == 1
    assert summary.best_score == 0.0


def test_evaluating_the_parent_or_the_same_copy_again_spends_no_evaluation(tmp_path):
    script = [
        "ACTION: evaluate",  # the parent, unchanged
        block("return x + 5") + "ACTION: evaluate",
        "ACTION: evaluate",  # the same copy again
        block("return x + 7") + "ACTION: evaluate",  # the one evaluation left
        "ACTION: submit",
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_turns=6, agent_evals=2)
        requests = srv.requests
    assert summary.best_score == 0.0 and len(requests) == 5
    told = [said(r)[-1] for r in requests[1:]]
    assert told[0].startswith("nothing to evaluate: the working copy is its parent unchanged")
    assert told[1].startswith("edit applied to the working copy\nevaluation on the training")
    assert told[2].startswith("evaluated before, unchanged since:\nstatus: ok\nscore: -2 ")
    assert told[3].endswith("[turns left: 2; evaluations left: 0]")
    assert "metrics: held_out=0, value=10" in told[3]


def test_malformed_actions_are_told_in_one_line_and_count_as_turns(tmp_path):
    script = [
        "I would like to think about it.",
        "ACTION: dance wildly",
        "ACTION: read",
        "ACTION: read ../../etc/passwd",
        "ACTION: submit",  # nothing changed yet
        block("return x + 7") + "ACTION: submit",
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_turns=6)
        requests = srv.requests
    assert summary.best_score == 0.0 and len(requests) == 6
    told = [said(r)[-1].splitlines()[0] for r in requests[1:]]
    assert told == [
        "no ACTION line: end your reply with one line such as `ACTION: evaluate`",
        "unknown action 'dance': use one of list, read, evaluate, submit",
        "read needs a path (`ACTION: read notes`)",
        "no file '../../etc/passwd': read one of seed.py, description, notes, feedback",
        "nothing to submit: the working copy is its parent unchanged; edit it first",
    ]


def test_an_edit_without_an_action_line_is_evaluated_and_the_model_told_so(tmp_path):
    script = [block("return x + 5"), block("return x + 7") + "ACTION: submit"]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_turns=3)
        requests = srv.requests
    assert summary.best_score == 0.0 and len(requests) == 2
    told = said(requests[1])[-1]
    assert told.startswith("edit applied to the working copy\nevaluation on the training data:")
    assert "score: -2 (higher is better)" in told
    assert "your reply had no ACTION line: its edit was evaluated" in told


def test_sessions_keep_the_calls_they_may_take_so_none_is_cut_by_a_later_one(tmp_path):
    # 5 calls, 3 turns a session, up to 3 sessions in flight: the first keeps 3 calls, the
    # second the 2 left and is told so; a third would start only when calls are free again.
    # The model looks around until its last turn, then edits and submits.
    def promised(request: dict) -> int:
        rules = str(request["messages"][1]["content"])  # the first turn's prompt
        return int(rules.split("You have up to ")[1].split()[0])

    def responder(request: dict) -> str:
        turns = promised(request)  # each session hands in its own program: x + 7, x + 6
        if sum(m["role"] == "assistant" for m in request["messages"]) + 1 >= turns:
            return block(f"return x + {4 + turns}") + "ACTION: submit"
        return "ACTION: list"

    with ScriptedLLM(responder) as srv:
        run(toy(tmp_path), srv, tmp_path, iterations=4, max_calls=5, parallel=2, agent_turns=3)
        requests = srv.requests
    firsts = [r for r in requests if len(r["messages"]) == 2]
    assert len(requests) == 5 and [promised(r) for r in firsts] == [3, 2]
    turns = rows(tmp_path, "SELECT iteration, reply FROM llm_calls WHERE purpose = 'agent'")
    last = {it: reply for it, reply in turns}
    assert len(last) == 2 and all(r.endswith("ACTION: submit") for r in last.values())
    scores = rows(tmp_path, "SELECT score FROM programs WHERE iteration > 0 ORDER BY score")
    assert scores == [(-1.0,), (0.0,)]


def test_a_program_of_several_files_is_listed_read_and_edited_by_path(tmp_path):
    edit = (
        "policy/rank.py\n<<<<<<< SEARCH\n    return value - SIZE_PENALTY * size\n=======\n"
        "    return value - 0.25 * size\n>>>>>>> REPLACE\n"
    )
    script = ["ACTION: list", "ACTION: read policy/pick.py", edit + "ACTION: submit"]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(TREE, srv, tmp_path, edit_format="diff")
        requests = srv.requests
    assert summary.status == "finished" and len(requests) == 3
    assert "files: policy/rank.py, policy/pick.py, policy/__init__.py" in said(requests[1])[-1]
    assert "def choose(ranked, capacity):" in said(requests[2])[-1]
    archive = Archive(tmp_path / "runs")  # a tree's files are stored apart: read it back
    try:
        child = archive.program("ag:1")
    finally:
        archive.close()
    assert child is not None and child.code is not None and child.diff is not None
    files = tree.decode(child.code, "policy/__init__.py")
    assert "return value - 0.25 * size" in files["policy/rank.py"] and child.status == "ok"
    assert child.diff.startswith("--- a/policy/rank.py")


def test_a_failed_turn_resumes_the_iteration_without_asking_answered_turns_again(tmp_path):
    script = [
        "ACTION: read seed.py",
        block("return x + 5") + "ACTION: evaluate",
        Reply("bad request", status=400),  # not retried: the iteration is asked again
        block("return x + 7") + "ACTION: submit",
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path)
        requests = srv.requests
    assert summary.best_score == 0.0 and len(requests) == 4
    # the third turn's prompt, asked twice (failed, then again): turns 1 and 2 once each
    assert requests[2]["messages"] == requests[3]["messages"]
    assert [len(r["messages"]) for r in requests] == [2, 4, 6, 6]
    calls = rows(tmp_path, "SELECT purpose, reply IS NOT NULL FROM llm_calls ORDER BY call_id")
    assert calls == [("agent", 1), ("agent", 1), ("agent", 0), ("agent", 1)]


def test_kill_9_mid_iteration_and_resume_ask_no_answered_turn_again(tmp_path):
    runs, problem = tmp_path / "runs", toy(tmp_path)
    script = ["ACTION: read seed.py", block("return x + 5") + "ACTION: evaluate"]
    lock, asked = threading.Lock(), [0]

    def answer(request: dict) -> Reply:
        with lock:
            asked[0] += 1
            k = asked[0]
        if k <= len(script):
            return Reply(script[k - 1])
        if k == len(script) + 1:
            return Reply("too late", delay_s=60)  # in flight when the kill comes
        return Reply(block("return x + 7") + "ACTION: submit")

    args = ["--sandbox", "local", "--run-id", "k9", "--tune-evals", "0", "--proposer", "agent"]
    with ScriptedLLM(answer) as srv:
        proc = popen(*run_args(srv.base_url, runs, *args, problem=problem, iterations=1))
        deadline = time.monotonic() + 240
        while len(srv.requests) < 3 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        resumed = evolve_cli("resume", "k9", "--runs-dir", runs, "--no-progress", timeout=600)
        assert resumed.returncode == 0, resumed.stderr
        requests = srv.requests
    # turns 1 and 2 were asked once; the third turn's prompt (turn 2's evaluation carried
    # out again after the kill, as its result was never told) is the one asked before
    assert [len(r["messages"]) for r in requests] == [2, 4, 6, 6]
    assert requests[2]["messages"] == requests[3]["messages"]
    assert archive_json(runs, "best", "--run", "k9")["score"] == 0.0
    calls = rows(tmp_path, "SELECT purpose FROM llm_calls WHERE reply IS NOT NULL")
    assert calls == [("agent",)] * 3


def test_a_conversation_past_the_models_window_ends_the_session(tmp_path):
    long = "lorem " * 4000 + "\n" + block("return x + 7") + "ACTION: list"
    with ScriptedLLM.from_list([long], then="ACTION: submit", models=("tiny-0.5b",)) as srv:
        summary = run(toy(tmp_path), srv, tmp_path, model="tiny-0.5b")
        assert len(srv.requests) == 1  # a 4096-token window (the profile of a 0.5B model)
    assert summary.best_score == 0.0  # the working copy was changed: it is submitted


def test_a_native_iteration_asked_again_replays_its_tool_calls(tmp_path):
    script = [
        Reply("", tool_calls=[tool_call("edit", "e1", edit=block("return x + 5"))]),
        Reply("", tool_calls=[tool_call("evaluate", "v1")]),
        Reply("bad request", status=400),  # not retried: the iteration is asked again
        Reply("", tool_calls=[tool_call("edit", "e2", edit=block("return x + 7"))]),
        Reply("", tool_calls=[tool_call("submit", "s1")]),
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(toy(tmp_path), srv, tmp_path, agent_protocol="native")
        requests = srv.requests
    assert summary.best_score == 0.0 and len(requests) == 5
    assert requests[2]["messages"] == requests[3]["messages"]  # turns 1 and 2 not asked again
    replayed = requests[3]["messages"]
    assert [m.get("tool_call_id") for m in replayed if m["role"] == "tool"] == ["e1", "v1"]
    assert "score: -2 (higher is better)" in replayed[-1]["content"]


def test_the_agents_evaluations_and_its_child_go_through_docker(
    tmp_path,
    monkeypatch,
    docker_image,  # noqa: F811
):
    monkeypatch.setenv("EVOLVE_SANDBOX_IMAGE", docker_image)
    edit = "policy/rank.py\n" + (
        "<<<<<<< SEARCH\n    return value - SIZE_PENALTY * size\n=======\n"
        "    return value - 0.25 * size\n>>>>>>> REPLACE\n"
    )
    script = [edit + "ACTION: evaluate", "ACTION: submit"]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        summary = run(TREE, srv, tmp_path, edit_format="diff", sandbox="docker")
        told = said(srv.requests[1])[-1]
    assert summary.status == "finished"
    assert "evaluation on the training data" in told and "status: ok" in told
    ((status, sandbox),) = rows(
        tmp_path,
        "SELECT p.status, json_extract(r.config_json, '$.sandbox') FROM programs p "
        "JOIN runs r ON r.run_id = p.run_id "
        "WHERE p.iteration = 1",
    )
    assert (status, sandbox) == ("ok", "docker")
