"""Leaderboards compare like with like (issue 37 item 8).

Each run draws its own private workloads, so the same code scores differently per run; the
cross-run views used to rank those numbers together, and against baselines scored on the
public data, keeping whichever run drew the easiest workload. Now one private leaderboard
seed per problem per archive scores every run's new bests and the baselines, and cross-run
views rank by it. The problem here is a toy whose workloads are drawn under `kit.seed`, so
every evaluation takes milliseconds and every data seed gives other numbers.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evolve.archive import Archive, ArchiveReader
from evolve.testing.cli_helpers import archive_json, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM
from evolve.web.app import make_app
from evolve.web.baselines import Baselines

# f(x) should be x*x on 40 points drawn under the data seed (the train and test points differ)
EVALUATOR = """
import importlib.util
import random

from evaluators import kit


def _points(split):
    rng = random.Random(kit.seed(11 if split == "train" else 12, split))
    return [rng.uniform(0.0, 10.0) for _ in range(40)]


def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"outputs": {"ys": [float(m.f(x)) for x in _points(split)]}}


def score(outputs, split):
    err = sum(abs(y - x * x) for x, y in zip(_points(split), outputs["ys"])) / 40
    return {"score": -err, "metrics": {"err": err}}
"""
SEED = "# EVOLVE-BLOCK-START\ndef f(x):\n    return 5.0 * x\n# EVOLVE-BLOCK-END\n"
CHILD = "def f(x):\n    return x * x - x\n"  # what the model answers, in every run
REPLY = f"An idea.\n\n```python\n# EVOLVE-BLOCK-START\n{CHILD}# EVOLVE-BLOCK-END\n```\n"


def seeded_problem(root: Path) -> Path:
    root.mkdir()
    (root / "problem.toml").write_text(
        '[problem]\nname = "seeded"\nentry = "seed.py"\n'
        '[evaluation]\ntimeout_s = 30\nsplits = ["train", "test"]\n'
        'train_split = "train"\ntest_split = "test"\n'
    )
    (root / "seed.py").write_text(SEED)
    (root / "evaluator.py").write_text(EVALUATOR)
    (root / "baselines").mkdir()
    (root / "baselines" / "five_x.py").write_text(SEED)  # the seed's code, as a baseline
    return root


def _db(runs: Path) -> sqlite3.Connection:
    db = sqlite3.connect(runs / "archive.db")
    db.row_factory = sqlite3.Row
    return db


def _rows(runs: Path, sql: str, *args) -> list[dict]:
    db = _db(runs)
    try:
        return [dict(r) for r in db.execute(sql, args).fetchall()]
    finally:
        db.close()


def _run(
    srv: ScriptedLLM, runs: Path, problem: Path, run_id: str, *extra: str, iterations: int = 1
) -> None:
    args = run_args(srv.base_url, runs, "--run-id", run_id, "--tune-evals", "0", *extra,
                    problem=problem, iterations=iterations)  # fmt: skip
    r = evolve(*args, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.fixture(scope="module")
def three_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Three runs of the same problem, each answered the same program by the model."""
    tmp = tmp_path_factory.mktemp("leaderboard")
    problem, runs = seeded_problem(tmp / "seeded"), tmp / "runs"
    with ScriptedLLM.from_list([REPLY]) as srv:
        for run_id in ("r1", "r2", "r3"):
            _run(srv, runs, problem, run_id)
        (runs.parent / "prompts.json").write_text(json.dumps(srv.requests))
    return problem, runs


