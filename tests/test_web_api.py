"""The web view's pages and JSON API, in process through Starlette's test client (real
HTTP semantics over httpx), on an archive made by a real run."""

from __future__ import annotations

import json
import time
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from evolve.archive import Archive, ProgramRow
from evolve.web.app import make_app
from evolve.web.baselines import Baselines
from tests.cli_helpers import BINPACK, evolve
from tests.web_support import HOSTILE_RUN, IMG, SCRIPT


@pytest.fixture(scope="module")
def client(web_archive):
    return TestClient(make_app(web_archive.runs_dir))


def q(s: str) -> str:
    return quote(s, safe="")


def test_api_runs_lists_both_runs_with_their_figures(client, web_archive):
    runs = {r["run_id"]: r for r in client.get("/api/runs").json()}
    real = runs[web_archive.run_id]
    assert real["problem"] == "binpack" and real["status"] == "finished"
    assert real["iterations_done"] == 8 and real["programs"] == 9
    assert real["best_score"] > real["seed_score"] and real["best_test_score"] is not None
    assert real["tokens"] > 0 and 0 <= real["valid_pct"] <= 100
    assert runs[HOSTILE_RUN]["status"] == "finished"


def test_api_run_programs_program_and_lineage_agree_with_the_cli(client, web_archive):
    run = client.get(f"/api/runs/{q(web_archive.run_id)}").json()
    assert run["run_id"] == web_archive.run_id and "config" in run
    progs = client.get(f"/api/runs/{q(web_archive.run_id)}/programs").json()
    assert [p["iteration"] for p in progs] == list(range(9))
    assert "code" not in progs[0]
    later = client.get(f"/api/runs/{q(web_archive.run_id)}/programs?after=5&code=1").json()
    assert [p["iteration"] for p in later] == [6, 7, 8] and "code" in later[0]

    best = client.get(f"/api/programs/{q(run['best_program_id'])}").json()
    r = evolve("archive", "show", best["program_id"], "--json", "--runs-dir", web_archive.runs_dir)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert {k: best[k] for k in shown} == shown  # the API says what the CLI says
    assert best["diff_to_parent"].startswith("---") and best["llm_call"]["reply"]

    chain = client.get(f"/api/programs/{q(best['program_id'])}/lineage").json()
    assert chain[0]["program_id"] == best["program_id"] and chain[-1]["iteration"] == 0
    assert chain[-1]["score_change"] is None
    assert chain[0]["score_change"] == pytest.approx(chain[0]["score"] - chain[1]["score"])


def test_api_leaderboard_and_figures(client, web_archive):
    board = client.get("/api/problems/binpack/leaderboard").json()
    scores = [p["score"] for p in board["programs"]]
    assert scores == sorted(scores, reverse=True) and len(scores) >= 2
    assert {b["name"] for b in board["baselines"]} == {"first_fit.py", "best_fit.py"}
    assert client.get("/api/problems").json() == ["binpack"]
    figs = client.get(f"/api/runs/{q(web_archive.run_id)}/figures").json()
    names = {t["name"] for t in figs["score"]["data"]}
    assert {"ok", "best so far", "held-out (test)"} <= names
    assert figs["grids"] and figs["grids"][0]["data"][0]["type"] == "heatmap"


@pytest.mark.parametrize(
    "path",
    [
        "/runs/nope",
        "/programs/nope:1",
        "/programs/nope/lineage",
        "/problems/nope",
        "/api/runs/nope",
        "/api/runs/nope/programs",
        "/api/programs/nope",
        "/api/programs/nope/lineage",
        "/api/problems/nope/leaderboard",
        "/no/such/page",
    ],
)
def test_unknown_ids_are_a_404_with_one_line(client, path):
    r = client.get(path)
    assert r.status_code == 404
    if path.startswith("/api/"):
        assert r.json()["status"] == 404 and "nope" in r.json()["error"]
    else:
        assert "Traceback" not in r.text and "<h1" in r.text


@pytest.mark.parametrize(
    "path",
    ["/api/runs/{run}/programs?after=x", "/api/problems/binpack/leaderboard?limit=0"],
)
def test_malformed_queries_are_a_400(client, web_archive, path):
    r = client.get(path.format(run=q(web_archive.run_id)))
    assert r.status_code == 400 and "expected" in r.json()["error"]


@pytest.mark.parametrize(
    "page",
    [
        "/",
        "/runs/{run}",
        "/programs/{seed}",
        "/programs/{child}",
        "/programs/{child}/lineage",
        "/problems/binpack",
    ],
)
def test_candidate_text_is_escaped_everywhere(client, web_archive, page):
    url = page.format(
        run=HOSTILE_RUN, seed=q(web_archive.hostile["seed"]), child=q(web_archive.hostile["child"])
    )
    html = client.get(url).text
    assert SCRIPT not in html and IMG not in html
    assert "<script>window.__pwned" not in html and "<img src=x" not in html
    if "programs" in url and "lineage" not in url:
        assert "&lt;/textarea&gt;&lt;script&gt;" in html or "&lt;script&gt;" in html


def test_the_program_page_shows_code_diff_metrics_artifacts_and_the_exchange(client, web_archive):
    html = client.get(f"/programs/{q(web_archive.hostile['child'])}").text
    for anchor in ('id="code"', 'id="diff"', 'id="metrics"', 'id="artifacts"', 'id="prompt"'):
        assert anchor in html
    assert "reply " in html and "Traceback: &lt;img" in html
    assert html.count("&lt;script&gt;") >= 3  # code, artifact, prompt, reply


def test_the_archive_is_opened_read_only(tmp_path):
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run("r", "toy", str(tmp_path), {}, 1)
    a.insert_program(ProgramRow("r:0", "r", "toy", 0, 0, "ok", code="x = 1\n", score=1.0))
    a.close()
    db = runs / "archive.db"
    before = db.read_bytes(), db.stat().st_mtime_ns
    c = TestClient(make_app(runs))
    for path in ("/", "/runs/r", "/programs/r:0", "/programs/r:0/lineage", "/api/runs"):
        assert c.get(path).status_code == 200
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before


def test_no_archive_is_one_line(tmp_path):
    r = evolve("ui", "--runs-dir", tmp_path / "none", "--port", "0")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "no archive.db" in r.stderr


def test_leaderboard_scores_the_baselines_in_the_sandbox(web_archive, tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    scorer = Baselines("local")
    first = {b.name: b for b in scorer.scores(str(BINPACK))}
    assert set(first) == {"first_fit.py", "best_fit.py"}
    for _ in range(600):
        now = {b.name: b for b in scorer.scores(str(BINPACK))}
        if all(b.status != "pending" for b in now.values()):
            break
        time.sleep(0.1)
    assert now["best_fit.py"].status == "ok", now
    assert now["best_fit.py"].score > now["first_fit.py"].score  # best fit beats first fit
    assert now["best_fit.py"].test_score is not None
    html = TestClient(make_app(web_archive.runs_dir, scorer)).get("/problems/binpack").text
    assert "best_fit.py" in html and "pending" not in html


def test_a_busy_port_and_an_unknown_run_are_one_line(web_archive):
    import socket

    with socket.create_server(("127.0.0.1", 0)) as busy:
        port = busy.getsockname()[1]
        r = evolve("ui", "--runs-dir", web_archive.runs_dir, "--port", str(port))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert f"--port {port}: cannot listen there" in r.stderr
    r = evolve("ui", "--runs-dir", web_archive.runs_dir, "--port", "0", "--run", "nope")
    assert r.returncode == 2 and r.stderr.strip().endswith("--run nope: no such run")
