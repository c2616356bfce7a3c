"""A run of a program of several files, end to end with the scripted model: killed with
SIGKILL mid-run and resumed, it loses and repeats nothing, the archive holds each tree by its
files (each text once), and `archive checkout` of its best gives a folder that `evolve eval`
scores exactly as the run did."""

from __future__ import annotations

import itertools
import json
import signal
import sqlite3
import threading
import time
from pathlib import Path

from evaluators import tree
from evolve.archive import ArchiveReader
from evolve.testing.cli_helpers import ROOT, archive_json, evolve, popen, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM

PROBLEM = ROOT / "tests" / "fixtures" / "tree_policy"
PICK = """def choose(ranked, capacity):
    taken, used = [], 0
    for value, size in ranked:
        if used + size <= capacity and size >= {floor}:
            taken.append((value, size))
            used += size
    return taken
"""


def responder():
    """Each reply changes one file: the ranking's block or the whole picking file."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def answer(request: dict) -> Reply:
        with lock:
            k = next(counter)
        if k % 3:
            body = (
                "def weight(item):\n    value, size = item\n"
                f"    return value - {k % 7 * 0.125 + k * 1e-6} * size\n"
            )
            text = (
                f"policy/rank.py\n```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```\n"
            )
        else:
            text = f"policy/pick.py\n```python\n{PICK.format(floor=k % 4)}```\n"
        return Reply(text, delay_s=0.1)

    return answer


def finished(runs: Path, run_id: str) -> dict[int, tuple]:
    try:
        db = sqlite3.connect(runs / "archive.db")
        rows = db.execute(
            "SELECT iteration, status, score, code_hash FROM programs"
            " WHERE run_id=? AND status!='pending'",
            (run_id,),
        ).fetchall()
        db.close()
    except sqlite3.OperationalError:  # not created yet
        rows = []
    return {r[0]: r for r in rows}


def test_a_tree_run_killed_and_resumed_is_exact_and_stored_by_its_files(tmp_path):
    runs = tmp_path / "runs"
    args = ["--sandbox", "local", "--edit-format", "block", "--run-id", "tr", "--tune-evals", "0"]
    with ScriptedLLM(responder()) as srv:
        proc = popen(*run_args(srv.base_url, runs, *args, problem=PROBLEM, iterations=8))
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None:
            if (runs / "archive.db").exists() and len(finished(runs, "tr")) >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = finished(runs, "tr")
        resumed = evolve("resume", "tr", "--runs-dir", runs, "--no-progress", timeout=600)
        assert resumed.returncode == 0, resumed.stderr

    run = archive_json(runs, "runs")[0]
    assert run["status"] == "finished" and run["iterations_done"] == 8
    after = finished(runs, "tr")
    assert sorted(after) == list(range(len(after)))  # every slot filled once
    for it, row in before.items():  # nothing finished before the kill changed
        assert after[it] == row
    db = sqlite3.connect(runs / "archive.db")
    answered = [i for (i,) in db.execute("SELECT iteration FROM llm_calls WHERE reply IS NOT NULL")]
    assert len(answered) == len(set(answered))  # a stored reply is never asked for again
    # every tree is stored by its files: no whole text in a row, each text once
    rows = db.execute("SELECT code, code_files FROM programs WHERE code_files > 0").fetchall()
    assert len(rows) >= 4 and all(code is None and n == 3 for code, n in rows)
    blobs = db.execute("SELECT COUNT(*) FROM blobs").fetchone()[0]
    assert blobs < 2 * len(rows)  # a child adds the one file it changed, never the other two
    db.close()
    reader = ArchiveReader(runs)
    codes = [p.code for p in reader.programs("tr", code=True) if p.code is not None]
    assert all(tree.is_tree(c) for c in codes) and len(set(codes)) >= 4
    assert list(tree.decode(codes[0], "")) == [
        "policy/rank.py",
        "policy/pick.py",
        "policy/__init__.py",
    ]

    # the best, checked out, scores as the run scored it (the run's private data seed)
    best = archive_json(runs, "best", "--run", "tr")
    assert best["files"] == tree.decode(best["code"], "")
    out = tmp_path / "best"
    co = evolve("archive", "checkout", best["program_id"], out, "--runs-dir", runs)
    assert co.returncode == 0, co.stderr
    assert {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()} == set(best["files"])
    seed = str(run["data_seed"])
    ev = evolve("eval", PROBLEM, out, "--json", "--sandbox", "local", "--data-seed", seed)
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["score"] == best["score"]