def test_the_same_program_has_one_leaderboard_score_across_three_runs(three_runs):
    problem, runs = three_runs
    seeds = {r["run_id"]: r["data_seed"] for r in _rows(runs, "SELECT * FROM runs")}
    board = _rows(runs, "SELECT * FROM leaderboards")
    assert len(board) == 1 and board[0]["problem"] == "seeded"
    assert board[0]["data_seed"] not in seeds.values() and len(set(seeds.values())) == 3
    own = {
        r["program_id"]: r
        for r in _rows(runs, "SELECT program_id, score, test_score FROM programs")
    }
    lb = {r["program_id"]: r for r in _rows(runs, "SELECT * FROM leaderboard_scores")}
    assert set(lb) == set(own) == {f"r{i}:{it}" for i in (1, 2, 3) for it in (0, 1)}
    for it in (0, 1):  # the seed and the model's program: each run's own data, one board
        ids = [f"r{i}:{it}" for i in (1, 2, 3)]
        assert len({own[p]["score"] for p in ids}) == 3  # three workloads, three numbers
        assert len({own[p]["test_score"] for p in ids}) == 3
        assert len({lb[p]["score"] for p in ids}) == 1  # one leaderboard score
        assert len({lb[p]["test_score"] for p in ids}) == 1
        assert {lb[p]["data_seed"] for p in ids} == {board[0]["data_seed"]}
        assert lb[ids[0]]["score"] not in {own[p]["score"] for p in ids}
    # measured on the leaderboard data: `evolve eval` under its seed says the same
    child = runs.parent / "child.py"
    child.write_text(f"# EVOLVE-BLOCK-START\n{CHILD}# EVOLVE-BLOCK-END\n")
    r = evolve("eval", problem, child, "--data-seed", str(board[0]["data_seed"]), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["score"] == lb["r1:1"]["score"]
    prompts = (runs.parent / "prompts.json").read_text()  # no model sees the board's numbers
    seed = board[0]["data_seed"]
    assert str(seed) not in prompts and hex(seed) not in prompts
    assert not any(repr(v["score"])[:8] in prompts for v in lb.values())
    print(
        "\nthree-run leaderboard:",
        {p: (own[p]["score"], lb[p]["score"]) for p in sorted(own) if p.endswith(":1")},
    )


def test_cross_run_views_rank_by_the_leaderboard_and_say_so(three_runs):
    _, runs = three_runs
    lb = {r["program_id"]: r for r in _rows(runs, "SELECT * FROM leaderboard_scores")}
    best = archive_json(runs, "best", "--problem", "seeded")
    assert best["program_id"] == "r1:1"  # the earliest of equals on the leaderboard
    assert best["leaderboard_score"] == lb["r1:1"]["score"]
    assert best["leaderboard_test_score"] == lb["r1:1"]["test_score"]
    assert "leaderboard data (seed private)" in best["ranked_by"]
    assert best["code"].count("x * x - x") == 1
    # --run stays the run's own
    mine = archive_json(runs, "best", "--run", "r2")
    assert mine["program_id"] == "r2:1" and "leaderboard_score" not in mine
    table = evolve("archive", "best", "--runs-dir", runs)
    assert table.returncode == 0 and "leaderboard data (seed private)" in table.stdout
    api = TestClient(make_app(runs)).get("/api/problems/seeded/leaderboard").json()
    assert [p["program_id"] for p in api["programs"]] == ["r1:1", "r1:0"]  # one per code
    assert api["programs"][0]["leaderboard_score"] == lb["r1:1"]["score"]
    assert api["unranked"] == [] and "seed private" in api["ranked_by"]
    page = TestClient(make_app(runs)).get("/problems/seeded").text
    assert "scored on this archive&#39;s leaderboard data (seed private)" in page
    out = runs.parent / "seeded.csv"
    r = evolve("archive", "export", "--problem", "seeded", "--format", "jsonl",
               "--out", out.with_suffix(".jsonl"), "--runs-dir", runs)  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in out.with_suffix(".jsonl").read_text().splitlines()]
    exported = {r["program_id"]: r["leaderboard_score"] for r in rows}
    assert exported == pytest.approx({p: v["score"] for p, v in lb.items()})  # jsonl: 10 digits
    report = runs.parent / "r3.html"
    assert evolve("archive", "report", "r3", "--out", report, "--runs-dir", runs).returncode == 0
    assert "place 1 of 2 distinct programs" in report.read_text()


def test_the_baselines_are_scored_on_the_same_leaderboard_seed(three_runs, tmp_path, monkeypatch):
    problem, runs = three_runs
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    scorer = Baselines("local")
    app = TestClient(make_app(runs, scorer))
    for _ in range(600):
        board = app.get("/api/problems/seeded/leaderboard").json()
        if all(b["status"] != "pending" for b in board["baselines"]):
            break
        time.sleep(0.1)
    (five_x,) = board["baselines"]
    assert five_x["status"] == "ok" and board["baselines_data"] == "leaderboard"
    seed_lb = _rows(
        runs, "SELECT score, test_score FROM leaderboard_scores WHERE program_id='r1:0'"
    )
    # the baseline is the seed's code: on the same data, the same numbers
    assert (five_x["score"], five_x["test_score"]) == (
        seed_lb[0]["score"],
        seed_lb[0]["test_score"],
    )
    public = scorer.scores(str(problem))  # on the public data it is another number
    for _ in range(600):
        if public[0].status != "pending":
            break
        time.sleep(0.1)
        public = scorer.scores(str(problem))
    assert public[0].status == "ok" and public[0].score != five_x["score"]


