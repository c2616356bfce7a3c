"""The web view's pages and JSON API, in process through Starlette's test client (real
HTTP semantics over httpx), on an archive made by a real run."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from evolve.archive import SCHEMA_VERSION, Archive, ArchiveReader, ProgramRow
from evolve.archive.rows import LlmCall
from evolve.testing.cli_helpers import BINPACK, archive_json, evolve
from evolve.testing.web_support import HOSTILE_RUN, IMG, NOTE, REJECTED_REPLY, SCRIPT, SEARCH_RUN
from evolve.web.app import make_app
from evolve.web.baselines import Baselines


@pytest.fixture(scope="module")
def client(web_archive):
    return TestClient(make_app(web_archive.runs_dir))


def q(s: str) -> str:
    return quote(s, safe="")


def test_api_runs_lists_both_runs_with_their_figures(client, web_archive):
    runs = {r["run_id"]: r for r in client.get("/api/runs").json()}
    real = runs[web_archive.run_id]
    assert real["problem"] == "binpack" and real["status"] == "finished"
    tuned = [
        p
        for p in client.get(f"/api/runs/{q(web_archive.run_id)}/programs").json()
        if p["kind"] == "tune"
    ]  # no iteration of the 8: slots of their own
    assert real["iterations_done"] == 8 and real["programs"] == 9 + len(tuned)
    assert real["best_score"] > real["seed_score"] and real["best_test_score"] is not None
    assert real["tokens"] > 0 and 0 <= real["valid_pct"] <= 100
    assert runs[HOSTILE_RUN]["status"] == "finished"


def test_api_run_programs_program_and_lineage_agree_with_the_cli(client, web_archive):
    run = client.get(f"/api/runs/{q(web_archive.run_id)}").json()
    assert run["run_id"] == web_archive.run_id and "config" in run
    progs = client.get(f"/api/runs/{q(web_archive.run_id)}/programs").json()
    assert [p["iteration"] for p in progs] == list(range(len(progs)))
    assert "code" not in progs[0]
    later = client.get(f"/api/runs/{q(web_archive.run_id)}/programs?after=5&code=1").json()
    assert [p["iteration"] for p in later] == list(range(6, len(progs))) and "code" in later[0]

    best = client.get(f"/api/programs/{q(run['best_program_id'])}").json()
    r = evolve("archive", "show", best["program_id"], "--json", "--runs-dir", web_archive.runs_dir)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert {k: best[k] for k in shown} == shown  # the API says what the CLI says
    assert best["diff_to_parent"].startswith("---")
    written = best  # a tuned child has no call: its numbers come from the model's program
    while written["kind"] == "tune":
        assert written["llm_call"] is None
        written = client.get(f"/api/programs/{q(written['parent_id'])}").json()
    assert written["llm_call"]["reply"]

    chain = client.get(f"/api/programs/{q(best['program_id'])}/lineage").json()
    assert chain[0]["program_id"] == best["program_id"] and chain[-1]["iteration"] == 0
    assert chain[-1]["score_change"] is None
    if chain[1]["score"] is None:  # the best may be a repair of a failed program
        assert chain[0]["kind"] == "repair" and chain[0]["score_change"] is None
    else:
        assert chain[0]["score_change"] == pytest.approx(chain[0]["score"] - chain[1]["score"])


def test_api_leaderboard_and_figures(client, web_archive):
    board = client.get("/api/problems/binpack/leaderboard").json()
    scores = [p["leaderboard_score"] for p in board["programs"]]  # ranked on one data set
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
    # on the archive's leaderboard data, as the page ranks its programs
    seed = ArchiveReader(web_archive.runs_dir).leaderboard_seed("binpack")
    assert seed is not None
    first = {b.name: b for b in scorer.scores(str(BINPACK), seed)}
    assert set(first) == {"first_fit.py", "best_fit.py"}
    for _ in range(600):
        now = {b.name: b for b in scorer.scores(str(BINPACK), seed)}
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


# ---- what the search did (schema 4) -------------------------------------------------------


@pytest.fixture(scope="module")
def search_client(search_archive):
    return TestClient(make_app(search_archive.runs_dir))


def test_the_run_page_shows_what_the_search_did(search_client, search_archive):
    ids = search_archive.ids
    html = search_client.get(f"/runs/{SEARCH_RUN}").text
    assert 'id="search"' in html and 'id="chart-calls"' in html
    # beside the statuses: the rejected proposal and the repair
    assert re.search(r'data-k="rejected"><th>rejected proposals.*?<td class="n">1</td>', html)
    assert re.search(r'data-k="repairs"><th>repairs.*?1 scored.*?<td class="n">1</td>', html)
    assert re.search(r'data-status="runtime_error">.*?<td class="n">1</td>', html)
    # per model: calls, share, tokens, and the reward proxy (model-b: 1 better child in 2)
    rows = dict(re.findall(r"<tr><td>(model-[ab])</td>(.*?)</tr>", html))
    assert re.findall(r'class="n">([^<]*)<', rows["model-a"]) == [
        "3", "60%", "600", "$0.0040", "1", "0", "0",
    ]  # fmt: skip
    assert re.findall(r'class="n">([^<]*)<', rows["model-b"])[:2] == ["2", "40%"]
    assert rows["model-b"].endswith('<td class="n">0.5</td>')
    # the meta-note at its call, as text; the stagnation decision with its program linked
    assert "after 4 calls (call 6)" in html
    assert "Keep the best-fit rule.\n&lt;/textarea&gt;&lt;script&gt;window.__pwned" in html
    assert SCRIPT not in html and IMG not in html and "<img src=x" not in html
    assert "no new best in 2 iterations: 2 calls on <b>model-b</b>" in html
    assert f'island 0 restarted from <a class="pid" href="/programs/{q(ids["repair"])}">' in html


def test_api_run_search_has_notes_decisions_and_calls(search_client, search_archive):
    s = search_client.get(f"/api/runs/{SEARCH_RUN}").json()["search"]
    assert [(n["at_calls"], n["call_id"], n["text"]) for n in s["notes"]] == [(4, 6, NOTE)]
    assert [(d["at_done"], d["kind"], d["detail"]) for d in s["decisions"]] == [
        (2, "stagnation",
         {"model": "model-b", "calls": 2, "island": 0, "from": search_archive.ids["repair"],
          "after": 2}),
    ]  # fmt: skip
    calls = s["calls"]
    assert (calls["answered"], calls["failed"], calls["rejected"]) == (5, 1, 1)
    assert calls["by_purpose"] == {"mutation": 2, "resample": 1, "repair": 1, "meta": 1}
    assert calls["by_outcome"] == {"used": 4, "rejected_duplicate": 1, "failed attempt": 1}
    models = {m["model"]: m for m in calls["by_model"]}
    assert (models["model-a"]["calls"], models["model-a"]["failed"]) == (3, 1)
    assert models["model-a"]["proposals"] == 2 and models["model-a"]["reward"] == 0.0
    assert models["model-b"]["improved"] == 1 and models["model-b"]["reward"] == 0.5
    assert models["model-a"]["share"] == pytest.approx(0.6)
    assert (s["rejected"], s["repairs"], s["repairs_ok"]) == (1, 1, 1)
    assert s["statuses"] == {"ok": 2, "runtime_error": 1}
    figs = search_client.get(f"/api/runs/{SEARCH_RUN}/figures").json()
    kinds = {t["name"]: len(t["x"]) for t in figs["calls"]["data"]}
    assert kinds == {"mutation": 1, "resample": 1, "repair": 1, "meta": 1,
                     "rejected duplicate": 1, "failed attempt": 1}  # fmt: skip
    bars = figs["status"]["data"][-1]
    assert dict(zip(bars["x"], bars["y"], strict=True)) == {"rejected proposals": 1, "repairs": 1}


def test_the_program_page_shows_the_call_and_the_rejected_replies(search_client, search_archive):
    ids = search_archive.ids
    html = search_client.get(f"/programs/{q(ids['failed'])}").text
    assert 'Purpose <b data-k="purpose">resample</b>' in html
    assert 'temperature <b data-k="temperature">1</b>' in html
    assert "UCB 0.812 (mean reward 0.300 over 4 calls)" in html
    assert 'id="rejected-calls"' in html and "Rejected replies of iteration 1" in html
    rejected = html.split('id="rejected-calls"')[1]
    assert "<details>" in rejected and "<details open" not in rejected  # collapsed
    assert "call 1 to model-a, mutation, temperature 0.7: repeated a program" in rejected
    assert "the same program again &lt;/textarea&gt;&lt;script&gt;" in rejected
    assert SCRIPT not in html and IMG not in html

    html = search_client.get(f"/programs/{q(ids['repair'])}").text
    assert 'id="repair-note"' in html and "Repair of" in html and "fixed its error" in html
    assert f'href="/programs/{q(ids["failed"])}">{ids["failed"]}</a> (runtime_error)' in html
    assert "stagnation burst on model-b (2 calls left)" in html
    assert 'id="rejected-calls"' not in html
    html = search_client.get(f"/programs/{q(ids['failed'])}").text
    assert f"{ids['repair']}</a> (repair)" in html  # among its children

    html = search_client.get(f"/programs/{q(ids['improved'])}/lineage").text
    edges = re.findall(r'<li class="edge( repair)?">(.*?)</li>', html, re.S)
    assert [bool(r) for r, _ in edges] == [False, True, False]  # seed → failed → repair → 3
    assert "of a runtime_error program, shown its error: fixed it" in edges[1][1]


def test_api_program_says_how_it_was_proposed_as_the_cli_does(search_client, search_archive):
    pid = search_archive.ids["failed"]
    api = search_client.get(f"/api/programs/{q(pid)}").json()
    prop = api["proposal"]
    assert (prop["purpose"], prop["temperature"], prop["repair_of"]) == ("resample", 1.0, None)
    assert [c["reply"] for c in prop["rejected_calls"]] == [REJECTED_REPLY]
    assert api["llm_call"]["purpose"] == "resample" and api["llm_call"]["outcome"] is None
    r = evolve("archive", "show", pid, "--json", "--runs-dir", search_archive.runs_dir)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)
    assert {k: api[k] for k in shown} == shown
    repair = search_client.get(f"/api/programs/{q(search_archive.ids['repair'])}").json()
    assert repair["proposal"]["repair_of"] == pid and repair["proposal"]["purpose"] == "repair"


def _schema_3_archive(runs) -> None:
    """An archive as schema 3 wrote it: no purpose, outcome, temperature or decision on
    llm_calls, no decisions or meta_notes tables; one run with a seed and a child."""
    Archive(runs).close()
    db = sqlite3.connect(runs / "archive.db")
    for col in ("purpose", "outcome", "temperature", "decision"):
        db.execute(f"ALTER TABLE llm_calls DROP COLUMN {col}")
    for table in ("decisions", "meta_notes", "bench_runs"):
        db.execute(f"DROP TABLE {table}")
    db.execute("ALTER TABLE runs DROP COLUMN data_seed")  # schema 5's
    db.execute("ALTER TABLE programs DROP COLUMN code_files")  # schema 7's
    for table in ("blobs", "program_files"):
        db.execute(f"DROP TABLE {table}")
    db.execute(
        "INSERT INTO runs (run_id, problem, problem_dir, config_json, status, stop_reason,"
        " iterations_target, created_at, updated_at) VALUES ('old', 'toy', '/nowhere', '{}',"
        " 'finished', 'iterations done', 1, 1.0, 2.0)"
    )
    db.execute(
        "INSERT INTO llm_calls (run_id, iteration, island, parent_id, edit_format, model,"
        " prompt_json, reply, prompt_tokens, completion_tokens, created_at)"
        " VALUES ('old', 1, 0, 'old:0', 'diff', 'm', '[]', 'the reply', 10, 5, 1.5)"
    )
    for it, parent, call in ((0, None, None), (1, "old:0", 1)):
        db.execute(
            "INSERT INTO programs (program_id, run_id, problem, iteration, island, parent_id,"
            " kind, code, status, score, llm_call_id, created_at)"
            " VALUES (?, 'old', 'toy', ?, 0, ?, ?, ?, 'ok', ?, ?, ?)",
            (f"old:{it}", it, parent, "seed" if it == 0 else "mutation", f"x = {it}\n",
             float(it), call, 1.0 + it),
        )  # fmt: skip
    db.execute("PRAGMA user_version=3")
    db.commit()
    db.close()


def test_an_archive_of_schema_3_reads_as_it_is_and_once_migrated(tmp_path):
    runs = tmp_path / "runs"
    _schema_3_archive(runs)
    db_file = runs / "archive.db"
    before = db_file.read_bytes()

    def look() -> dict:
        c = TestClient(make_app(runs))
        for path in ("/", "/runs/old", "/programs/old:1", "/programs/old:1/lineage"):
            r = c.get(path)
            assert r.status_code == 200, (path, r.text)
        assert "No LLM call recorded" not in c.get("/programs/old:1").text
        assert 'Purpose <b data-k="purpose">not recorded</b>' in c.get("/programs/old:1").text
        figs = c.get("/api/runs/old/figures").json()
        assert [t["name"] for t in figs["calls"]["data"]] == ["not recorded"]
        prog = c.get("/api/programs/old:1").json()
        assert prog["proposal"]["purpose"] is None and prog["proposal"]["rejected_calls"] == []
        return c.get("/api/runs/old").json()["search"]

    # the web view reads it read-only, unmigrated
    search = look()
    assert search["notes"] == [] and search["decisions"] == []
    assert search["calls"]["by_purpose"] == {"not recorded": 1}
    assert search["calls"]["by_outcome"] == {"used": 1} and search["rejected"] == 0
    assert db_file.read_bytes() == before
    c = sqlite3.connect(db_file)
    assert c.execute("PRAGMA user_version").fetchone()[0] == 3
    c.close()

    # the next evolve that writes it migrates it (3 -> 7), and it reads the same
    Archive(runs).close()
    c = sqlite3.connect(db_file)
    assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 7
    assert {"purpose", "outcome", "temperature", "decision"} <= {
        r[1] for r in c.execute("PRAGMA table_info(llm_calls)")
    }
    c.close()
    assert look() == search
    shown = archive_json(runs, "show", "old:1")
    assert shown["code"] == "x = 1\n" and shown["proposal"]["purpose"] is None


def test_a_run_that_max_calls_ends_counts_calls_not_iterations(tmp_path):
    """A benchmark's run: --max-calls 5 under --iterations 20 is 1 of 5 calls, not 1 of 20."""
    a = Archive(tmp_path)
    a.create_run("b", "toy", "/nowhere", {"max_calls": 5}, 20)
    a.create_run("i", "toy", "/nowhere", {"max_calls": None}, 20)
    a.insert_llm_call(LlmCall("b", 1, 0, "m", "diff", [], reply="r"))
    a.insert_llm_call(LlmCall("b", 2, 0, "m", "diff", [], error="HTTP 500"))
    a.close()
    runs = {r.run_id: r for r in ArchiveReader(tmp_path).runs()}
    assert runs["b"].progress == "1 / 5 calls" and runs["i"].progress == "0 / 20"
    page = TestClient(make_app(tmp_path)).get("/").text
    assert "1 / 5 calls" in page and "0 / 20" in page


def test_a_running_run_lasts_until_now_not_until_its_row_was_last_written():
    """The live page showed DURATION 0s all through a run (issue 42 item 8)."""
    from evolve.archive.rows import RunStatus
    from evolve.archive.summaries import RunSummary

    start = time.time() - 100
    fields = dict(run_id="r", problem="p", problem_dir="/p", stop_reason=None)
    counts = dict(iterations_target=5, iterations_done=1, programs=2, valid=1)
    scores = dict(best_score=None, best_program_id=None, best_test_score=None)
    seed = dict(seed_score=None, seed_program_id=None, prompt_tokens=0, completion_tokens=0)
    rest = dict(cost_usd=0.0, llm_calls=0, created_at=start, updated_at=start)
    running = RunSummary(status=RunStatus.RUNNING, **fields, **counts, **scores, **seed, **rest)
    ended = RunSummary(status=RunStatus.FINISHED, **fields, **counts, **scores, **seed, **rest)
    assert running.duration_s >= 100 and ended.duration_s == 0
