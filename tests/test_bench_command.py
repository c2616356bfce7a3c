"""`evolve bench` end to end: the real command on problems/binpack and on a copy of it whose
seed is first fit (so its scale, first fit = 0 and best fit = 100, is not degenerate), driven
by the scripted OpenAI-compatible server; then its table, JSON, PNG, `bench_runs` rows and
web pages. Nothing here looks at wall times."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from evolve.archive import Archive
from evolve.benchmark.curve import Candidate, best_so_far, median_curve
from evolve.benchmark.normalise import References, normalised
from evolve.edits.blocks import complete_from_seed
from evolve.testing.cli_helpers import BINPACK, evolve
from evolve.testing.scripted_llm import ScriptedLLM, binpack_replies, binpack_reply
from evolve.testing.web_support import IMG, SCRIPT
from evolve.web.app import make_app

# The module's fixture runs two benches end to end (runs, seed and baselines scored in the
# sandbox): minutes on two busy cores, past the suite's 300 s per test.
pytestmark = pytest.mark.timeout(1500)

BENCH_ID = "t"
MARK = "FIRST-FIT-SEED-COPY"  # in the copy's prompts: the scripted model answers it with best fit
BINPACK_SEED_TEST = -4.676  # best fit on binpack's held-out split (README: public data)
DATA_SEED = 7  # the benchmark's private workloads


@dataclass
class Bench:
    runs: Path
    out: dict  # the command's JSON
    table: str  # the same benchmark's rows printed as a table (`evolve bench` without --json)
    cache: Path


def first_fit_copy(dst: Path) -> Path:
    """problems/binpack with first fit as its seed and best fit as its only baseline (and
    no reference/ programs): best fit sets the 100."""
    shutil.copytree(BINPACK, dst, ignore=shutil.ignore_patterns("__pycache__"))
    toml = (dst / "problem.toml").read_text()
    toml = toml.replace('name = "binpack"', 'name = "binpack_ff"', 1)
    toml = toml.replace('description = "', f'description = "{MARK}: ', 1)
    (dst / "problem.toml").write_text(toml)
    seed = (dst / "seed.py").read_text()
    first_fit = (dst / "baselines" / "first_fit.py").read_text()
    (dst / "seed.py").write_text(complete_from_seed(first_fit, seed))
    (dst / "baselines" / "first_fit.py").unlink()
    shutil.rmtree(dst / "reference")  # FunSearch's programs would set the 100 instead
    return dst


def responder():
    """binpack's canned edits in a cycle (the server's --improve-binpack mode); best fit,
    always, to a prompt about the copy."""
    cycle = ScriptedLLM.from_list(binpack_replies()).responder
    best_fit = binpack_reply("best_fit")

    def reply(request: dict):
        return best_fit if MARK in json.dumps(request.get("messages")) else cycle(request)

    return reply


def bench_args(srv: ScriptedLLM, runs: Path, *problems: Path, calls: int = 3, seeds: int = 2):
    return [
        "bench",
        *problems,
        "--model",
        "scripted",
        "--api-base",
        srv.base_url,
        "--calls",
        str(calls),
        "--seeds",
        str(seeds),
        "--runs-dir",
        runs,
        "--sandbox",
        "local",
        "--run-arg=--llm-backoff=0.05",
        "--run-arg=--tune-evals=0",  # the figures here are the calls'; tuned children would only add evaluations
    ]


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Bench:
    root = tmp_path_factory.mktemp("bench")
    copy = first_fit_copy(root / "binpack_ff")
    runs, cache = root / "runs", root / "cache"
    env = {"XDG_CACHE_HOME": str(cache)}
    with ScriptedLLM(responder()) as srv:
        r = evolve(
            *bench_args(srv, runs, BINPACK, copy),
            "--bench-id",
            BENCH_ID,
            "--data-seed",
            str(DATA_SEED),
            "--json",
            timeout=1200,
            extra_env=env,
        )
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        # the table, from a second, one-seed benchmark of the copy alone
        t = evolve(*bench_args(srv, runs, copy, seeds=1), "--bench-id", "t2", extra_env=env)
        assert t.returncode == 0, t.stderr
    return Bench(runs, out, t.stdout, cache)


def problem(b: Bench, name: str) -> dict:
    return next(p for p in b.out["problems"] if p["problem"] == name)


# ---- normalisation by hand ----------------------------------------------------------------


def test_normalised_is_the_seed_to_best_baseline_scale():
    assert normalised(-4.0, -5.0, -3.0) == 50.0
    assert normalised(-3.0, -5.0, -3.0) == 100.0
    assert normalised(-2.0, -5.0, -3.0) == 150.0  # beats every baseline
    assert normalised(-5.0, -5.0, -3.0) == 0.0
    assert normalised(-6.0, -5.0, -3.0) == -50.0
    assert normalised(0.9, 0.5, 0.7) == pytest.approx(200.0)
    assert normalised(-4.0, -5.0, -5.0) is None  # the best baseline is the seed: no scale
    assert normalised(51.77, 51.76, 51.75) is None  # nor below it (eplb: timing noise)
    assert normalised(None, -5.0, -3.0) is None
    assert normalised(-4.0, None, -3.0) is None
    assert normalised(-4.0, -5.0, float("nan")) is None
    refs = References(-5.0, -5.0, "best_fit.py")
    assert refs.normalised(-4.0) is None and "best_fit.py" in (refs.no_scale() or "")
    assert References(-5.0, -3.0, "b.py").no_scale() is None
    assert References(None, -3.0, "b.py").no_scale() == "the seed has no held-out score"


def test_the_curve_follows_the_best_train_program():
    seed = Candidate(score=1.0, test_score=10.0, created_at=0.0)
    calls = [
        None,  # a call that gave nothing
        Candidate(2.0, 20.0, 1.0),  # a new best
        Candidate(1.5, None, 2.0),  # worse on train: the best stays
        Candidate(3.0, None, 3.0),  # a best with no held-out score: the last known value
        Candidate(3.0, 99.0, 4.0),  # a tie on train: the earliest stays the best
    ]
    assert best_so_far(seed, calls) == [10.0, 10.0, 20.0, 20.0, 20.0, 20.0]
    assert median_curve([[0.0, 10.0, 30.0], [0.0, 50.0], [None, None, None]]) == [0.0, 30.0, 40.0]


# ---- the command ----------------------------------------------------------------------------


def test_the_json_has_a_row_per_problem_with_the_runs_and_references(bench):
    out = bench.out
    assert out["bench_id"] == BENCH_ID and out["model"] == "scripted"
    assert out["calls"] == 3 and out["seeds"] == 2
    assert [p["problem"] for p in out["problems"]] == ["binpack", "binpack_ff"]
    for p in out["problems"]:
        assert p["seeds"] == p["runs"] == 2 and p["failed"] == 0
        assert [r["seed"] for r in p["results"]] == [0, 1]
        for r in p["results"]:
            assert r["run_id"] == f"{BENCH_ID}-{p['problem']}-s{r['seed']}"
            assert r["status"] == "finished" and r["exit_code"] == 0 and r["error"] is None
            assert r["calls"] == 3  # the budget, exactly
            assert 0 <= r["behaviourally_new"] <= r["valid"] <= r["calls"]
            assert r["new_programs"] + r["duplicates"] <= r["calls"]
            assert r["tokens"] > 0 and isinstance(r["wall_s"], float)
            assert len(r["curve"]) == len(r["held_out_curve"]) == r["calls"] + 1
        for key in ("valid_share", "new_yield", "behaviour_yield", "duplicates", "tokens"):
            assert p[key] is not None, key


def held_out(program: Path, data_seed: int | None) -> float:
    """`evolve eval --split test` of a file, on the workloads of `data_seed`."""
    seed_flag = [] if data_seed is None else ["--data-seed", str(data_seed)]
    r = evolve(
        "eval", BINPACK, program, "--split", "test", "--json", "--sandbox", "local", *seed_flag
    )
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["score"]


def test_binpack_is_scaled_by_its_published_program_since_its_best_baseline_is_its_seed(bench):
    p = problem(bench, "binpack")
    refs = p["references"]
    assert refs["best_baseline_name"] == "reference/funsearch_or.py"  # best_fit.py is the seed
    # the seed and the reference score on the runs' private workloads, not the public ones
    funsearch_or = BINPACK / "reference" / "funsearch_or.py"
    assert refs["seed_test"] == pytest.approx(held_out(BINPACK / "seed.py", DATA_SEED))
    assert refs["best_baseline_test"] == pytest.approx(held_out(funsearch_or, DATA_SEED))
    assert refs["seed_test"] != pytest.approx(BINPACK_SEED_TEST, abs=1e-3)
    assert held_out(funsearch_or, None) == pytest.approx(-3.0674, abs=1e-3)  # README's number
    for r in p["results"]:
        assert r["curve"][0] == 0.0
        assert r["held_out_curve"][0] == pytest.approx(refs["seed_test"])
        assert r["held_out"] is not None
    # the canned edits in order: run 0 gets best fit (the seed again), best fit with an explicit
    # tie-break (valid, the seed's train score) and worst fit (stopped by the cascade); run 1
    # three failures. Whatever a search policy re-asks, six answered calls share them out.
    total = {k: sum(r[k] for r in p["results"]) for k in ("calls", "valid", "behaviourally_new")}
    assert total == {"calls": 6, "valid": 1, "behaviourally_new": 0}


def test_the_first_fit_copy_is_normalised_by_hand(bench):
    """Seed first fit = 0, baseline best fit = 100; every reply is best fit, so each run finds
    best fit with its first answered call and repeats it with the other two."""
    p = problem(bench, "binpack_ff")
    refs = p["references"]
    assert refs["best_baseline_name"] == "best_fit.py"  # binpack's seed, on the same workloads
    assert refs["best_baseline_test"] == pytest.approx(
        problem(bench, "binpack")["references"]["seed_test"]
    )
    seed, best = refs["seed_test"], refs["best_baseline_test"]
    assert seed < best  # first fit does worse than best fit held out
    for r in p["results"]:
        assert (r["calls"], r["valid"], r["new_programs"], r["duplicates"]) == (3, 1, 1, 2)
        assert r["behaviourally_new"] == 1
        assert r["held_out"] == pytest.approx(best)
        assert r["normalised"] == pytest.approx(100 * (r["held_out"] - seed) / (best - seed))
        assert r["normalised"] == pytest.approx(100.0)
        assert r["curve"][0] == 0.0 and r["curve"][-1] == pytest.approx(100.0)
        assert all(v == 0.0 or v == pytest.approx(100.0) for v in r["curve"])
        assert r["curve"] == sorted(r["curve"])
    assert p["normalised_median"] == pytest.approx(100.0)
    assert p["normalised_min"] == pytest.approx(100.0) == p["normalised_max"]
    assert p["valid_share"] == p["new_yield"] == p["behaviour_yield"] == pytest.approx(1 / 3)
    assert p["duplicates"] == 2
    assert p["curve"][0] == 0.0 and p["curve"][-1] == pytest.approx(100.0)


def test_the_table_prints_the_same_numbers(bench):
    lines = bench.table.splitlines()
    header = next(ln for ln in lines if "normalised" in ln and "problem" in ln)
    for col in ("min..max", "held-out", "valid", "dup", "new", "beh-new", "tokens", "wall"):
        assert col in header
    row = next(ln for ln in lines if "binpack_ff" in ln and "│" in ln)
    cells = [c.strip() for c in row.strip("│ ").split("│")]
    assert cells[:3] == ["binpack_ff", "100.0", "100.0..100.0"]
    assert cells[4:8] == ["33%", "2", "33%", "33%"]
    assert any(ln.startswith("binpack_ff: held-out seed") for ln in lines)


def test_the_curve_png_is_written(bench):
    png = Path(bench.out["curve_png"])
    assert png == bench.runs / "bench" / BENCH_ID / "curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    for p in bench.out["problems"]:
        for r in p["results"]:  # each run's log beside it
            assert (png.parent / f"{r['run_id']}.log").is_file()


def test_bench_runs_rows_hold_each_run(bench):
    db = sqlite3.connect(bench.runs / "archive.db")
    rows = db.execute(
        "SELECT problem, seed, run_id, model, calls, result_json FROM bench_runs"
        " WHERE bench_id = ? ORDER BY problem, seed",
        (BENCH_ID,),
    ).fetchall()
    assert [(r[0], r[1], r[2], r[3], r[4]) for r in rows] == [
        (name, s, f"{BENCH_ID}-{name}-s{s}", "scripted", 3)
        for name in ("binpack", "binpack_ff")
        for s in (0, 1)
    ]
    for name, s, run_id, *_, result_json in rows:
        stored = json.loads(result_json)
        printed = next(r for r in problem(bench, name)["results"] if r["seed"] == s)
        assert {k: stored[k] for k in printed} == printed
        assert stored["references"] == problem(bench, name)["references"]
        config = json.loads(
            db.execute("SELECT config_json FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
        )
        assert config["seed"] == s  # a normal run with the bench's seed
        drawn = db.execute("SELECT data_seed FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        assert drawn == (DATA_SEED,)  # and the bench's workloads
        assert config.get("max_calls", 3) == 3


# ---- the web view ----------------------------------------------------------------------------


def test_the_web_view_lists_and_shows_the_benchmark(bench):
    c = TestClient(make_app(bench.runs))
    listing = c.get("/bench")
    assert listing.status_code == 200 and f'href="/bench/{BENCH_ID}"' in listing.text
    assert [b["bench_id"] for b in c.get("/api/bench").json()] == [BENCH_ID, "t2"]
    page = c.get(f"/bench/{BENCH_ID}")
    assert page.status_code == 200
    assert 'id="bench-table"' in page.text and 'id="chart-bench"' in page.text
    assert re.search(r'data-problem="binpack_ff">.*?data-k="normalised">100<', page.text, re.S)
    figure = json.loads(re.search(r'id="bench-data">(.*?)</script>', page.text, re.S).group(1))
    lines = {t["name"]: t["y"] for t in figure["data"]}
    assert lines["binpack_ff"][0] == 0 and lines["binpack_ff"][-1] == pytest.approx(100)
    assert lines["binpack"][0] == 0
    api = c.get(f"/api/bench/{BENCH_ID}").json()
    assert api["bench_id"] == BENCH_ID and api["model"] == "scripted" and api["calls"] == 3
    assert api["problems"] == bench.out["problems"]  # the page's data is the command's


def test_unknown_benchmarks_are_404s_of_one_line(bench):
    c = TestClient(make_app(bench.runs))
    r = c.get("/api/bench/nope")
    assert r.status_code == 404 and r.json() == {
        "error": "no benchmark 'nope' in this archive",
        "status": 404,
    }
    assert c.get("/bench/nope").status_code == 404


def test_the_bench_pages_escape_what_they_show(tmp_path):
    a = Archive(tmp_path)
    try:
        result = {"seed": 0, "run_id": IMG, "status": "finished", "exit_code": 0, "error": SCRIPT}
        a.add_bench_run(SCRIPT, f"p{SCRIPT}", 0, IMG, f"m{IMG}", 3, result)
    finally:
        a.close()
    c = TestClient(make_app(tmp_path))
    for path in ("/bench", f"/bench/{quote(SCRIPT, safe='')}"):
        html = c.get(path).text
        assert "<script>window.__pwned" not in html and "<img src=x" not in html, path
        assert "&lt;script&gt;window.__pwned" in html, path


# ---- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, names",
    [
        (["nope", "--calls", "3", "--seeds", "2"], "PROBLEM_DIR nope"),
        ([BINPACK, "--calls", "0", "--seeds", "2"], "--calls"),
        ([BINPACK, "--calls", "3", "--seeds", "0"], "--seeds"),
        ([BINPACK, "--calls", "3", "--seeds", "1", "--run-arg=--model=x"], "--run-arg"),
        ([BINPACK, "--calls", "3", "--seeds", "1", "--run-arg=--nope=1"], "--run-arg"),
        ([BINPACK, "--calls", "3", "--seeds", "1", "--bench-id", "a/b"], "--bench-id"),
    ],
)
def test_bad_input_is_one_line_naming_the_flag(tmp_path, args, names):
    r = evolve("bench", *args, "--model", "scripted", "--runs-dir", tmp_path / "runs")
    assert r.returncode == 2, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and names in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_bench_id_in_use_is_refused(bench):
    r = evolve(
        "bench", BINPACK, "--model", "scripted", "--calls", "1", "--seeds", "1",
        "--runs-dir", bench.runs, "--bench-id", BENCH_ID,
    )  # fmt: skip
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"--bench-id {BENCH_ID}: a benchmark with this id exists" in r.stderr


# ---- suites -----------------------------------------------------------------------------------


def test_the_adrs_suite_names_the_seven_leaderboard_problems(tmp_path, monkeypatch):
    from evolve.benchmark.suites import expand

    folders = expand(["adrs"])
    assert [Path(f).name for f in folders] == [
        "spot_scheduling",
        "spot_multi_region",
        "llm_sql",
        "cloudcast",
        "prism",
        "eplb",
        "txn_scheduling",
    ]
    assert all((Path(f) / "problem.toml").is_file() for f in folders)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adrs").mkdir()  # a folder of that name stays a problem folder
    assert expand(["adrs", "x"]) == ["adrs", "x"]


def test_the_suite_loads_every_problem_before_anything_runs(tmp_path):
    # the bad --bench-id is only reported once all seven folders loaded as problems
    r = evolve(
        "bench",
        "adrs",
        "--calls",
        "1",
        "--seeds",
        "1",
        "--model",
        "scripted",
        "--bench-id",
        "a/b",
        "--runs-dir",
        tmp_path / "runs",
    )
    assert r.returncode == 2 and "--bench-id a/b" in r.stderr, r.stderr
