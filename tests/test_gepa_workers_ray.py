"""--sandbox ray keeps a GEPA script's evaluator state too: one Ray actor per slot holds a
long-lived worker on its node (evaluators/ray/stateful.py), on a real two-node Ray cluster
on 127.0.0.1 (evolve/testing/ray_support.py).

tests/fixtures/gepa/counter counts its evaluator's calls at module level (as in
tests/test_gepa_workers.py). A candidate that ends its worker or hangs fails alone and a
fresh worker scores the next; an actor that dies under a call is the infrastructure's
failure: a fresh actor scores the candidate again, a bounded number of times.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import psutil
import pytest

from evaluators.backends import keep_state, make_sandbox, ray_options
from evaluators.ray.stateful import RayStatefulSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from evolve.pipeline.evaluation import problem_sandbox
from evolve.problem.load import load_problem
from evolve.settings.overrides import Overrides
from evolve.testing.cli_helpers import evolve, run_args
from evolve.testing.ray_support import AUTH_OFF, LoopbackCluster, ray_env, ray_sandbox
from tests.test_gepa_workers import COUNTER, CRASH, HANG, _calls, _value

SLOW = "import time\ndef value():\n    time.sleep({s})\n    return {n}\n"
ACTOR = "ray::NodeWorkers"  # the title Ray gives an actor's process


@pytest.fixture(scope="module")
def cluster():
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ.update(AUTH_OFF)  # this process's driver agrees with the test cluster
    c = LoopbackCluster(cpus_per_node=1).start(workers=1)
    try:
        yield c
    finally:
        c.stop()
        if before is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = before


def _request(problem, code: str, timeout_s: float) -> EvalRequest:
    return EvalRequest(
        problem_dir=str(problem.root),
        program_code=code,
        program_name=problem.entry,
        split="train",
        fmt="gepa",
        limits=Limits(timeout_s=timeout_s, memory_mb=1024),
        env=dict(problem.env),
    )


@pytest.fixture
def scorer(cluster):
    """evaluate(code, timeout_s) on the cluster for the counter script, in the sandbox a run
    builds (problem_sandbox, --parallel 1)."""
    problem = load_problem(COUNTER, Overrides(sandbox="local"))
    choice = SimpleNamespace(
        sandbox="ray",
        require_isolation=False,
        ray_address=cluster.address,
        ray_node_sandbox="local",
        allow_unisolated_ray_nodes=False,
    )
    said: list[str] = []
    box = problem_sandbox(problem, choice, 1, say=said.append)
    assert isinstance(box, RayStatefulSandbox)

    def evaluate(code: str, timeout_s: float = 60.0) -> EvalResult:
        return box.evaluate(_request(problem, code, timeout_s))

    yield SimpleNamespace(evaluate=evaluate, said=said, box=box)
    box.close()


def actors() -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if any(a.startswith(ACTOR) for a in p.cmdline()[:1]):
                out.append(p)
        except psutil.Error:
            pass
    return out


def wait_for(cond, guard_s: float, what: str) -> None:
    end = time.monotonic() + guard_s  # a guard for a loaded machine, never a timing
    while not cond():
        assert time.monotonic() < end, what
        time.sleep(0.1)


def test_the_evaluators_module_state_lives_on_between_candidates_on_ray(scorer):
    assert [_calls(scorer.evaluate(_value(n))) for n in (1, 2, 3)] == [1, 2, 3]
    assert not any("fresh import" in line for line in scorer.said), scorer.said
    assert sum(scorer.box.inner.placements.values()) == 3


def test_a_candidate_that_ends_its_worker_fails_alone_on_ray(scorer):
    assert _calls(scorer.evaluate(_value(1))) == 1
    crashed = scorer.evaluate(CRASH)
    assert crashed.status == Status.RUNTIME_ERROR and crashed.score is None, crashed.artifacts
    error = crashed.artifacts["error"]
    assert "worker exited with code 3" in error and "module state" in error, error
    nxt = scorer.evaluate(_value(4))  # a fresh worker in the same actor: the script anew
    assert (nxt.score, _calls(nxt)) == (4.0, 1)
    assert any("lost on call 2" in line for line in scorer.said), scorer.said  # the node's word
    assert scorer.box.inner.infra_failures == 0  # the candidate's failure, not Ray's


def test_a_candidate_past_its_time_limit_fails_alone_on_ray(scorer):
    assert _calls(scorer.evaluate(_value(1))) == 1
    hung = scorer.evaluate(HANG, timeout_s=2.0)
    assert hung.status == Status.TIMEOUT and "timeout of 2 s" in hung.artifacts["error"]
    assert _calls(scorer.evaluate(_value(2))) == 1


def test_an_actor_that_dies_under_a_call_is_replaced_and_the_candidate_scored(scorer):
    import ray

    assert _calls(scorer.evaluate(_value(1))) == 1
    actor = scorer.box._actors[0]

    def kill_mid_call():
        time.sleep(1.0)  # the candidate sleeps 4 s: the kill lands while it runs
        ray.kill(actor, no_restart=True)

    t = threading.Thread(target=kill_mid_call, daemon=True)
    t.start()
    res = scorer.evaluate(SLOW.format(s=4, n=7))
    t.join()
    assert (res.score, _calls(res)) == (7.0, 1), res.artifacts  # again, in a fresh actor
    assert scorer.box.inner.infra_failures == 1
    assert any("lost GEPA worker slot 1" in line for line in scorer.said), scorer.said
    assert _calls(scorer.evaluate(_value(2))) == 2  # the fresh actor keeps its state


def test_an_actor_that_keeps_dying_is_the_infrastructures_failure(cluster):
    import ray

    problem = load_problem(COUNTER, Overrides(sandbox="local"))
    ray_box = make_sandbox("ray", 1, ray=ray_options(problem, cluster.address, "local", retries=1))
    box = keep_state(ray_box, 1, say=lambda _line: None)
    assert isinstance(box, RayStatefulSandbox)
    killed: list = []
    stop = threading.Event()

    def killer():  # every actor dies under its call (an OOM kill of the actor, a lost node)
        while not stop.is_set():
            actor = box._actors[0]
            if actor is not None and actor not in killed and actors():
                time.sleep(0.5)
                killed.append(actor)
                ray.kill(actor, no_restart=True)
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        res = box.evaluate(_request(problem, SLOW.format(s=30, n=1), 60.0))
    finally:
        stop.set()
        t.join()
        box.close()
    assert res.status == Status.SANDBOX_ERROR and res.score is None, res.artifacts
    assert "infrastructure failure, not the candidate's" in res.artifacts["error"], res.artifacts
    assert res.artifacts["attempts"] == "2" and len(killed) == 2


def test_the_actors_end_with_the_run(scorer):
    assert _calls(scorer.evaluate(_value(1))) == 1
    assert actors()
    scorer.box.close()
    wait_for(lambda: not actors(), 60, f"actors left after close: {actors()}")


def test_parallel_actors_each_keep_their_own_state_and_fit_the_cluster(cluster):
    problem = load_problem(COUNTER, Overrides(sandbox="local"))
    said: list[str] = []
    ray_box = make_sandbox("ray", 4, ray=ray_options(problem, cluster.address, "local"))
    box = keep_state(ray_box, 4, say=said.append)  # two nodes of one CPU: two actors
    assert any("keeps 2 GEPA worker(s), not 4" in line for line in said), said

    def evaluate(code: str) -> dict:
        res = box.evaluate(_request(problem, code, 60.0))
        assert res.status == Status.OK, res.artifacts
        return json.loads(res.artifacts["side_info"])

    try:
        with ThreadPoolExecutor(2) as pool:  # two at once: two actors, two counts
            first = list(pool.map(evaluate, [SLOW.format(s=1, n=1)] * 2))
        assert [i["calls"] for i in first] == [1, 1] and first[0]["import"] != first[1]["import"]
        later = [evaluate(_value(2)) for _ in range(2)]  # one of them, grown
        assert {i["import"] for i in later} <= {i["import"] for i in first}, (first, later)
        assert sum(i["calls"] for i in later) >= 5, later
        assert len(ray_box.placements) == 2, ray_box.placements  # one actor on each node
    finally:
        box.close()


def test_a_ray_run_scores_every_candidate_in_one_worker(cluster, tmp_path):
    from evolve.testing.scripted_llm import ScriptedLLM

    runs = tmp_path / "runs"
    folder = Path(shutil.copytree(COUNTER.parent, tmp_path / "counter"))
    replies = [f"A new program.\n\n```python\n{_value(n)}```\n" for n in (2, 3, 4)]
    with ScriptedLLM.from_list(replies) as srv:
        args = run_args(srv.base_url, runs, *ray_sandbox(cluster), "--parallel", "1",
                        "--tune-evals", "0", problem=folder / "main.py", iterations=3)  # fmt: skip
        r = evolve(*args, timeout=600, extra_env=ray_env())
    assert r.returncode == 0, r.stderr[-3000:]
    assert "fresh import" not in r.stderr, r.stderr[-3000:]
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute("SELECT score, artifacts_json FROM programs ORDER BY iteration").fetchall()
    db.close()
    infos = [json.loads(json.loads(a)["side_info"]) for _, a in rows]
    calls = sorted(i["calls"] for i in infos)  # one count, grown call after call
    assert calls[0] == 1 and len(set(calls)) == 4 and calls[-1] >= 4, rows
    assert len({i["import"] for i in infos}) == 1, infos  # one import of the script
    assert sorted(s for s, _ in rows) == [1.0, 2.0, 3.0, 4.0]