def _reply(body: str) -> str:
    return f"An idea.\n\n```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```\n"


def test_each_new_best_is_scored_on_the_leaderboard_when_it_becomes_best(tmp_path):
    """Not only the run's final best: a best the run left behind has its leaderboard score
    too (b:1 is offered while no scoring is under way, so it is never skipped for a newer
    one; b:2 is the newest)."""
    problem, runs = seeded_problem(tmp_path / "seeded"), tmp_path / "runs"
    better = _reply("def f(x):\n    return x * x - 0.5 * x\n")  # mean error 2.5, CHILD's 5
    with ScriptedLLM.from_list([REPLY, better]) as srv:
        _run(srv, runs, problem, "b", "--parallel", "1", "--llm-parallel", "1", iterations=2)
    own = {r["program_id"]: r["score"] for r in _rows(runs, "SELECT * FROM programs")}
    assert own["b:0"] < own["b:1"] < own["b:2"]  # b:1 was a new best, then left behind
    lb = {r["program_id"]: r for r in _rows(runs, "SELECT * FROM leaderboard_scores")}
    assert set(lb) == {"b:0", "b:1", "b:2"}
    assert lb["b:0"]["score"] < lb["b:1"]["score"] < lb["b:2"]["score"]
    assert all(lb[p]["test_score"] is not None for p in lb)
    assert all(lb[p]["score"] != own[p] for p in lb)  # the leaderboard's data, not the run's


def test_resume_scores_what_a_kill_left_and_never_scores_twice(tmp_path):
    problem, runs = seeded_problem(tmp_path / "seeded"), tmp_path / "runs"
    with ScriptedLLM.from_list([REPLY]) as srv:
        _run(srv, runs, problem, "k")
        before = {r["program_id"]: r for r in _rows(runs, "SELECT * FROM leaderboard_scores")}
        assert set(before) == {"k:0", "k:1"}
        # a kill between the held-out re-scoring of k:1 and its leaderboard scoring
        db = _db(runs)
        db.execute("DELETE FROM leaderboard_scores WHERE program_id='k:1'")
        db.commit()
        db.close()
        r = evolve("resume", "k", "--runs-dir", runs, "--no-progress", timeout=300)
        assert r.returncode == 0, r.stdout + r.stderr
    after = {r["program_id"]: r for r in _rows(runs, "SELECT * FROM leaderboard_scores")}
    assert after["k:0"] == before["k:0"]  # kept as it was: not measured again
    assert after["k:1"]["score"] == before["k:1"]["score"]  # measured again, same data
    assert after["k:1"]["created_at"] > before["k:1"]["created_at"]


def test_programs_of_runs_before_the_leaderboard_are_shown_unranked(tmp_path):
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run("old", "toy", str(tmp_path), {}, 1)
    from evolve.archive import ProgramRow

    a.insert_program(ProgramRow("old:0", "old", "toy", 0, 0, "ok", code="x = 1\n", score=1.0))
    a.close()
    reader = ArchiveReader(runs)
    assert reader.ranked("toy") == [] and reader.leaderboard_seed("toy") is None
    (only,) = reader.unranked("toy")
    assert only.program.program_id == "old:0" and only.board is None
    r = evolve("archive", "best", "--problem", "toy", "--json", "--runs-dir", runs)
    assert r.returncode == 0 and "not comparable across runs" in r.stderr
    assert "unranked" in json.loads(r.stdout)["ranked_by"]
    api = TestClient(make_app(runs)).get("/api/problems/toy/leaderboard").json()
    assert api["programs"] == [] and [p["program_id"] for p in api["unranked"]] == ["old:0"]
    assert api["baselines_data"] == "public"
    page = TestClient(make_app(runs)).get("/problems/toy").text
    assert 'id="unranked"' in page


def test_one_leaderboard_seed_per_problem_drawn_once(tmp_path):
    a = Archive(tmp_path / "runs")
    first = a.draw_leaderboard_seed("p", 5)
    assert (
        first == 5 and a.draw_leaderboard_seed("p", 6) == 5 and a.draw_leaderboard_seed("q", 7) == 7
    )
    a.close()
    assert Archive(tmp_path / "runs").draw_leaderboard_seed("p", 8) == 5
