"""A run is owned by one live controller: others are refused, a dead owner's run resumes."""

from __future__ import annotations

import json
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from evolve.testing.cli_helpers import archive_json, evolve, popen, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem


class Gate:
    """A responder whose replies wait until the gate is open: while it is shut, the
    controller is alive and busy (waiting on its LLM), for as long as the test needs."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.count = 0
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> Reply:
        self.open.wait(timeout=180)
        with self.lock:
            self.count += 1
            k = self.count
        body = f"def f(x):\n    return x + {k}\n"
        return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


def _row(runs: Path, run_id: str) -> dict | None:
    db = runs / "archive.db"
    if not db.exists():
        return None
    c = sqlite3.connect(db)
    c.row_factory = sqlite3.Row
    try:
        r = c.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        seed = c.execute(
            "SELECT 1 FROM programs WHERE run_id=? AND iteration=0", (run_id,)
        ).fetchone()
        return {**dict(r), "seeded": seed is not None} if r else None
    except sqlite3.OperationalError:  # the schema is being created
        return None
    finally:
        c.close()


def _wait_owned(runs: Path, run_id: str, proc: subprocess.Popen) -> dict:
    """Until `proc` owns the run and has evaluated the seed (so it waits on the LLM)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        row = _row(runs, run_id)
        if row and row["status"] == "running" and row["owner_pid"] == proc.pid and row["seeded"]:
            return row
        time.sleep(0.05)
    raise AssertionError("the controller never took ownership")


def _status(runs: Path, run_id: str) -> dict:
    return next(r for r in archive_json(runs, "runs") if r["run_id"] == run_id)


def test_resume_of_a_live_run_is_refused_and_a_dead_owners_run_is_taken_over(tmp_path):
    problem = toy_problem(tmp_path / "toy", timeout_s=20)
    runs = tmp_path / "runs"
    gate = Gate()
    args = ("--sandbox", "local", "--parallel", "1", "--llm-parallel", "1")
    with ScriptedLLM(gate) as srv:
        first = popen(
            *run_args(srv.base_url, runs, *args, "--run-id", "own", problem=problem, iterations=4)
        )
        row = _wait_owned(runs, "own", first)
        assert row["owner_host"] == socket.gethostname()

        # a second controller is refused: exit 2, one line naming the owner
        r = evolve("resume", "own", "--runs-dir", runs, "--no-progress")
        assert r.returncode == 2, r.stderr
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
        assert f"pid {first.pid}" in lines[0] and socket.gethostname() in lines[0]
        # nor can a new run take its id
        r = evolve(*run_args(srv.base_url, runs, *args, "--run-id", "own", problem=problem))
        assert r.returncode == 2 and f"pid {first.pid}" in r.stderr
        assert _status(runs, "own")["status"] == "running"

        first.send_signal(signal.SIGKILL)  # no chance to record anything
        first.communicate()
        assert _row(runs, "own")["status"] == "running"  # what the row says ...
        run = _status(runs, "own")  # ... and what the archive shows
        assert run["status"] == "interrupted" and f"pid {first.pid}" in run["stop_reason"]
        table = evolve("archive", "runs", "--runs-dir", runs, extra_env={"COLUMNS": "80"})
        assert table.returncode == 0 and "interrupted" in table.stdout

        # two controllers resume the dead owner's run: one takes it over, the other is refused
        second = popen("resume", "own", "--runs-dir", runs, "--no-progress")
        _wait_owned(runs, "own", second)
        r = evolve("resume", "own", "--runs-dir", runs, "--no-progress")
        assert r.returncode == 2 and f"pid {second.pid}" in r.stderr, r.stderr
        assert "IntegrityError" not in r.stderr
        gate.open.set()
        out, err = second.communicate(timeout=200)
        assert second.returncode == 0, err
    run = _status(runs, "own")
    assert run["status"] == "finished" and run["iterations_done"] == 4
    assert run["owner_pid"] == second.pid


