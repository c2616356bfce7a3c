"""`--proposer command:CMD`: a scripted coding agent (tests/support/agent_command_script.py, passed
as `python -c SOURCE`, since nothing of this tree is visible to it) run confined in its
workspace, with no LLM: the child it leaves, evolve-eval and its budget, the cost it
reports, one-line refusals, and resume after kill -9."""

from __future__ import annotations

import json
import shlex
import signal
import sqlite3
import sys
import time
from pathlib import Path

import pytest

import evolve
from evaluators.local import cgroups
from evolve.agent import command_cost
from evolve.agent.command_spec import check_proposer, task_argv
from evolve.archive import Archive
from evolve.settings.errors import UsageError
from evolve.testing.cli_helpers import evolve as evolve_cli
from evolve.testing.cli_helpers import popen
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)
from tests.test_agent import TREE, rows, toy

SCRIPT = (Path(__file__).parent / "support" / "agent_command_script.py").read_text()


def agent(*args: str) -> str:
    """The --proposer value that runs the scripted agent with `args`."""
    argv = [sys.executable, "-c", SCRIPT, *args]
    return "command:" + shlex.join(argv)


def run(problem: Path, tmp_path: Path, proposer: str, **kw):
    settings = {
        "sandbox": "local",
        "runs_dir": tmp_path / "runs",
        "run_id": "cmd",
        "iterations": 1,
        "tune_evals": 0,
        "repair_attempts": 0,
        "proposer": proposer,
        **kw,
    }
    return evolve.run(problem, **settings)


def child(tmp_path: Path) -> tuple:
    ((status, code, artifacts),) = rows(
        tmp_path, "SELECT status, code, artifacts_json FROM programs WHERE iteration=1"
    )
    return status, code, json.loads(artifacts)


def test_the_command_edits_evaluates_on_train_and_its_cost_is_counted(tmp_path):
    summary = run(toy(tmp_path), tmp_path, agent("good", "return x + 7", "3"), agent_evals=2)
    assert (summary.status, summary.best_score) == ("finished", 0.0)
    status, code, _ = child(tmp_path)
    assert status == "ok" and "return x + 7" in code
    # the first two evaluations ran on train (held_out=0), the third was refused
    assert "eval 0: evaluation on the training data: | status: ok | score: -0" in code
    assert "held_out=0" in code and "held_out=1" not in code
    assert "[evaluations left: 0]" in code
    assert "eval 2: no evaluations left: 2 used (--agent-evals); nothing was evaluated" in code
    ((model, purpose, p_tok, c_tok, cost, reply),) = rows(
        tmp_path,
        "SELECT model, purpose, prompt_tokens, completion_tokens, cost_usd, reply FROM llm_calls",
    )
    assert (model, purpose, p_tok, c_tok, cost) == ("command", "agent", 1000, 200, 0.25)
    assert json.loads(reply)["evals"] == 2 and json.loads(reply)["returncode"] == 0
    (test_score,) = rows(tmp_path, "SELECT test_score FROM programs WHERE iteration=1")[0]
    assert test_score == 0.0  # the new best re-scored on held-out, outside the agent's view


def test_the_budget_counts_the_commands_cost(tmp_path):
    summary = run(
        toy(tmp_path),
        tmp_path,
        agent("good", "return x + 1", "0"),
        iterations=5,
        budget_usd=0.5,
        llm_parallel=1,
    )
    assert summary.status == "stopped" and "budget of $0.5 spent" in (summary.reason or "")
    assert len(rows(tmp_path, "SELECT 1 FROM llm_calls")) == 2


def test_max_calls_counts_one_call_per_command_run(tmp_path):
    run(toy(tmp_path), tmp_path, agent("good", "return x + 2", "0"), iterations=5, max_calls=2)
    assert len(rows(tmp_path, "SELECT 1 FROM llm_calls WHERE model='command'")) == 2


@pytest.mark.parametrize(
    ("mode", "reason"),
    [
        ("symlink", "the workspace holds a symlink, 'link.txt'"),
        ("fixed", "seed.py: an edit outside the EVOLVE-BLOCK regions"),
        ("newfile", "a file outside the evolving files was made: 'other.py'"),
        ("nothing", "the command changed no evolving file"),
    ],
)
def test_a_workspace_that_breaks_a_rule_is_a_rejected_candidate(tmp_path, mode, reason):
    summary = run(toy(tmp_path), tmp_path, agent(mode))
    assert summary.status == "finished"
    status, code, artifacts = child(tmp_path)
    assert (status, code) == ("invalid_edit", None)
    assert reason in artifacts["error"] and "the command exited with status 0" in artifacts["error"]


