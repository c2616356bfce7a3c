"""A runs dir that cannot be used, an archive of another schema, and ids as people type them.

Every command that takes --runs-dir answers a fault with exit 2 and one stderr line naming
the path; an older archive is read as it is (looking never writes it) and migrated keeping
everything when a run opens it; a newer one is refused."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.archive import SCHEMA_VERSION, Archive, ProgramRow
from evolve.testing.cli_helpers import ROOT, archive_json, env, evolve
from evolve.testing.toy_problem import toy_problem

UNREACHABLE = "http://127.0.0.1:9/v1"


def commands(problem: Path) -> dict[str, list[str]]:
    """Every command that takes --runs-dir (the runs dir is appended)."""
    return {
        "run": [
            "run",
            str(problem),
            "--iterations",
            "1",
            "--model",
            "scripted",
            "--api-base",
            UNREACHABLE,
            "--sandbox",
            "local",
            "--no-progress",
        ],
        "resume": ["resume", "r", "--no-progress"],
        "runs": ["archive", "runs"],
        "best": ["archive", "best"],
        "show": ["archive", "show", "r:0"],
        "lineage": ["archive", "lineage", "r:0"],
        "diff": ["archive", "diff", "r:1"],
        "plot": ["archive", "plot", "r"],
    }


def populated(runs: Path) -> Path:
    a = Archive(runs)
    a.create_run("r", "toy", "/nowhere", {}, 1)
    a.insert_program(
        ProgramRow("r:0", "r", "toy", 0, 0, "ok", code="x = 0\n", score=1.0, kind="seed")
    )
    a.insert_program(
        ProgramRow("r:1", "r", "toy", 1, 0, "ok", code="x = 1\n", score=2.0, parent_id="r:0")
    )
    a.set_run_status("r", "finished")
    a.close()
    return runs


def assert_one_line(r: subprocess.CompletedProcess, *fragments: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    for f in fragments:
        assert f in lines[0], lines[0]
    return lines[0]


def cli(args: list[str], runs: Path, wrap: list[str] | None = None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "evolve.cli", *args, "--runs-dir", str(runs)]
    return subprocess.run(
        [*(wrap or []), *cmd], capture_output=True, text=True, timeout=120, env=env(), cwd=ROOT
    )


@pytest.fixture
def problem(tmp_path) -> Path:
    return toy_problem(tmp_path / "toy")


COMMANDS = list(commands(Path(".")))


@pytest.mark.parametrize("command", COMMANDS)
def test_runs_dir_that_is_a_file(tmp_path, problem, command):
    runs = tmp_path / "runs"
    runs.write_text("not a directory")
    assert_one_line(cli(commands(problem)[command], runs), str(runs), "not a directory")


@pytest.mark.parametrize("command", COMMANDS)
def test_corrupted_archive(tmp_path, problem, command):
    runs = populated(tmp_path / "runs")
    db = runs / "archive.db"
    db.write_bytes(b"this is no SQLite file, only bytes " * 200)
    assert_one_line(cli(commands(problem)[command], runs), str(db), "not a database")
    assert db.read_bytes().startswith(b"this is no SQLite")  # left as it was


@pytest.mark.parametrize("command", COMMANDS)
def test_archive_from_a_newer_evolve_is_refused_untouched(tmp_path, problem, command):
    runs = populated(tmp_path / "runs")
    c = sqlite3.connect(runs / "archive.db")
    c.execute(f"PRAGMA user_version={SCHEMA_VERSION + 3}")
    c.close()
    before = (runs / "archive.db").read_bytes()
    line = assert_one_line(cli(commands(problem)[command], runs), str(runs / "archive.db"))
    assert (
        f"newer evolve (schema {SCHEMA_VERSION + 3}; this one reads up to {SCHEMA_VERSION})" in line
    )
    assert (runs / "archive.db").read_bytes() == before


def _no_dac_override() -> list[str]:
    """Run as root without CAP_DAC_OVERRIDE: file permissions apply again (tests run as root)."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: a mode-0555 directory is writable to root")
    drop = "-dac_override,-dac_read_search"
    return ["setpriv", f"--bounding-set={drop}", f"--inh-caps={drop}"]


@pytest.mark.parametrize("command", COMMANDS)
def test_unwritable_runs_dir(tmp_path, problem, command):
    runs = populated(tmp_path / "runs")
    runs.chmod(0o555)
    try:
        r = cli(commands(problem)[command], runs, wrap=_no_dac_override())
    finally:
        runs.chmod(0o755)
    assert_one_line(r, str(runs), "permission denied")


