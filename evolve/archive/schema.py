"""The archive's tables, their version, and how an older archive is brought up to date.

The version is `PRAGMA user_version`. Creating or migrating happens inside the caller's
transaction, which also sets user_version: a crash mid-way leaves the old archive intact.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from evolve.archive.faults import ArchiveError
from evolve.archive.trees import move_whole_trees

# The schema's version, kept in `PRAGMA user_version`. 1 is the first released schema
# (its archives say 0: it predates the versioning); 2 records each run's owner; 3 why a
# program is no longer picked as a parent (programs.skip_reason); 4 what each LLM call was for
# and what became of it (llm_calls.purpose, outcome, temperature, decision), the run's
# search decisions, its meta-notes and `evolve bench` results; 5 each run's private data seed
# (runs.data_seed: NULL for a run on the public data, as every run before 5); 6 one private
# leaderboard seed per problem (leaderboards) and the scores of programs under it
# (leaderboard_scores), so that programs of different runs are ranked on the same data;
# 7 programs whose code is a tree of files stored by content (blobs, program_files and
# programs.code_files: evolve/archive/trees.py), each file's text once per archive.
SCHEMA_VERSION = 7

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    problem TEXT NOT NULL,
    problem_dir TEXT NOT NULL,
    config_json TEXT NOT NULL,
    status TEXT NOT NULL,          -- running | finished | stopped | failed
    stop_reason TEXT,
    iterations_target INTEGER NOT NULL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    owner_pid INTEGER,             -- the controller that owns (or last owned) the run
    owner_host TEXT,
    data_seed INTEGER              -- the generated workloads' private seed; NULL: public data
);
CREATE TABLE IF NOT EXISTS programs (
    program_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(run_id),
    problem TEXT NOT NULL,
    iteration INTEGER NOT NULL,    -- 0 for the seed
    island INTEGER NOT NULL,
    parent_id TEXT,
    second_parent_id TEXT,
    kind TEXT NOT NULL,            -- seed | mutation | crossover
    edit_kind TEXT,                -- diff | block | full | none
    model TEXT,
    code TEXT,                     -- NULL for a tree stored by its files (code_files > 0)
    code_files INTEGER NOT NULL DEFAULT 0,  -- a tree's files in program_files; 0: code holds it
    code_hash TEXT,
    diff TEXT,
    status TEXT NOT NULL,          -- pending | ok | invalid_edit | syntax_error | runtime_error | timeout | invalid | duplicate | rejected | sandbox_error
    score REAL,                    -- train score, higher is better; NULL unless status = ok
    test_score REAL,               -- held-out score, set when the program became a best
    scores_json TEXT NOT NULL DEFAULT '{}',   -- per cascade stage / split
    metrics_json TEXT NOT NULL DEFAULT '{}',
    test_metrics_json TEXT NOT NULL DEFAULT '{}',
    artifacts_json TEXT NOT NULL DEFAULT '{}',
    features_json TEXT NOT NULL DEFAULT '{}',
    cell TEXT,
    eval_s REAL,
    llm_call_id INTEGER,
    skip_reason TEXT,              -- why it is never picked as a parent (its prompt cannot fit)
    created_at REAL NOT NULL,
    UNIQUE (run_id, iteration)
);
CREATE INDEX IF NOT EXISTS programs_problem_score ON programs(problem, score);
CREATE INDEX IF NOT EXISTS programs_run_hash ON programs(run_id, code_hash);
CREATE TABLE IF NOT EXISTS llm_calls (
    call_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    iteration INTEGER NOT NULL,
    island INTEGER NOT NULL,
    parent_id TEXT,
    second_parent_id TEXT,
    edit_format TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_json TEXT NOT NULL,
    reply TEXT,
    error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd REAL NOT NULL DEFAULT 0,
    latency_s REAL NOT NULL DEFAULT 0,
    created_at REAL NOT NULL,
    purpose TEXT,                  -- mutation | crossover | repair | resample | meta (NULL: before v4)
    outcome TEXT,                  -- NULL: its reply became the iteration's program; rejected_duplicate
    temperature REAL,
    decision TEXT                  -- why this model and temperature (bandit, stagnation burst, ...)
);
CREATE INDEX IF NOT EXISTS llm_calls_run_iter ON llm_calls(run_id, iteration);
CREATE TABLE IF NOT EXISTS migrations (
    run_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    to_island INTEGER NOT NULL,
    at_iteration INTEGER NOT NULL,
    PRIMARY KEY (run_id, program_id, to_island)
);
CREATE TABLE IF NOT EXISTS decisions (
    decision_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at_done INTEGER NOT NULL,      -- finished iterations when it was taken
    kind TEXT NOT NULL,            -- stagnation | island_reset | burst_end | ...
    detail_json TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS decisions_run ON decisions(run_id, decision_id);
CREATE TABLE IF NOT EXISTS meta_notes (
    note_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    at_calls INTEGER NOT NULL,     -- LLM calls answered when it was written
    call_id INTEGER,               -- the llm_calls row that wrote it
    text TEXT NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS meta_notes_run ON meta_notes(run_id, note_id);
CREATE TABLE IF NOT EXISTS bench_runs (
    bench_id TEXT NOT NULL,        -- one `evolve bench` invocation
    problem TEXT NOT NULL,
    seed INTEGER NOT NULL,
    run_id TEXT NOT NULL,
    model TEXT NOT NULL,
    calls INTEGER NOT NULL,        -- the budget of LLM calls
    result_json TEXT NOT NULL DEFAULT '{}',  -- normalised held-out score, yields, tokens, wall time, curve
    created_at REAL NOT NULL,
    PRIMARY KEY (bench_id, problem, seed)
);
CREATE TABLE IF NOT EXISTS leaderboards (
    problem TEXT PRIMARY KEY,
    data_seed INTEGER NOT NULL,    -- private, drawn once: every cross-run ranking is scored under it
    created_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS leaderboard_scores (
    program_id TEXT PRIMARY KEY,   -- a program re-scored on its problem's leaderboard data
    problem TEXT NOT NULL,
    data_seed INTEGER NOT NULL,    -- the leaderboard seed it was scored under
    status TEXT NOT NULL,          -- of the train cascade under that seed (ok: ranked)
    score REAL,                    -- train, as a run scores (NULL unless status = ok)
    test_score REAL,               -- held-out split (NULL: none, or it failed)
    metrics_json TEXT NOT NULL DEFAULT '{}',
    test_metrics_json TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS leaderboard_scores_problem ON leaderboard_scores(problem, score);
CREATE TABLE IF NOT EXISTS blobs (
    sha256 TEXT PRIMARY KEY,       -- of the text's UTF-8 bytes: each file's text is kept once
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS program_files (
    program_id TEXT NOT NULL,      -- a program whose code is a tree (programs.code_files > 0)
    position INTEGER NOT NULL,     -- the file's place in the tree, from 0
    path TEXT NOT NULL,            -- relative POSIX path, as in the tree's header
    sha256 TEXT NOT NULL REFERENCES blobs(sha256),
    PRIMARY KEY (program_id, position)
) WITHOUT ROWID;
"""