def test_a_program_of_several_files_evolves_but_its_fixed_file_may_not_change(tmp_path):
    rank = agent("replace", "policy/rank.py", "SIZE_PENALTY * size", "0.25 * size")
    summary = run(TREE, tmp_path, rank)
    assert summary.status == "finished"
    archive = Archive(tmp_path / "runs")  # a tree's files are stored apart: read it back
    try:
        program = archive.program("cmd:1")
    finally:
        archive.close()
    assert program is not None and program.status == "ok" and program.code is not None
    code = program.code
    assert "return value - 0.25 * size" in code
    assert "ranked = sorted(items, key=weight, reverse=True)" in code  # the fixed file kept
    fixed = agent("replace", "policy/__init__.py", "reverse=True", "reverse=False")
    run(TREE, tmp_path / "again", fixed)
    status, code, artifacts = child(tmp_path / "again")
    assert (status, code) == ("invalid_edit", None)
    assert "policy/__init__.py was edited: it is a fixed file" in artifacts["error"]


def test_without_bubblewrap_the_command_proposer_is_refused_in_one_line(tmp_path):
    args = ["run", toy(tmp_path), "--proposer", agent("good", "return x", "0")]
    out = evolve_cli(*args, "--runs-dir", tmp_path / "runs", extra_env={"PATH": str(tmp_path)})
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and "--proposer command runs the agent confined by bubblewrap" in lines[0]
    )
    assert "Traceback" not in out.stderr


def test_a_command_past_its_deadline_is_killed(tmp_path):
    run(toy(tmp_path), tmp_path, agent("slow"), agent_timeout=2)
    status, _, artifacts = child(tmp_path)
    assert status == "ok"  # it edited before it hung: the edit is its candidate
    (reply,) = rows(tmp_path, "SELECT reply FROM llm_calls")[0]
    assert json.loads(reply)["returncode"] is None
    assert "stopped at its deadline" in json.loads(reply)["reason"]


def test_bad_command_lines_are_one_line_errors():
    for bad, said in [
        ("command:", "CMD is empty"),
        ("command:agent 'unclosed", "not a command line"),
        ("robot", "expected single, agent or command:CMD"),
    ]:
        with pytest.raises(ValueError, match=said):
            check_proposer(bad)
    with pytest.raises(UsageError, match="proposer"):
        evolve.run(Path("."), proposer="command:", iterations=1)
    with pytest.raises(UsageError, match="agent_env") as e:
        evolve.run(Path("."), proposer="command:true", agent_env=["NOT-A-NAME"])
    assert "\n" not in str(e.value)


def test_task_placeholder_is_one_argument_or_shell_quoted():
    argv = task_argv(["claude", "-p", "{task}", "sh", "-c", "agent {task}"], "it's $HOME")
    assert argv == ["claude", "-p", "it's $HOME", "sh", "-c", "agent 'it'\"'\"'s $HOME'"]


def test_cost_is_read_from_claude_and_codex_outputs():
    claude = '{"type":"result","total_cost_usd":0.12,"usage":{"input_tokens":10,'
    claude += '"cache_read_input_tokens":5,"output_tokens":3}}'
    assert command_cost.parse(claude) == command_cost.Usage(15, 3, 0.12, True)
    codex = "\n".join(
        [
            '{"type":"thread.started"}',
            '{"type":"turn.completed","usage":{"input_tokens":7,"output_tokens":2}}',
            "some text",
            '{"type":"turn.completed","usage":{"input_tokens":1,"output_tokens":1}}',
        ]
    )
    assert command_cost.parse(codex) == command_cost.Usage(8, 3, 0.0, True)
    assert command_cost.parse('{"total_cost_usd": -5, "usage": "x"}').cost_usd == 0.0
    assert not command_cost.parse("no json here").reported


