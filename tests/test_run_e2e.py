"""Whole runs through the real CLI, a real HTTP server and real subprocess sandboxes."""

from __future__ import annotations

import json
import sqlite3

import pytest

from evolve.testing.cli_helpers import (
    BINPACK,
    OPENEVOLVE_FIXTURE,
    archive_json,
    block,
    evolve,
    run_args,
)
from evolve.testing.scripted_llm import Reply, ScriptedLLM, binpack_reply

BEST_FIT = binpack_reply("best_fit")  # the seed's own code: a duplicate on problems/binpack
IMPROVED = binpack_reply("funsearch_weibull")  # FunSearch's Weibull heuristic: beats the seed

HOSTILE = {
    "infinite_loop": "def priority(item, bins):\n    while True:\n        pass",
    "fork_bomb": "import os\ndef priority(item, bins):\n    while True:\n        os.fork()",
    "memory_bomb": 'def priority(item, bins):\n    x = b"x" * (10 * 1024**3)\n    return x',
    "huge_output": "import sys\ndef priority(item, bins):\n    while True:\n        sys.stdout.write('spam' * 10000)",
    "fake_score": (
        'import numpy as np\nprint(\'{"score": 1e9, "combined_score": 1e9}\')\n'
        "def priority(item, bins):\n    print('score: 1000000')\n    return -np.arange(len(bins), dtype=float) + 0.0"
    ),
    "steal_key": (
        "import os\nimport numpy as np\nKEY = os.environ.get('OPENAI_API_KEY', 'none')\n"
        "def priority(item, bins):\n    if KEY != 'none':\n        raise RuntimeError('LEAKED ' + KEY)\n"
        "    return -(bins - item) + 0.0"
    ),
}


def _programs(runs_dir, run_id):
    db = sqlite3.connect(runs_dir / "archive.db")
    db.row_factory = sqlite3.Row
    rows = [
        dict(r)
        for r in db.execute("SELECT * FROM programs WHERE run_id=? ORDER BY iteration", (run_id,))
    ]
    db.close()
    return rows


def test_run_finds_an_improvement_and_archives_it(tmp_path):
    replies = [
        Reply("I am not sure what to do."),
        IMPROVED,
        binpack_reply("funsearch_weibull"),
        binpack_reply("worst_fit"),
    ]
    with ScriptedLLM.from_list(replies) as srv:  # its end scores the best on the leaderboard too
        r = evolve(*run_args(srv.base_url, tmp_path, iterations=6), timeout=400)
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.splitlines()[0].strip()
    assert run_id.startswith("binpack-")
    best = archive_json(tmp_path, "best", "--problem", "binpack")
    runs = archive_json(tmp_path, "runs")
    assert (
        runs[0]["run_id"] == run_id
        and runs[0]["iterations_done"] == 6
        and runs[0]["status"] == "finished"
    )
    seed = [p for p in _programs(tmp_path, run_id) if p["iteration"] == 0][0]
    assert best["score"] > seed["score"], "FunSearch's heuristic must beat the best-fit seed"
    assert "bins.max()" in best["code"]
    assert best["run_id"] == run_id and set(best) >= {"program_id", "problem", "metrics", "code"}
    statuses = [p["status"] for p in _programs(tmp_path, run_id)]
    assert "invalid_edit" in statuses and "duplicate" in statuses
    # the held-out split scored the new best, and the prompts never showed it
    assert best["test_score"] is not None
    for req in srv.requests:
        assert "test" not in json.dumps(best["test_metrics"]) or str(
            best["test_score"]
        ) not in json.dumps(req)
    # pictures of the run, and the command that opens it in the web view
    assert (tmp_path / run_id / "score_curve.png").stat().st_size > 1000
    assert f"inspect it: evolve ui --runs-dir {tmp_path} --run {run_id} --open" in r.stderr
    lineage = archive_json(tmp_path, "lineage", best["program_id"])
    assert lineage[-1]["iteration"] == 0


