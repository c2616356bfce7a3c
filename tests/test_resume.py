"""kill -9 of the controller at any moment: resume loses nothing and repeats nothing."""

from __future__ import annotations

import collections
import hashlib
import itertools
import signal
import sqlite3
import subprocess
import threading
import time
from pathlib import Path

import pytest

from evolve.testing.cli_helpers import archive_json, evolve, popen, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from tests.support.data_seeds import leaderboard_draw, leaderboard_scored

EVALUATOR = """
import hashlib, os, time, uuid

from evaluators import kit

def evaluate(program_path, split):
    code = open(program_path).read()
    h = hashlib.sha256(code.encode()).hexdigest()[:16]
    marks = os.environ["EVOLVE_DATA_DIR"]  # one file per mark: sandbox slots may run as other users
    # the candidate runs in the kit's worker: an evaluator that imported it here would be
    # Landlocked with it in the fallback, and could not write its marks
    f = kit.load(program_path, "f")
    time.sleep(0.15)
    value = float(f(3))
    f.close()
    data = kit.seed(1)  # which data: the run's own, or the leaderboard's (evolve/pipeline/leaderboard.py)
    open(os.path.join(marks, f"end-{h}-{data}-{uuid.uuid4().hex}"), "w").close()
    return {"outputs": {"value": value}}

def score(outputs, split):
    return {"score": -abs(outputs["value"] - 10.0), "metrics": {"value": outputs["value"]}}
"""

SEED = "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"


def make_problem(root: Path, timeout_s: float = 20) -> Path:
    root.mkdir()
    (root / "problem.toml").write_text(
        f'[problem]\nname = "toy"\nentry = "seed.py"\n[evaluation]\ntimeout_s = {timeout_s}\nsplits = ["train"]\n'
        # a few tuned children per program (slots of their own): x + k climbs on every one
        "[search]\ntune_evals = 2\n"
    )
    (root / "seed.py").write_text(SEED)
    (root / "evaluator.py").write_text(EVALUATOR)
    return root