def test_kill_9_during_the_command_and_resume_run_it_again_once(tmp_path):
    problem, runs = toy(tmp_path), tmp_path / "runs"
    args = ["run", str(problem), "--sandbox", "local", "--runs-dir", str(runs)]
    args += ["--run-id", "k9", "--iterations", "1", "--tune-evals", "0", "--no-progress"]
    p = popen(*args, "--proposer", agent("good", "return x + 7", "0", "4"))
    marker = runs / "agent-commands" / "k9-1.started"
    deadline = time.monotonic() + 120
    while not marker.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists()
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert rows(tmp_path, "SELECT 1 FROM llm_calls") == []
    resumed = evolve_cli("resume", "k9", "--runs-dir", str(runs), "--no-progress", timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "its agent command had not finished before the run stopped" in resumed.stderr
    assert len(rows(tmp_path, "SELECT 1 FROM llm_calls")) == 1
    status, code, _ = child(tmp_path)
    assert status == "ok" and "return x + 7" in code


def test_kill_9_after_the_command_and_resume_never_run_it_again(tmp_path):
    problem, runs = toy(tmp_path), tmp_path / "runs"
    slow = (
        (problem / "evaluator.py")
        .read_text()
        .replace(
            '    return {"outputs"',
            '    import time; time.sleep(4 * (m.f(3) == 10))\n    return {"outputs"',
        )
    )
    (problem / "evaluator.py").write_text(slow)  # the child's evaluation takes 4 s
    args = ["run", str(problem), "--sandbox", "local", "--runs-dir", str(runs)]
    args += ["--run-id", "k9", "--iterations", "1", "--tune-evals", "0", "--no-progress"]
    p = popen(*args, "--proposer", agent("good", "return x + 7", "0"))
    deadline = time.monotonic() + 120
    while p.poll() is None and time.monotonic() < deadline:
        try:  # the file may exist before its tables do
            if (runs / "archive.db").exists() and rows(tmp_path, "SELECT 1 FROM llm_calls"):
                break
        except sqlite3.OperationalError:
            pass
        time.sleep(0.1)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert len(rows(tmp_path, "SELECT 1 FROM llm_calls")) == 1
    assert rows(tmp_path, "SELECT status FROM programs WHERE iteration=1") in ([], [("pending",)])
    resumed = evolve_cli("resume", "k9", "--runs-dir", str(runs), "--no-progress", timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "had not finished" not in resumed.stderr
    assert len(rows(tmp_path, "SELECT 1 FROM llm_calls")) == 1  # the stored outcome was used
    status, code, _ = child(tmp_path)
    assert status == "ok" and "return x + 7" in code


def test_the_commands_candidate_and_evolve_eval_go_through_docker(
    tmp_path,
    monkeypatch,
    docker_image,  # noqa: F811
):
    monkeypatch.setenv("EVOLVE_SANDBOX_IMAGE", docker_image)
    summary = run(toy(tmp_path), tmp_path, agent("good", "return x + 7", "1"), sandbox="docker")
    assert (summary.status, summary.best_score) == ("finished", 0.0)
    status, code, _ = child(tmp_path)
    assert status == "ok" and "eval 0: evaluation on the training data: | status: ok" in code


def test_a_command_past_its_memory_is_killed_and_the_reason_stored(tmp_path):
    if cgroups.layout() is None:
        pytest.skip("no cgroups here (not root): the address-space fallback holds it")
    run(toy(tmp_path), tmp_path, agent("alloc", "400"), agent_memory_mb=128)
    status, code, _ = child(tmp_path)
    assert status == "ok" and "allocated all" not in code  # its edit before the kill is kept
    (reply,) = rows(tmp_path, "SELECT reply FROM llm_calls")[0]
    outcome = json.loads(reply)
    assert outcome["oom_killed"] is True and outcome["returncode"] != 0
    assert "killed for memory: it used more than --agent-memory-mb 128" in outcome["reason"]


def test_a_command_within_its_memory_runs_to_the_end(tmp_path):
    run(toy(tmp_path), tmp_path, agent("alloc", "32"), agent_memory_mb=256)
    status, code, _ = child(tmp_path)
    assert status == "ok" and "allocated all" in code


def test_a_fork_happy_command_is_capped(tmp_path):
    if cgroups.layout() is None:
        pytest.skip("no cgroups here (not root): RLIMIT_NPROC holds it")
    run(toy(tmp_path), tmp_path, agent("fork", "100"), agent_procs=20)
    _, code, _ = child(tmp_path)
    started = int(code.split("# started ")[1].split("\n")[0])
    assert 5 <= started < 20  # its python, evolve's namespace init and the cap's slack
    (reply,) = rows(tmp_path, "SELECT reply FROM llm_calls")[0]
    outcome = json.loads(reply)
    assert outcome["procs_capped"] is True and "refused at --agent-procs" in outcome["reason"]


def test_without_cgroups_an_address_space_limit_holds_the_command(tmp_path):
    import asyncio

    from evolve.agent import confine
    from evolve.agent.command_limits import CommandResources
    from evolve.agent.command_run import run_command

    hog = "bytearray(3000 * 2**20); print('allocated')"
    (tmp_path / "w").mkdir()
    (tmp_path / "t").mkdir()

    async def answer() -> str:
        return ""

    def go(memory_mb: int):
        return asyncio.run(
            run_command(
                confine.check(), [sys.executable, "-c", hog], tmp_path / "w", tmp_path / "t",
                answer, timeout_s=60, network=False, env_names=(),
                resources=CommandResources(memory_mb, 64), slot=0, cgroup=False,
            )
        )  # fmt: skip

    held = go(256)  # 2 x 256 + 1024 MB of address space: the allocation fails
    assert held.returncode == 1 and "MemoryError" in held.stderr_tail
    assert not held.pressure.oom_killed
    assert go(4096).stdout.strip() == "allocated"  # 9 GB of address space: it fits
