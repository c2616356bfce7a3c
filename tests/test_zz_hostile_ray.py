"""Issue 37 on Ray: a hostile reply cannot stop a run whose candidates a Ray node evaluates,
and the leaderboard scores each new best there as it does locally (a private Ray instance
per command: tests/conftest.py runs this module with the other Ray modules, one after the
other; named to run after the loopback-cluster modules, whose GCS a private instance
started before them left unreachable)."""

from __future__ import annotations

import sqlite3

import pytest

from evolve.testing.cli_helpers import evolve, run_args
from evolve.testing.ray_support import ray_env
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from tests.test_leaderboard import REPLY, seeded_problem

pytest.importorskip("ray")

DEEP = (
    "def f(x):\n    return " + "+".join(["1"] * 2950) + "+x\n"
)  # overflowed the tuner's ast.parse


def _reply(body: str) -> Reply:
    return Reply(f"An idea.\n\n```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```\n")


@pytest.mark.timeout(900)
def test_a_deep_reply_on_ray_is_the_candidates_and_the_best_is_on_the_leaderboard(
    tmp_path, monkeypatch
):
    for k, v in ray_env().items():
        monkeypatch.setenv(k, v)
    problem, runs = seeded_problem(tmp_path / "seeded"), tmp_path / "runs"
    script = [_reply(DEEP), Reply(REPLY)]
    with ScriptedLLM.from_list(script, then=Reply(REPLY)) as srv:
        args = ["--sandbox", "ray", "--parallel", "1", "--llm-parallel", "1", "--run-id", "y",
                "--tune-evals", "2"]  # fmt: skip
        r = evolve(*run_args(srv.base_url, runs, *args, problem=problem, iterations=2), timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr[-3000:]
        again = evolve("resume", "y", "--runs-dir", runs, "--no-progress", timeout=600)
        assert again.returncode == 0, again.stderr[-3000:]
    db = sqlite3.connect(runs / "archive.db")
    try:
        status = dict(db.execute("SELECT iteration, status FROM programs WHERE kind != 'tune'"))
        tuned_deep = db.execute(
            "SELECT count(*) FROM programs WHERE parent_id='y:1' AND kind='tune'"
        ).fetchone()
        best = db.execute(
            "SELECT program_id FROM programs WHERE status='ok' ORDER BY score DESC LIMIT 1"
        ).fetchone()[0]
        ranked = {p for (p,) in db.execute("SELECT program_id FROM leaderboard_scores")}
    finally:
        db.close()
    assert status[1] == "ok" and tuned_deep == (0,), status  # evaluated, never tuned
    assert status[2] == "ok"
    assert {"y:0", best} <= ranked, ranked
