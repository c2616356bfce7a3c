"""`evolve bench` of a program of several files (on Ray: bench/tree_backends.py; a private
Ray instance started by a command here left the loopback-cluster tests' GCS unreachable)."""

from __future__ import annotations

import json

import pytest

from evaluators import tree
from evolve.archive import ArchiveReader
from evolve.testing.cli_helpers import evolve
from evolve.testing.scripted_llm import ScriptedLLM
from tests.test_tree_run import PROBLEM, responder


@pytest.mark.timeout(900)
@pytest.mark.parametrize("sandbox", ["local"])
def test_bench_runs_a_tree_problem(sandbox, tmp_path, monkeypatch):
    runs = tmp_path / "runs"
    with ScriptedLLM(responder()) as srv:
        r = evolve(
            "bench", PROBLEM, "--model", "scripted", "--api-base", srv.base_url, "--calls", "3",
            "--seeds", "1", "--runs-dir", runs, "--sandbox", sandbox, "--bench-id", "t",
            "--run-arg=--tune-evals=0", "--run-arg=--llm-backoff=0.05", "--json", timeout=800,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    [p] = json.loads(r.stdout)["problems"]
    [run] = p["results"]
    assert (run["status"], run["calls"], run["error"]) == ("finished", 3, None), run
    assert run["valid"] >= 1 and run["new_programs"] >= 1, run
    codes = [x.code for x in ArchiveReader(runs).programs(run["run_id"], code=True)]
    assert len(codes) >= 4 and all(c is not None and tree.is_tree(c) for c in codes)