def responder():
    counter = itertools.count(1)
    lock = threading.Lock()

    def answer(request: dict) -> Reply:
        with lock:
            k = next(counter)
        body = f"def f(x):\n    return x + {k % 9} * 0.5 + {k} * 1e-6\n"
        return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```", delay_s=0.1)

    return answer


def final_programs(runs_dir: Path, run_id: str) -> dict[int, tuple]:
    db = sqlite3.connect(runs_dir / "archive.db")
    try:
        rows = db.execute(
            "SELECT iteration, status, score, eval_s, code_hash FROM programs WHERE run_id=? AND status!='pending'",
            (run_id,),
        ).fetchall()
    except sqlite3.OperationalError:  # the controller has not created the schema yet
        rows = []
    finally:
        db.close()
    return {r[0]: r for r in rows}


@pytest.fixture
def tmp_path(walkable_tmp: Path) -> Path:
    """The evaluator writes marks into its data folder, which the fallback's slot uid reaches
    only through searchable parents (conftest.walkable_tmp)."""
    return walkable_tmp


def test_resume_after_sigkill_matches_an_uninterrupted_run(tmp_path):
    problem = make_problem(tmp_path / "toy")
    data, ref_data = tmp_path / "data", tmp_path / "ref_data"
    for d in (data, ref_data):  # the sandbox may run candidates as another user
        d.mkdir()
        d.chmod(0o777)
    # the evaluator writes marks into the data dir: only the local sandbox without its
    # namespaces allows that (isolation would rightly make the folder read-only)
    env = {"EVOLVE_DATA_DIR": str(data), "EVOLVE_LOCAL_ISOLATION": "off"}
    iterations = 14
    args = [
        "--sandbox",
        "local",
        "--parallel",
        "2",
        "--llm-parallel",
        "2",
        "--migration-interval",
        "4",
    ]

    with ScriptedLLM(responder()) as srv:
        ref = evolve(
            *run_args(
                srv.base_url, tmp_path / "ref", *args, problem=problem, iterations=iterations
            ),
            extra_env={"EVOLVE_DATA_DIR": str(ref_data), "EVOLVE_LOCAL_ISOLATION": "off"},
        )
        assert ref.returncode == 0, ref.stderr
        ref_run = archive_json(tmp_path / "ref", "runs")[0]

        runs = tmp_path / "killed"
        proc = popen(
            *run_args(
                srv.base_url, runs, *args, "--run-id", "k", problem=problem, iterations=iterations
            ),
            extra_env=env,
        )
        kills = 0
        before: dict[int, tuple] = {}
        snapshots = []
        for wanted in (3, 8):  # kill twice, at different depths of the run
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and proc.poll() is None:
                if (runs / "archive.db").exists() and len(final_programs(runs, "k")) >= wanted:
                    break
                time.sleep(0.02)
            assert proc.poll() is None, proc.stderr.read()
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            before.update(final_programs(runs, "k"))
            snapshots.append(
                (final_programs(runs, "k"), end_marks(data), leaderboard_scored(runs, "k"))
            )
            if wanted == 3:
                proc = popen("resume", "k", "--runs-dir", runs, "--no-progress", extra_env=env)
        resumed = evolve("resume", "k", "--runs-dir", runs, "--no-progress", extra_env=env)
        assert resumed.returncode == 0, resumed.stderr

    after = final_programs(runs, "k")
    run = archive_json(runs, "runs")[0]
    assert kills == 2
    assert run["status"] == "finished" == ref_run["status"]
    assert run["iterations_done"] == ref_run["iterations_done"] == iterations
    # every slot filled exactly once: the model's `iterations` and the tuned children's
    assert sorted(after) == list(range(len(after))) and len(after) > iterations
    for it, row in before.items():  # nothing finished before a kill changed afterwards
        assert after[it] == row
    db = sqlite3.connect(runs / "archive.db")
    per_iteration = collections.Counter(
        r[0]
        for r in db.execute(
            "SELECT iteration FROM llm_calls WHERE run_id='k' AND reply IS NOT NULL"
        )
    )
    db.close()
    assert max(per_iteration.values()) == 1  # a stored reply is never requested again
    # an evaluation finished and recorded before a kill never ran again on the same data (every
    # reply's code is unique; a new best is scored once more, on the leaderboard's data, and
    # that scoring is recorded once it is done: one the kill cut short is measured again)
    ends, board = end_marks(data), leaderboard_draw(runs, "toy")
    for final, ends_then, scored in snapshots:
        for it, row in final.items():
            if it > 0 and row[1] in ("ok", "runtime_error", "invalid"):
                h = hashlib.sha256(_code(runs, "k", it).encode()).hexdigest()[:16]
                then = {key: n for key, n in ends_then.items()
                        if key[0] == h and (key[1] != board or it in scored)}  # fmt: skip
                assert then and all(ends[key] == n for key, n in then.items()), (it, row)


def end_marks(data: Path) -> collections.Counter:
    """Finished evaluations by (code hash, the data they drew)."""
    return collections.Counter(tuple(f.name.split("-")[1:3]) for f in data.glob("end-*"))


def _code(runs: Path, run_id: str, it: int) -> str:
    db = sqlite3.connect(runs / "archive.db")
    (code,) = db.execute(
        "SELECT code FROM programs WHERE run_id=? AND iteration=?", (run_id, it)
    ).fetchone()
    db.close()
    return code


# Ctrl-C and SIGTERM, each at a different moment of the run, under load (cpu_hog): the
# failure these guard against showed only on a busy machine. `ignored`: the run starts with
# SIGINT ignored, as a shell starts a background job (`evolve run ... &` in a script, or a
# test suite run that way): Ctrl-C (or `kill -INT`) must stop it all the same.
CTRL_C_CASES = [
    ("launch", signal.SIGINT, False),
    ("launch", signal.SIGINT, True),
    ("launch", signal.SIGTERM, False),
    ("llm_call", signal.SIGINT, False),
    ("archive_write", signal.SIGINT, False),
]


@pytest.mark.parametrize(
    "moment, sig, ignored",
    CTRL_C_CASES,
    ids=[f"{m}-{s.name}{'-inherited_ignored' if i else ''}" for m, s, i in CTRL_C_CASES],
)
def test_ctrl_c_and_sigterm_stop_cleanly_and_resume(tmp_path, cpu_hog, moment, sig, ignored):
    problem = make_problem(tmp_path / "toy", timeout_s=90)  # far longer than a clean stop may take
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    env = {"EVOLVE_DATA_DIR": str(data), "EVOLVE_LOCAL_ISOLATION": "off"}
    runs, run_id = tmp_path / "runs", "r"
    db = runs / "archive.db"
    held = ArchiveHold(db)
    asked = threading.Event()
    release = threading.Event()  # a held LLM reply: never sent while the run could wait for it
    normal = responder()

    def answer(request: dict) -> Reply:
        first = not asked.is_set()  # (one request at a time: --llm-parallel 1)
        asked.set()
        if moment == "launch" and first:
            return Reply(f"```python\n# EVOLVE-BLOCK-START\n{SLEEPER}\n# EVOLVE-BLOCK-END\n```")
        if moment == "llm_call":
            release.wait()
        if moment == "archive_write":
            held.take()  # the controller's next write (this reply's) waits for the test
        return normal(request)

    with ScriptedLLM(answer) as srv:
        proc = popen(
            *run_args(
                srv.base_url,
                runs,
                "--sandbox",
                "local",
                "--run-id",
                run_id,
                "--llm-parallel",
                "1",
                problem=problem,
                iterations=4,
            ),
            extra_env=env,
            ignore_sigint=ignored,
        )
        err = StderrLines(proc)
        try:
            sleeping: list[int] = []
            if moment == "launch":  # until the sleeping candidate is on its way
                sleeping = wait_until(
                    lambda: _pending_sleepers(db, run_id) if db.exists() else [],
                    proc,
                    err,
                    "the sleeping candidate never became pending",
                )
            else:
                wait_until(asked.is_set, proc, err, "the run never asked the LLM")
            proc.send_signal(sig)
            if moment == "archive_write":  # the signal is heard while the write waits
                assert err.wait_for("stopping cleanly", GUARD_S), err.text()
                held.release()
            proc.wait(timeout=GUARD_S)  # a guard against hanging the suite only
        finally:
            release.set()
            held.release()
            proc.kill()
        assert proc.returncode == 130, err.text()
        run = [r for r in archive_json(runs, "runs") if r["run_id"] == run_id][0]
        assert run["status"] == "stopped" and run["stop_reason"] == "interrupted", err.text()
        # the run did not wait for the evaluation's deadline: had it, the sleeper would
        # be recorded as a timeout; stopped, it is still pending for `resume`
        assert set(sleeping) <= set(_pending_sleepers(db, run_id)), _statuses(db, run_id)
        srv.responder = responder()
        toml = problem / "problem.toml"  # the resumed run re-evaluates the sleeper: keep that short
        toml.write_text(toml.read_text().replace("timeout_s = 90", "timeout_s = 3"))
        resumed = evolve(
            "resume", run_id, "--runs-dir", runs, "--no-progress", extra_env=env, timeout=GUARD_S
        )
        assert resumed.returncode == 0, resumed.stderr
        run = [r for r in archive_json(runs, "runs") if r["run_id"] == run_id][0]
        assert run["status"] == "finished" and run["iterations_done"] == 4