@contextmanager
def _finished_run(tmp_path: Path, runs: Path, run_id: str, iterations: int) -> Iterator[None]:
    """A run of the toy problem that finished; the scripted server still answers inside."""
    gate = Gate()
    gate.open.set()
    with ScriptedLLM(gate) as srv:
        r = evolve(
            *run_args(
                srv.base_url,
                runs,
                "--sandbox",
                "local",
                "--run-id",
                run_id,
                problem=toy_problem(tmp_path / "toy", timeout_s=20),
                iterations=iterations,
            )
        )
        assert r.returncode == 0, r.stderr
        yield


def test_a_finished_run_resumes_with_more_iterations_and_leaves_no_lock_behind(tmp_path):
    runs = tmp_path / "runs"
    with _finished_run(tmp_path, runs, "x", iterations=2):
        r = evolve("resume", "x", "--iterations", "3", "--runs-dir", runs, "--no-progress")
        assert r.returncode == 0, r.stderr
    run = _status(runs, "x")
    assert run["status"] == "finished" and run["iterations_done"] == 3


@pytest.mark.parametrize(
    "raised, status",
    [
        (RuntimeError("boom"), "failed"),
        (KeyboardInterrupt(), "stopped"),
        (sqlite3.OperationalError("database or disk is full"), "failed"),
    ],
)
def test_an_error_after_the_run_row_exists_never_leaves_it_running(
    tmp_path, monkeypatch, raised, status
):
    """Every way out of the controller (a bug, Ctrl-C, the archive failing) ends the run."""
    import evolve.pipeline.runner as runner
    from evolve.archive import Archive
    from evolve.cli import main

    def explode(*args, **kwargs):
        raise raised

    monkeypatch.setattr(runner, "_execute_with", explode)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # no local model
    problem = toy_problem(tmp_path / "toy", timeout_s=20)
    with ScriptedLLM() as llm:  # the endpoint is up: the run row is written
        code = main(
            [
                "run",
                str(problem),
                "--runs-dir",
                str(tmp_path / "runs"),
                "--run-id",
                "e",
                "--api-base",
                llm.base_url,
                "--model",
                "scripted",
                "--no-progress",
                "--sandbox",
                "local",
            ]
        )
    assert code == (130 if status == "stopped" else 1 if isinstance(raised, RuntimeError) else 2)
    a = Archive(tmp_path / "runs")
    run = a.get_run("e")
    assert run is not None and run["status"] == status, run
    assert not a.owner_alive("e")  # the lock went with the command
    a.close()


def test_archive_runs_json_reports_the_owner(tmp_path):
    runs = tmp_path / "runs"
    with _finished_run(tmp_path, runs, "j", iterations=1):
        pass
    run = _status(runs, "j")
    assert run["status"] == "finished"
    assert run["owner_host"] == socket.gethostname() and isinstance(run["owner_pid"], int)
    assert json.loads(json.dumps(run)) == run


def test_a_live_run_whose_locks_folder_was_deleted_is_still_its_owners(tmp_path):
    """Deleting runs/.locks under a live controller: a second controller used to lock a new
    file of the same name and run the same iterations (UNIQUE constraint failed: programs.
    run_id, programs.iteration). It is refused, the run shows as running, and once the
    owner is done the run resumes as any other."""
    import shutil

    problem = toy_problem(tmp_path / "toy", timeout_s=20)
    runs = tmp_path / "runs"
    gate = Gate()
    args = ("--sandbox", "local", "--parallel", "1", "--llm-parallel", "1")
    with ScriptedLLM(gate) as srv:
        first = popen(
            *run_args(srv.base_url, runs, *args, "--run-id", "gone", problem=problem, iterations=3)
        )
        _wait_owned(runs, "gone", first)
        shutil.rmtree(runs / ".locks")
        r = evolve("resume", "gone", "--runs-dir", runs, "--no-progress")
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        (line,) = r.stderr.strip().splitlines()
        assert f"pid {first.pid}" in line and "was removed" in line, line
        assert _status(runs, "gone")["status"] == "running"  # not shown as interrupted
        gate.open.set()
        out, err = first.communicate(timeout=200)
        assert first.returncode == 0, err
        r = evolve("resume", "gone", "--iterations", "4", "--runs-dir", runs, "--no-progress")
        assert r.returncode == 0 and "UNIQUE" not in r.stderr, r.stderr
    run = _status(runs, "gone")
    assert run["status"] == "finished" and run["iterations_done"] == 4