def statements(script: str) -> list[str]:
    """The statements of an SQL script (a `;` in a comment does not end one)."""
    out, buf = [], ""
    for line in script.splitlines(keepends=True):
        buf += line
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    return out


V4_TABLES = ("decisions", "meta_notes", "bench_runs")
V6_TABLES = ("leaderboards", "leaderboard_scores")
V7_TABLES = ("blobs", "program_files")


def _names_table(stmt: str, tables: tuple[str, ...]) -> bool:
    """A CREATE TABLE or CREATE INDEX statement of one of `tables`."""
    head = stmt.split("(")[0].split()
    return bool(head) and head[-1] in tables


def _added_column(table: str, name: str) -> str:
    """The ALTER TABLE that gives an older archive SCHEMA's column `name` of `table`, its
    definition read from SCHEMA (written once)."""
    create = next(
        st
        for st in statements(SCHEMA)
        if st.startswith("CREATE TABLE") and _names_table(st, (table,))
    )
    for line in create.splitlines()[1:]:
        if line.split()[:1] == [name]:
            return f"ALTER TABLE {table} ADD COLUMN {line.split('--')[0].strip().rstrip(',')}"
    raise KeyError(f"{table}.{name}")


# Each step takes an archive from the version before it to its key, inside the one
# transaction that also sets user_version: a crash mid-way leaves the old archive intact.
MIGRATIONS: dict[int, tuple[str, ...]] = {
    2: (
        "ALTER TABLE runs ADD COLUMN owner_pid INTEGER",
        "ALTER TABLE runs ADD COLUMN owner_host TEXT",
    ),
    3: ("ALTER TABLE programs ADD COLUMN skip_reason TEXT",),
    4: (
        "ALTER TABLE llm_calls ADD COLUMN purpose TEXT",
        "ALTER TABLE llm_calls ADD COLUMN outcome TEXT",
        "ALTER TABLE llm_calls ADD COLUMN temperature REAL",
        "ALTER TABLE llm_calls ADD COLUMN decision TEXT",
        *(st for st in statements(SCHEMA) if _names_table(st, V4_TABLES)),
    ),
    5: ("ALTER TABLE runs ADD COLUMN data_seed INTEGER",),
    6: tuple(st for st in statements(SCHEMA) if _names_table(st, V6_TABLES)),
    7: (
        _added_column("programs", "code_files"),
        *(st for st in statements(SCHEMA) if _names_table(st, V7_TABLES)),
    ),
}

# What a step does beyond its SQL, after it, in the same transaction.
MOVES: dict[int, Callable[[sqlite3.Connection], None]] = {7: move_whole_trees}


def user_version(db: sqlite3.Connection) -> int:
    return int(db.execute("PRAGMA user_version").fetchone()[0])


def refuse_newer(path: Path, version: int) -> None:
    """A newer evolve's archive may mean anything: refuse it rather than guess."""
    if version > SCHEMA_VERSION:
        raise ArchiveError(
            f"{path}: written by a newer evolve (schema {version};"
            f" this one reads up to {SCHEMA_VERSION})"
        )


def upgrade(db: sqlite3.Connection, path: Path) -> None:
    """Create or migrate the schema; call it inside a write transaction.

    It reads the version again: another process may have migrated it meanwhile."""
    version = user_version(db)
    refuse_newer(path, version)
    if version == SCHEMA_VERSION:
        return
    fresh = not db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='runs'"
    ).fetchone()
    if fresh:
        for stmt in statements(SCHEMA):
            db.execute(stmt)
    else:  # an archive of schema 1 says 0: it predates user_version
        for step in range(max(version, 1) + 1, SCHEMA_VERSION + 1):
            for stmt in MIGRATIONS[step]:
                db.execute(stmt)
            if step in MOVES:
                MOVES[step](db)
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