def test_a_second_ctrl_c_stops_at_once_and_the_run_resumes(tmp_path, cpu_hog):
    """The first Ctrl-C's clean stop cannot end (the archive is held: its last write waits);
    the second stops the run without waiting for it, and `resume` continues the run."""
    problem = make_problem(tmp_path / "toy")
    data = tmp_path / "data"
    data.mkdir()
    data.chmod(0o777)
    env = {"EVOLVE_DATA_DIR": str(data), "EVOLVE_LOCAL_ISOLATION": "off"}
    runs = tmp_path / "runs"
    held = ArchiveHold(runs / "archive.db")
    normal = responder()

    def answer(request: dict) -> Reply:
        held.take()
        return normal(request)

    with ScriptedLLM(answer) as srv:
        proc = popen(
            *run_args(
                srv.base_url,
                runs,
                "--sandbox",
                "local",
                "--run-id",
                "f",
                problem=problem,
                iterations=3,
            ),
            extra_env=env,
        )
        err = StderrLines(proc)
        try:
            wait_until(lambda: held.taken, proc, err, "the run never asked the LLM")
            proc.send_signal(signal.SIGINT)
            assert err.wait_for("stopping cleanly", GUARD_S), err.text()
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=GUARD_S)  # with the archive still held: nothing waited for it
        finally:
            held.release()
            proc.kill()
        assert proc.returncode == 130, err.text()
        assert "stopping at once" in err.text() and "evolve resume f" in err.text()
        run = archive_json(runs, "runs")[0]
        assert run["status"] in ("stopped", "interrupted"), run  # never `running`
        srv.responder = responder()
        resumed = evolve(
            "resume", "f", "--runs-dir", runs, "--no-progress", extra_env=env, timeout=GUARD_S
        )
        assert resumed.returncode == 0, resumed.stderr
        run = archive_json(runs, "runs")[0]
        assert run["status"] == "finished" and run["iterations_done"] == 3


