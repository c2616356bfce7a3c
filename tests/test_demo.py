"""`evolve demo`: a scripted run of the shipped binpack problem, said plainly to be one, whose
evaluations are real (the canned Weibull heuristic beats the best-fit seed on train)."""

from __future__ import annotations

import sqlite3

from evolve.testing.cli_helpers import evolve


def test_the_demo_is_a_real_run_with_canned_replies_and_says_so(tmp_path):
    runs = tmp_path / "runs"
    r = evolve("demo", "--iterations", "8", "--runs-dir", runs, "--run-id", "d", "--no-progress")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("evolve demo: a scripted run, not a model's.")
    assert "That was a scripted run (model `scripted`)" in r.stdout
    assert f"evolve archive best --run d --runs-dir {runs} --code" in r.stdout
    db = sqlite3.connect(runs / "archive.db")
    try:
        (status,) = db.execute("SELECT status FROM runs WHERE run_id = 'd'").fetchone()
        models = {m for (m,) in db.execute("SELECT DISTINCT model FROM llm_calls")}
        (best,) = db.execute("SELECT MAX(score) FROM programs WHERE run_id = 'd'").fetchone()
        (seed,) = db.execute("SELECT score FROM programs WHERE iteration = 0").fetchone()
    finally:
        db.close()
    assert status == "finished" and models == {"scripted"}
    # the canned replies cycle best fit first: eight iterations reach FunSearch's heuristic
    assert best > seed


def test_the_demo_refuses_bad_flags_in_one_line(tmp_path):
    r = evolve("demo", "--iterations", "0", "--runs-dir", tmp_path)
    assert r.returncode == 2 and "--iterations" in r.stderr and "Traceback" not in r.stderr