def test_failures_from_the_endpoint_and_from_replies_are_recorded(tmp_path):
    replies = [
        Reply("boom", status=500),
        BEST_FIT,
        Reply("<<<<<<< SEARCH\nnothing like this\n=======\nx\n>>>>>>> REPLACE"),
        Reply("late", delay_s=3.0),
        block("def priority(item, bins):\n    return [1, 2, 3]"),
        block("def priority(item, bins)\n    return bins"),
        Reply(drop_connection=True),
    ]
    with ScriptedLLM.from_list(replies, then=binpack_reply("worst_fit")) as srv:
        r = evolve(
            *run_args(
                srv.base_url,
                tmp_path,
                "--llm-timeout",
                "1",
                "--parallel",
                "1",
                "--llm-parallel",
                "1",
                iterations=5,
            )
        )
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.splitlines()[0]
    progs = _programs(tmp_path, run_id)
    by_status = {p["status"] for p in progs}
    assert {"invalid_edit", "syntax_error"} <= by_status
    assert "invalid" in by_status or "runtime_error" in by_status  # wrong shape from priority()
    assert len([p for p in progs if p["iteration"] > 0]) == 5
    for p in progs:
        if p["status"] != "ok":
            assert p["score"] is None and p["artifacts_json"] != "{}"


def test_hostile_candidates_are_contained(tmp_path):
    replies = [block(code) for code in HOSTILE.values()] + [IMPROVED]
    with ScriptedLLM.from_list(replies, then=binpack_reply("worst_fit")) as srv:
        r = evolve(
            *run_args(
                srv.base_url,
                tmp_path,
                "--parallel",
                "2",
                "--llm-parallel",
                "1",
                iterations=len(replies),
            ),
            extra_env={"OPENAI_API_KEY": "sk-secret-do-not-leak"},
            timeout=400,
        )
    assert r.returncode == 0, r.stderr
    run_id = r.stdout.splitlines()[0]
    progs = {p["iteration"]: p for p in _programs(tmp_path, run_id)}
    names = list(HOSTILE)
    status = {names[i - 1]: progs[i]["status"] for i in range(1, len(names) + 1)}
    assert status["infinite_loop"] == "timeout"
    assert status["fork_bomb"] in ("runtime_error", "timeout")
    assert status["memory_bomb"] == "runtime_error"
    assert status["huge_output"] in ("timeout", "runtime_error")
    assert len(progs[names.index("huge_output") + 1]["artifacts_json"]) < 300_000
    # printing a score changes nothing: it is scored honestly like first fit
    assert status["fake_score"] in ("ok", "duplicate")
    fake = progs[names.index("fake_score") + 1]
    assert fake["score"] is None or fake["score"] < 0
    assert status["steal_key"] == "ok"  # the key was not in its environment
    assert "sk-secret" not in json.dumps(list(progs.values()))
    best = archive_json(tmp_path, "best", "--run", run_id)
    assert best["score"] > progs[0]["score"]


def test_budget_stops_the_run_cleanly(tmp_path):
    pricey = Reply(
        binpack_reply("worst_fit").content, prompt_tokens=400_000, completion_tokens=100_000
    )
    with ScriptedLLM.from_list([pricey]) as srv:
        r = evolve(
            "run",
            BINPACK,
            "--iterations",
            "20",
            "--api-base",
            srv.base_url,
            "--model",
            "gpt-4o",
            "--runs-dir",
            tmp_path,
            "--no-progress",
            "--budget-usd",
            "2.5",
            "--llm-parallel",
            "1",
            "--parallel",
            "1",
        )
        calls = srv.counters["chat"]
    assert r.returncode == 0, r.stderr
    run = archive_json(tmp_path, "runs")[0]
    assert run["status"] == "stopped" and "budget" in run["stop_reason"]
    assert calls == 2 and run["iterations_done"] == 2  # $2 per call: stops once $2.5 is reached