GUARD_S = 120  # a guard against hanging the suite on a loaded machine, never a timing
SLEEPER = "def f(x):\n    import time\n    time.sleep(120)\n    return x"


class StderrLines:
    """A process's stderr, read as it comes (a test waits for a line, then acts)."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[str] = []
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, args=(proc.stderr,), daemon=True)
        self.reader.start()

    def _read(self, stream) -> None:
        for line in stream:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_for(self, text: str, guard_s: float) -> bool:
        end = time.monotonic() + guard_s
        with self.cond:
            while not any(text in line for line in self.lines):
                if time.monotonic() >= end or not self.reader.is_alive():
                    return False
                self.cond.wait(0.2)
        return True

    def text(self) -> str:
        self.reader.join(timeout=5)
        with self.cond:
            return "".join(self.lines)


def wait_until(cond, proc: subprocess.Popen, err: StderrLines, what: str):
    end = time.monotonic() + GUARD_S  # a guard: under load the start may take long
    while True:
        got = cond()
        if got:
            return got
        assert proc.poll() is None, err.text()
        assert time.monotonic() < end, what
        time.sleep(0.05)


class ArchiveHold:
    """A write transaction on the archive from outside, as another writer would hold it:
    the controller's writes wait (its busy timeout) until release()."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None
        self.lock = threading.Lock()
        self.taken = False

    def take(self) -> None:
        with self.lock:
            if self.db is None and not self.taken:
                self.db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
                self.db.execute("BEGIN IMMEDIATE")
                self.taken = True

    def release(self) -> None:
        with self.lock:
            if self.db is not None:
                self.db.execute("ROLLBACK")
                self.db.close()
                self.db = None


def _pending_sleepers(db: Path, run_id: str) -> list[int]:
    """Iterations of the candidate that sleeps for 120 s, while pending."""
    c = sqlite3.connect(db)
    try:
        rows = c.execute(
            "SELECT iteration FROM programs WHERE run_id=? AND status='pending' AND code LIKE '%time.sleep(120)%'",
            (run_id,),
        ).fetchall()
    except sqlite3.OperationalError:  # the schema is being created
        return []
    finally:
        c.close()
    return [r[0] for r in rows]


def _statuses(db: Path, run_id: str) -> dict[int, str]:
    c = sqlite3.connect(db)
    try:
        return dict(
            c.execute("SELECT iteration, status FROM programs WHERE run_id=?", (run_id,)).fetchall()
        )
    finally:
        c.close()