def test_unwritable_parent_of_a_new_runs_dir(tmp_path, problem):
    parent = tmp_path / "locked"
    parent.mkdir(mode=0o555)
    try:
        r = cli(commands(problem)["run"], parent / "runs", wrap=_no_dac_override())
    finally:
        parent.chmod(0o755)
    assert_one_line(r, str(parent / "runs"), "Permission denied")


def _mount_namespace(setup: str) -> list[str]:
    """Run the command in a private mount namespace after `setup` (a shell line)."""
    probe = (
        subprocess.run(["unshare", "-m", "true"], capture_output=True)
        if shutil.which("unshare")
        else None
    )
    if probe is None or probe.returncode != 0:
        pytest.skip(
            "needs `unshare -m` (a private mount namespace) to mount a read-only or full file system"
        )
    return ["unshare", "-m", "sh", "-c", f'{setup} && exec "$@"', "sh"]


@pytest.mark.parametrize("command", COMMANDS)
def test_read_only_file_system(tmp_path, problem, command):
    runs = populated(tmp_path / "runs")
    wrap = _mount_namespace(f"mount --bind -o ro '{runs}' '{runs}'")
    assert_one_line(cli(commands(problem)[command], runs, wrap=wrap), str(runs), "read-only")
    assert sorted(p.name for p in runs.iterdir()) == ["archive.db"]  # nothing was written


@pytest.mark.parametrize("command", ["run", "resume", "runs", "show"])
def test_full_disk(tmp_path, problem, command):
    runs = tmp_path / "runs"
    runs.mkdir()
    archive = populated(tmp_path / "seeded") / "archive.db"
    fill = "head -c 10000000 /dev/zero > fill 2>/dev/null; true"
    wrap = _mount_namespace(
        f"mount -t tmpfs -o size=256k tmpfs '{runs}' && cp '{archive}' '{runs}'"
        f" && cd '{runs}' && {fill} && cd '{ROOT}'"
    )
    assert_one_line(cli(commands(problem)[command], runs, wrap=wrap), str(runs), "no space left")


# ---- schema versions -------------------------------------------------------------------

# The archive as the first release wrote it (schema 1, user_version 0).
SCHEMA_1 = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, problem TEXT NOT NULL, problem_dir TEXT NOT NULL,
    config_json TEXT NOT NULL, status TEXT NOT NULL, stop_reason TEXT,
    iterations_target INTEGER NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL);
CREATE TABLE programs (program_id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(run_id),
    problem TEXT NOT NULL, iteration INTEGER NOT NULL, island INTEGER NOT NULL, parent_id TEXT,
    second_parent_id TEXT, kind TEXT NOT NULL, edit_kind TEXT, model TEXT, code TEXT,
    code_hash TEXT, diff TEXT, status TEXT NOT NULL, score REAL, test_score REAL,
    scores_json TEXT NOT NULL DEFAULT '{}', metrics_json TEXT NOT NULL DEFAULT '{}',
    test_metrics_json TEXT NOT NULL DEFAULT '{}', artifacts_json TEXT NOT NULL DEFAULT '{}',
    features_json TEXT NOT NULL DEFAULT '{}', cell TEXT, eval_s REAL, llm_call_id INTEGER,
    created_at REAL NOT NULL, UNIQUE (run_id, iteration));
CREATE INDEX programs_problem_score ON programs(problem, score);
CREATE INDEX programs_run_hash ON programs(run_id, code_hash);
CREATE TABLE llm_calls (call_id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,
    iteration INTEGER NOT NULL, island INTEGER NOT NULL, parent_id TEXT, second_parent_id TEXT,
    edit_format TEXT NOT NULL, model TEXT NOT NULL, prompt_json TEXT NOT NULL, reply TEXT,
    error TEXT, prompt_tokens INTEGER NOT NULL DEFAULT 0, completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0, latency_s REAL NOT NULL DEFAULT 0, created_at REAL NOT NULL);
CREATE INDEX llm_calls_run_iter ON llm_calls(run_id, iteration);
CREATE TABLE migrations (run_id TEXT NOT NULL, program_id TEXT NOT NULL,
    to_island INTEGER NOT NULL, at_iteration INTEGER NOT NULL,
    PRIMARY KEY (run_id, program_id, to_island));
