"""Both proposers on `--sandbox ray`, through the CLI on a two-node cluster on 127.0.0.1:
the agent's train evaluations and the child's own run as tasks on the cluster, a program of
several files travels there whole, and held-out results stay outside what the agent is told."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from evaluators import tree
from evolve.archive import Archive
from evolve.testing.cli_helpers import evolve, run_args
from evolve.testing.ray_support import LoopbackCluster, ray_env, ray_sandbox
from evolve.testing.scripted_llm import ScriptedLLM
from tests.test_agent import TREE, block, rows, toy
from tests.test_agent_command import agent


@pytest.fixture(scope="module")
def cluster():
    """The nodes start with token auth off (ray_support); every driver here is an `evolve`
    subprocess given ray_env(), so this process's environment is left as it is."""
    c = LoopbackCluster(cpus_per_node=1).start(workers=1)
    try:
        yield c
    finally:
        c.stop()


def on_ray(cluster: LoopbackCluster, url: str, problem: Path, runs: Path, *extra: str):
    args = run_args(url, runs, problem=problem, iterations=1)
    flags = ("--tune-evals", "0", "--repair-attempts", "0", "--run-id", "ag", *extra)
    r = evolve(*args, *ray_sandbox(cluster), *flags, timeout=400, extra_env=ray_env())
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def ray_evaluations(r: subprocess.CompletedProcess) -> int:
    """How many evaluations the run's Ray sandbox says it ran on the cluster."""
    m = re.search(r"sandbox: ray ran (\d+) evaluations on \d+ node\(s\)", r.stderr)
    assert m, r.stderr[-3000:]
    return int(m.group(1))


@pytest.fixture(scope="module")
def single_call(cluster, tmp_path_factory) -> int:
    """The evaluations one single-call iteration of the toy, writing f(x) = x + 7, makes on the
    cluster (the seed, the child, the new best's held-out re-scoring): what the agents add to."""
    tmp = tmp_path_factory.mktemp("single")
    with ScriptedLLM.from_list([block("return x + 7")]) as srv:
        return ray_evaluations(on_ray(cluster, srv.base_url, toy(tmp), tmp / "runs"))


def test_the_tool_using_agent_evaluates_and_submits_on_the_cluster(cluster, single_call, tmp_path):
    script = [
        "Try adding five.\n" + block("return x + 5") + "ACTION: evaluate",
        "Closer.\n" + block("return x + 7") + "ACTION: submit",
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        flags = ("--proposer", "agent", "--agent-protocol", "text", "--agent-evals", "2")
        r = on_ray(cluster, srv.base_url, toy(tmp_path), tmp_path / "runs", *flags)
        told = json.dumps(srv.requests)
    assert ray_evaluations(r) == single_call + 1  # the agent's train evaluation ran there too
    assert "score: -2 (higher is better)" in told and "held_out=0" in told
    assert "held_out=1" not in told  # a held-out evaluation never reaches the agent
    ((status, score, test_score),) = rows(
        tmp_path, "SELECT status, score, test_score FROM programs WHERE iteration=1"
    )
    assert (status, score, test_score) == ("ok", 0.0, 0.0)


def test_a_program_of_several_files_is_edited_by_the_agent_on_the_cluster(cluster, tmp_path):
    edit = (
        "policy/rank.py\n<<<<<<< SEARCH\n    return value - SIZE_PENALTY * size\n=======\n"
        "    return value - 0.25 * size\n>>>>>>> REPLACE\n"
    )
    script = [edit + "ACTION: evaluate", "ACTION: submit"]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        flags = ("--proposer", "agent", "--agent-protocol", "text", "--edit-format", "diff")
        r = on_ray(cluster, srv.base_url, TREE, tmp_path / "runs", *flags)
        told = srv.requests[-1]["messages"][-1]["content"]
    assert "evaluation on the training data" in told and "status: ok" in told
    assert ray_evaluations(r) >= 3  # seed, the agent's evaluation, the child
    archive = Archive(tmp_path / "runs")
    try:
        child = archive.program("ag:1")
    finally:
        archive.close()
    assert child is not None and child.status == "ok" and child.code is not None
    files = tree.decode(child.code, "policy/__init__.py")
    assert "return value - 0.25 * size" in files["policy/rank.py"]


def test_a_coding_agent_command_and_its_evolve_eval_run_on_the_cluster(
    cluster, single_call, tmp_path
):
    with ScriptedLLM.from_list([], then="unused") as srv:  # the command asks no model
        command = agent("good", "return x + 7", "1")
        r = on_ray(cluster, srv.base_url, toy(tmp_path), tmp_path / "runs", "--proposer", command)
        assert srv.requests == []
    assert ray_evaluations(r) == single_call + 1  # evolve-eval's evaluation ran there too
    ((status, code),) = rows(tmp_path, "SELECT status, code FROM programs WHERE iteration=1")
    assert status == "ok" and "return x + 7" in code
    assert "eval 0: evaluation on the training data: | status: ok" in code
    assert "held_out=0" in code and "held_out=1" not in code
