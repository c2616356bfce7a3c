"""A GEPA script's evaluator keeps its module state across candidates, as in GEPA's process:
one long-lived sandboxed worker per slot imports the script once (evaluators/stateful.py).

tests/fixtures/gepa/counter counts its evaluator's calls in a module global and reports the
count in side_info. A candidate that ends its worker (os._exit) or hangs fails alone; a
fresh worker, its count restarted, scores the next.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import pytest

from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from evolve.pipeline.evaluation import problem_sandbox
from evolve.problem.load import load_problem
from evolve.settings.overrides import Overrides
from evolve.testing.cli_helpers import ROOT, evolve, run_args
from tests.support.docker_support import docker_image, wait_gone  # noqa: F401

COUNTER = ROOT / "tests" / "fixtures" / "gepa" / "counter" / "main.py"
CRASH = "def value():\n    import os\n    os._exit(3)\n"
HANG = "def value():\n    while True:\n        pass\n"
HOG = "def value():\n    return len(bytearray(3 << 30))\n"


def _value(n: int) -> str:
    return f"def value():\n    return {n}\n"


def _calls(res: EvalResult) -> int:
    assert res.status == Status.OK, res.artifacts
    return json.loads(res.artifacts["side_info"])["calls"]


@pytest.fixture(params=["local", "docker"])
def scorer(request, monkeypatch):
    """evaluate(code, timeout_s) in the run's sandbox for the counter script (problem_sandbox,
    as a run builds it), on each backend."""
    if request.param == "docker":
        monkeypatch.setenv("EVOLVE_SANDBOX_IMAGE", request.getfixturevalue("docker_image"))
    problem = load_problem(COUNTER, Overrides(sandbox="local"))
    choice = SimpleNamespace(
        sandbox=request.param,
        require_isolation=False,
        ray_address=None,
        ray_node_sandbox="auto",
        allow_unisolated_ray_nodes=False,
    )
    run_id = f"test-gepa-workers-{os.getpid()}"
    said: list[str] = []
    box = problem_sandbox(problem, choice, 1, run_id=run_id, say=said.append)

    def evaluate(code: str, timeout_s: float = 30.0, memory_mb: int = 1024) -> EvalResult:
        req = EvalRequest(
            problem_dir=str(problem.root),
            program_code=code,
            program_name=problem.entry,
            split="train",
            fmt="gepa",
            limits=Limits(timeout_s=timeout_s, memory_mb=memory_mb),
            env=dict(problem.env),
        )
        return box.evaluate(req)

    yield SimpleNamespace(evaluate=evaluate, said=said)
    box.close()
    if request.param == "docker":
        assert wait_gone(box.inner.client, run_id, 60) == []


def test_the_evaluators_module_state_lives_on_between_candidates(scorer):
    assert [_calls(scorer.evaluate(_value(n))) for n in (1, 2, 3)] == [1, 2, 3]


def test_a_candidate_that_ends_its_worker_fails_alone(scorer):
    assert _calls(scorer.evaluate(_value(1))) == 1
    crashed = scorer.evaluate(CRASH)
    assert crashed.status == Status.RUNTIME_ERROR and crashed.score is None, crashed.artifacts
    error = crashed.artifacts["error"]
    assert "worker exited with code 3" in error and "module state" in error, error
    nxt = scorer.evaluate(_value(4))  # a fresh worker: the script imported again
    assert (nxt.score, _calls(nxt)) == (4.0, 1)
    assert any("lost on call 2" in line for line in scorer.said), scorer.said


def test_a_candidate_past_its_time_limit_fails_alone(scorer):
    assert _calls(scorer.evaluate(_value(1))) == 1
    hung = scorer.evaluate(HANG, timeout_s=2.0)
    assert hung.status == Status.TIMEOUT and "timeout of 2 s" in hung.artifacts["error"]
    assert _calls(scorer.evaluate(_value(2))) == 1


def test_a_candidate_over_the_memory_limit_fails_alone(scorer):
    assert _calls(scorer.evaluate(_value(1), memory_mb=512)) == 1
    hog = scorer.evaluate(HOG, memory_mb=512)
    # the kernel ends the worker (a cgroup's OOM killer), or the allocation fails (RLIMIT_AS)
    assert hog.status in (Status.RUNTIME_ERROR, Status.INVALID), hog.artifacts
    assert "memory" in hog.artifacts["error"].lower(), hog.artifacts
    assert _calls(scorer.evaluate(_value(2), memory_mb=512)) in (1, 2)  # 2: the worker lived


def test_parallel_workers_each_keep_their_own_state():
    from evaluators.local.sandbox import LocalSandbox
    from evaluators.stateful import StatefulSandbox

    problem = load_problem(COUNTER, Overrides(sandbox="local"))
    box = StatefulSandbox(LocalSandbox(2), 2, say=lambda _line: None)
    slow = "import time\ndef value():\n    time.sleep(1)\n    return 1\n"

    def evaluate(code: str) -> dict:
        req = EvalRequest(str(problem.root), code, problem.entry, "train", fmt="gepa",
                          limits=Limits(timeout_s=60), env=dict(problem.env))  # fmt: skip
        res = box.evaluate(req)
        assert res.status == Status.OK, res.artifacts
        return json.loads(res.artifacts["side_info"])

    try:
        with ThreadPoolExecutor(2) as pool:  # two at once: two workers, two counts
            first = list(pool.map(evaluate, [slow, slow]))
        assert [i["calls"] for i in first] == [1, 1] and first[0]["import"] != first[1]["import"]
        later = [evaluate(_value(2)) for _ in range(2)]  # one of them, grown
        assert {i["import"] for i in later} <= {i["import"] for i in first}, (first, later)
        assert sum(i["calls"] for i in later) >= 5, later
    finally:
        box.close()


def test_a_run_scores_every_candidate_in_one_worker(tmp_path):
    from evolve.testing.scripted_llm import ScriptedLLM

    runs = tmp_path / "runs"
    folder = Path(shutil.copytree(COUNTER.parent, tmp_path / "counter"))
    replies = [f"A new program.\n\n```python\n{_value(n)}```\n" for n in (2, 3, 4)]
    with ScriptedLLM.from_list(replies) as srv:
        args = run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1",
                        "--tune-evals", "0", problem=folder / "main.py", iterations=3)  # fmt: skip
        r = evolve(*args, timeout=600)
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute("SELECT score, artifacts_json FROM programs ORDER BY iteration").fetchall()
    db.close()
    infos = [json.loads(json.loads(a)["side_info"]) for _, a in rows]
    # one count, grown call after call (the run may call it beyond its rows: a re-scoring)
    calls = sorted(i["calls"] for i in infos)
    assert calls[0] == 1 and len(set(calls)) == 4 and calls[-1] >= 4, rows
    assert len({i["import"] for i in infos}) == 1, infos  # one import of the script
    assert sorted(s for s, _ in rows) == [1.0, 2.0, 3.0, 4.0]