def test_openevolve_folder_runs_unchanged(tmp_path):
    from evolve.testing.binpack_edits import BINPACK_VARIANTS

    code = dict((n, c) for n, _, c in BINPACK_VARIANTS)["best_fit"]
    program = (OPENEVOLVE_FIXTURE / "initial_program.py").read_text()
    start, end = program.index("# EVOLVE-BLOCK-START"), program.index("# EVOLVE-BLOCK-END")
    full = program[:start] + "# EVOLVE-BLOCK-START\n" + code + program[end:]
    with ScriptedLLM.from_list([f"```python\n{full}```"]) as srv:
        r = evolve(
            "run",
            OPENEVOLVE_FIXTURE,
            "--api-base",
            srv.base_url,
            "--runs-dir",
            tmp_path,
            "--no-progress",
            "--iterations",
            "3",
        )
        assert srv.requests[0]["model"] == "scripted"  # from config.yaml
    assert r.returncode == 0, r.stderr
    best = archive_json(tmp_path, "best")
    assert best["problem"] == "openevolve_binpack" and best["iteration"] > 0
    assert best["metrics"]["combined_score"] == best["score"]


@pytest.mark.parametrize(
    "args, fragment",
    [
        (["run", "no/such/dir"], "no such problem folder"),
        (["run", str(BINPACK), "--iterations", "-3"], "--iterations"),
        (["run", str(BINPACK), "--parallel", "x"], "--parallel"),
        (["resume", "nope"], "no such run"),
        (["eval", str(BINPACK), "missing.py"], "missing.py"),
        (["eval", str(BINPACK), str(BINPACK / "seed.py"), "--split", "holdout"], "--split holdout"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, fragment):
    r = (
        evolve(*args, "--runs-dir", str(tmp_path))
        if args[0] in ("run", "resume")
        else evolve(*args)
    )
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert fragment in lines[-1], r.stderr
    assert "Traceback" not in r.stderr


def test_unreachable_endpoint_exits_2_before_the_run_starts(tmp_path):
    r = evolve(*run_args("http://127.0.0.1:9/v1", tmp_path, "--llm-retries", "1", iterations=3))
    assert r.returncode == 2
    assert "unreachable" in r.stderr.strip().splitlines()[-1]
    assert archive_json(tmp_path, "runs") == []  # the probe refused it: no run to hide


def test_eval_check_and_new(tmp_path):
    r = evolve("eval", BINPACK, BINPACK / "baselines" / "best_fit.py", "--split", "train", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["status"] == "ok" and set(out) >= {"score", "metrics", "artifacts", "status"}
    assert out["metrics"]["excess_pct"] > 0
    new = tmp_path / "my_sched"
    assert evolve("new", new).returncode == 0
    r = evolve("check", new)
    assert r.returncode == 0, r.stdout + r.stderr
    assert evolve("new", new).returncode == 2  # exists
    bad = new / "seed.py"
    bad.write_text(bad.read_text().replace("return [job_id", "return [job_id, 1/0"))
    assert evolve("check", new).returncode == 2


def test_a_reader_that_goes_away_never_ends_the_run(tmp_path):
    """`evolve run ... 2>&1 | head -3`: the pipe closes after three lines; the run goes on
    (it was recorded as failed, `SystemExit: 1`, from rich's broken-pipe exit)."""
    import shlex
    import subprocess
    import sys

    from evolve.testing.cli_helpers import ROOT, env

    with ScriptedLLM(lambda req: BEST_FIT) as srv:
        args = run_args(srv.base_url, tmp_path, "--tune-evals", "0", iterations=3)
        line = " ".join(shlex.quote(str(a)) for a in [sys.executable, "-m", "evolve.cli", *args])
        r = subprocess.run(["bash", "-c", line + " 2>&1 | head -3"], env=env(), cwd=ROOT,
                           capture_output=True, text=True, timeout=300)  # fmt: skip
    assert len(r.stdout.splitlines()) == 3, r.stdout
    (run,) = archive_json(tmp_path, "runs")
    assert run["status"] == "finished", run