"""


def old_archive(runs: Path) -> Path:
    runs.mkdir()
    c = sqlite3.connect(runs / "archive.db")
    c.executescript(SCHEMA_1)
    for run_id, status in (("old-a", "finished"), ("old-b", "running")):
        c.execute(
            "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
            (run_id, "toy", "/nowhere", "{}", status, None, 2, 1.0, 2.0),
        )
        for it in range(3):
            c.execute(
                "INSERT INTO programs (program_id, run_id, problem, iteration, island, kind,"
                " code, status, score, metrics_json, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (
                    f"{run_id}:{it}",
                    run_id,
                    "toy",
                    it,
                    0,
                    "seed" if it == 0 else "mutation",
                    f"x = {it}\n",
                    "ok",
                    float(it),
                    json.dumps({"m": it}),
                    1.0 + it,
                ),
            )
        c.execute(
            "INSERT INTO llm_calls (run_id, iteration, island, edit_format, model, prompt_json,"
            " reply, cost_usd, created_at) VALUES (?,?,?,?,?,?,?,?,?)",
            (run_id, 1, 0, "diff", "m", "[]", "r", 0.5, 1.0),
        )
    c.commit()
    assert c.execute("PRAGMA user_version").fetchone()[0] == 0
    c.close()
    return runs


def test_an_old_archive_is_read_untouched_and_migrated_keeping_its_runs_and_programs(tmp_path):
    runs = old_archive(tmp_path / "runs")
    before = (runs / "archive.db").read_bytes()
    listed = {r["run_id"]: r for r in archive_json(runs, "runs")}
    assert set(listed) == {"old-a", "old-b"}
    assert listed["old-a"]["status"] == "finished" and listed["old-a"]["iterations_done"] == 2
    assert listed["old-a"]["cost_usd"] == 0.5 and listed["old-a"]["best_score"] == 2.0
    # a run an old controller left `running` has no live owner: it shows as interrupted
    assert listed["old-b"]["status"] == "interrupted"
    shown = archive_json(runs, "show", "old-a:2")
    assert shown["code"] == "x = 2\n" and shown["metrics"] == {"m": 2}
    assert archive_json(runs, "best", "--run", "old-a")["program_id"] == "old-a:2"
    assert evolve("archive", "lineage", "old-a:2", "--runs-dir", runs).returncode == 0
    assert (runs / "archive.db").read_bytes() == before  # looking never writes, nor migrates
    Archive(runs).close()  # what `evolve run` and `resume` open: it migrates
    c = sqlite3.connect(runs / "archive.db")
    assert c.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    cols = {r[1] for r in c.execute("PRAGMA table_info(runs)")}
    assert {"owner_pid", "owner_host", "data_seed"} <= cols
    # runs from before private data seeds keep scoring on the public data
    assert c.execute("SELECT COUNT(*) FROM runs WHERE data_seed IS NOT NULL").fetchone()[0] == 0
    assert c.execute("SELECT COUNT(*) FROM programs").fetchone()[0] == 6
    assert c.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    c.close()
    # opening it again is a no-op
    assert archive_json(runs, "runs") == list(listed.values())


def test_a_migration_that_cannot_finish_leaves_the_old_archive_as_it_was(tmp_path):
    runs = old_archive(tmp_path / "runs")
    c = sqlite3.connect(runs / "archive.db")  # a column the migration is about to add
    c.execute("ALTER TABLE runs ADD COLUMN owner_host TEXT")
    c.commit()
    c.close()
    r = evolve("resume", "old-a", "--runs-dir", runs, "--no-progress")  # opens it to write
    assert_one_line(r, str(runs / "archive.db"), "owner_host")
    c = sqlite3.connect(runs / "archive.db")
    assert c.execute("PRAGMA user_version").fetchone()[0] == 0
    assert "owner_pid" not in {r[1] for r in c.execute("PRAGMA table_info(runs)")}
    c.close()


# ---- ids as people type them ------------------------------------------------------------


@pytest.fixture
def many(tmp_path) -> Path:
    runs = tmp_path / "runs"
    a = Archive(runs)
    for run_id, problem in (("alpha-1", "p"), ("alpha-2", "p"), ("beta_x", "q"), ("betaxx", "q")):
        a.create_run(run_id, problem, "/nowhere", {}, 13)
        for it in range(13):
            a.insert_program(
                ProgramRow(
                    f"{run_id}:{it}",
                    run_id,
                    problem,
                    it,
                    0,
                    "ok",
                    code=f"# {run_id} {it}\n",
                    score=float(it % 5) + (10 if run_id == "alpha-2" else 0),
                )
            )
        a.set_run_status(run_id, "finished")
    a.close()
    return runs


def test_show_is_exact_not_a_prefix_or_a_pattern(many):
    assert archive_json(many, "show", "alpha-1:1")["program_id"] == "alpha-1:1"  # not alpha-1:12
    assert archive_json(many, "show", "alpha-1:12")["iteration"] == 12
    r = evolve("archive", "show", "alpha-1:99", "--runs-dir", many)
    assert_one_line(r, "alpha-1:99", "no such program")
    for pattern in ("alpha-_:1", "alpha%:1", "b_ta_x:3"):  # SQL LIKE wildcards are just characters
        r = evolve("archive", "show", pattern, "--runs-dir", many)
        assert r.returncode == 2 and "Traceback" not in r.stderr, (pattern, r.stderr)
    assert archive_json(many, "show", "beta_x:3")["run_id"] == "beta_x"


def test_a_unique_prefix_is_accepted_and_an_ambiguous_one_lists_candidates(many):
    assert archive_json(many, "show", "beta_:3")["program_id"] == "beta_x:3"  # unique run prefix
    assert archive_json(many, "lineage", "betax:0")[0]["program_id"] == "betaxx:0"
    r = evolve("archive", "show", "alpha:3", "--runs-dir", many)
    line = assert_one_line(r, "alpha", "ambiguous")
    assert "alpha-1" in line and "alpha-2" in line
    r = evolve("archive", "show", "alpha-1:", "--runs-dir", many)  # 13 programs begin so
    line = assert_one_line(r, "ambiguous")
    assert "alpha-1:0" in line and "..." in line
    assert archive_json(many, "best", "--run", "alpha-2")["run_id"] == "alpha-2"
    assert archive_json(many, "best", "--run", "beta_")["run_id"] == "beta_x"
    assert_one_line(evolve("archive", "best", "--run", "alpha", "--runs-dir", many), "ambiguous")
    assert_one_line(evolve("archive", "plot", "zzz", "--runs-dir", many), "zzz", "no such run")


def test_best_without_a_problem_is_one_program_per_problem(many):
    r = evolve("archive", "best", "--runs-dir", many, extra_env={"COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    assert "alpha-2:4" in r.stdout and "betaxx:4" not in r.stdout
    rows = [line.split() for line in r.stdout.splitlines()]
    # no leaderboard score in this hand-made archive: unranked, its own run's score beside
    assert ["p", "alpha-2:4", "unranked", "-", "14"] == rows[[x[:1] for x in rows].index(["p"])][:5]
    assert any(x[:1] == ["q"] and x[1] in ("beta_x:4", "betaxx:4") for x in rows)
    j = evolve("archive", "best", "--json", "--runs-dir", many)
    per_problem = [json.loads(line) for line in j.stdout.splitlines()]
    assert [(b["problem"], b["score"]) for b in per_problem] == [("p", 14.0), ("q", 4.0)]
    assert archive_json(many, "best", "--problem", "q")["problem"] == "q"
    assert_one_line(evolve("archive", "best", "--code", "--runs-dir", many), "--problem")


def test_archive_runs_never_cuts_a_run_id(tmp_path):
    runs = tmp_path / "runs"
    a = Archive(runs)
    ids = [
        "spot_scheduling_multi_region-20250101-120000-ab12",
        "binpack-20250101-120000-cd34",
    ]
    for run_id in ids:
        a.create_run(run_id, run_id.split("-")[0], "/nowhere", {}, 50)
        a.set_run_status(run_id, "stopped", "budget reached: spent $0.50 of a $0.50 budget")
    a.close()
    for cols in ("80", "40"):  # as on a terminal (rich's TTY_COMPATIBLE), without colours
        terminal = {"COLUMNS": cols, "TTY_COMPATIBLE": "1", "NO_COLOR": "1"}
        r = evolve("archive", "runs", "--runs-dir", runs, extra_env=terminal)
        assert r.returncode == 0, r.stderr
        lines = re.sub(r"\x1b\[[0-9;]*m", "", r.stdout).splitlines()
        for run_id in ids:  # whole, and one line a run: the status cut with an ellipsis
            (line,) = [x for x in lines if run_id in x]
            assert "stopped (b" in line and "…" in line, r.stdout
        if cols == "80":  # the optional columns (seed, $, problem) left out to fit
            assert max(len(x) for x in lines) <= 80 and "iters" in lines[0], r.stdout
    r = evolve("archive", "runs", "--wide", "--runs-dir", runs, extra_env={"COLUMNS": "80"})
    assert any(
        ids[0] in line and "budget reached: spent $0.50 of a $0.50 budget" in line
        for line in r.stdout.splitlines()
    )
