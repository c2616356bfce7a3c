"""The SQLite archive: the single source of truth for every run.

Every state change is one committed transaction, so a controller killed at
any instant leaves a database from which `resume` rebuilds everything else
(population, islands, budgets) without losing or repeating work.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

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
    updated_at REAL NOT NULL
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
    code TEXT,
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
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS llm_calls_run_iter ON llm_calls(run_id, iteration);
CREATE TABLE IF NOT EXISTS migrations (
    run_id TEXT NOT NULL,
    program_id TEXT NOT NULL,
    to_island INTEGER NOT NULL,
    at_iteration INTEGER NOT NULL,
    PRIMARY KEY (run_id, program_id, to_island)
);
"""


@dataclass
class ProgramRow:
    program_id: str
    run_id: str
    problem: str
    iteration: int
    island: int
    status: str
    code: str | None = None
    parent_id: str | None = None
    second_parent_id: str | None = None
    kind: str = "mutation"
    edit_kind: str | None = None
    model: str | None = None
    code_hash: str | None = None
    diff: str | None = None
    score: float | None = None
    test_score: float | None = None
    scores: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    test_metrics: dict = field(default_factory=dict)
    artifacts: dict = field(default_factory=dict)
    features: dict = field(default_factory=dict)
    cell: str | None = None
    eval_s: float | None = None
    llm_call_id: int | None = None
    created_at: float = 0.0


_JSON_COLS = {
    "scores": "scores_json",
    "metrics": "metrics_json",
    "test_metrics": "test_metrics_json",
    "artifacts": "artifacts_json",
    "features": "features_json",
}


def _row_to_program(r: sqlite3.Row) -> ProgramRow:
    d = dict(r)
    for attr, col in _JSON_COLS.items():
        d[attr] = json.loads(d.pop(col) or "{}")
    return ProgramRow(**d)


class Archive:
    """One database for all runs under a runs dir."""

    def __init__(self, runs_dir: str | Path):
        self.runs_dir = Path(runs_dir)
        self.runs_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.runs_dir / "archive.db"
        self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # ---- runs -------------------------------------------------------------
    def create_run(
        self, run_id: str, problem: str, problem_dir: str, config: dict, target: int
    ) -> None:
        now = time.time()
        with self.tx() as db:
            db.execute(
                "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    problem,
                    problem_dir,
                    json.dumps(config),
                    "running",
                    None,
                    target,
                    now,
                    now,
                ),
            )

    def get_run(self, run_id: str) -> dict | None:
        r = self.db.execute("SELECT * FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if r is None:
            return None
        d = dict(r)
        d["config"] = json.loads(d.pop("config_json"))
        return d

    def set_run_status(
        self,
        run_id: str,
        status: str,
        reason: str | None = None,
        target: int | None = None,
        config: dict | None = None,
    ) -> None:
        with self.tx() as db:
            db.execute(
                "UPDATE runs SET status=?, stop_reason=?, updated_at=?,"
                " iterations_target=COALESCE(?, iterations_target),"
                " config_json=COALESCE(?, config_json) WHERE run_id=?",
                (
                    status,
                    reason,
                    time.time(),
                    target,
                    json.dumps(config) if config else None,
                    run_id,
                ),
            )

    def list_runs(self) -> list[dict]:
        rows = self.db.execute(
            """SELECT r.run_id, r.problem, r.status, r.stop_reason, r.iterations_target,
                      r.created_at, r.updated_at,
                      (SELECT COUNT(*) FROM programs p WHERE p.run_id=r.run_id AND p.iteration>0
                         AND p.status!='pending') AS iterations_done,
                      (SELECT MAX(score) FROM programs p WHERE p.run_id=r.run_id AND p.status='ok') AS best_score,
                      (SELECT score FROM programs p WHERE p.run_id=r.run_id AND p.iteration=0) AS seed_score,
                      (SELECT COALESCE(SUM(cost_usd),0) FROM llm_calls c WHERE c.run_id=r.run_id) AS cost_usd
               FROM runs r ORDER BY r.created_at"""
        ).fetchall()
        return [dict(r) for r in rows]

    # ---- programs ---------------------------------------------------------
    def insert_program(self, p: ProgramRow) -> None:
        with self.tx() as db:
            self._insert_program(db, p)

    def _insert_program(self, db: sqlite3.Connection, p: ProgramRow) -> None:
        cols = [
            "program_id",
            "run_id",
            "problem",
            "iteration",
            "island",
            "parent_id",
            "second_parent_id",
            "kind",
            "edit_kind",
            "model",
            "code",
            "code_hash",
            "diff",
            "status",
            "score",
            "test_score",
            "cell",
            "eval_s",
            "llm_call_id",
            "created_at",
        ]
        values = [getattr(p, c) for c in cols]
        values[-1] = p.created_at or time.time()
        for attr, col in _JSON_COLS.items():
            cols.append(col)
            values.append(json.dumps(getattr(p, attr)))
        db.execute(
            f"INSERT INTO programs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})", values
        )

    def finish_program(self, p: ProgramRow) -> None:
        """Record an evaluation's outcome in one transaction."""
        with self.tx() as db:
            db.execute(
                """UPDATE programs SET status=?, score=?, scores_json=?, metrics_json=?,
                   artifacts_json=?, features_json=?, cell=?, eval_s=? WHERE program_id=?""",
                (
                    p.status,
                    p.score,
                    json.dumps(p.scores),
                    json.dumps(p.metrics),
                    json.dumps(p.artifacts),
                    json.dumps(p.features),
                    p.cell,
                    p.eval_s,
                    p.program_id,
                ),
            )

    def set_test_result(self, program_id: str, score: float | None, metrics: dict) -> None:
        with self.tx() as db:
            db.execute(
                "UPDATE programs SET test_score=?, test_metrics_json=? WHERE program_id=?",
                (score, json.dumps(metrics), program_id),
            )

    def programs(self, run_id: str, where: str = "", args: tuple = ()) -> list[ProgramRow]:
        sql = "SELECT * FROM programs WHERE run_id=?" + (f" AND {where}" if where else "")
        rows = self.db.execute(sql + " ORDER BY iteration", (run_id, *args)).fetchall()
        return [_row_to_program(r) for r in rows]

    def iterations(self, run_id: str) -> set[int]:
        return {
            r[0]
            for r in self.db.execute("SELECT iteration FROM programs WHERE run_id=?", (run_id,))
        }

    def get_program(self, program_id: str) -> ProgramRow | None:
        r = self.db.execute("SELECT * FROM programs WHERE program_id=?", (program_id,)).fetchone()
        if r is None:
            r = self.db.execute(
                "SELECT * FROM programs WHERE program_id LIKE ? ORDER BY program_id LIMIT 2",
                (program_id + "%",),
            ).fetchall()
            r = r[0] if len(r) == 1 else None
        return _row_to_program(r) if r is not None else None

    def hash_seen(self, run_id: str, code_hash: str) -> str | None:
        r = self.db.execute(
            "SELECT program_id FROM programs WHERE run_id=? AND code_hash=? AND status!='duplicate' LIMIT 1",
            (run_id, code_hash),
        ).fetchone()
        return r[0] if r else None

    def best(self, problem: str | None = None, run_id: str | None = None) -> ProgramRow | None:
        sql, args = "SELECT * FROM programs WHERE status='ok' AND score IS NOT NULL", []
        if problem:
            sql += " AND problem=?"
            args.append(problem)
        if run_id:
            sql += " AND run_id=?"
            args.append(run_id)
        r = self.db.execute(sql + " ORDER BY score DESC, created_at LIMIT 1", args).fetchone()
        return _row_to_program(r) if r else None

    def lineage(self, program_id: str) -> list[ProgramRow]:
        chain, seen = [], set()
        p = self.get_program(program_id)
        while p is not None and p.program_id not in seen:
            chain.append(p)
            seen.add(p.program_id)
            p = self.get_program(p.parent_id) if p.parent_id else None
        return chain

    # ---- LLM calls and migrations ------------------------------------------
    def insert_llm_call(
        self,
        run_id: str,
        iteration: int,
        island: int,
        parent_id: str | None,
        second_parent_id: str | None,
        edit_format: str,
        model: str,
        prompt: list,
        reply: str | None,
        error: str | None,
        prompt_tokens: int,
        completion_tokens: int,
        cost_usd: float,
        latency_s: float,
    ) -> int:
        with self.tx() as db:
            cur = db.execute(
                """INSERT INTO llm_calls (run_id, iteration, island, parent_id, second_parent_id,
                   edit_format, model, prompt_json, reply, error, prompt_tokens, completion_tokens,
                   cost_usd, latency_s, created_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)""",
                (
                    run_id,
                    iteration,
                    island,
                    parent_id,
                    second_parent_id,
                    edit_format,
                    model,
                    json.dumps(prompt),
                    reply,
                    error,
                    prompt_tokens,
                    completion_tokens,
                    cost_usd,
                    latency_s,
                    time.time(),
                ),
            )
            assert cur.lastrowid is not None  # set by the INSERT
            return cur.lastrowid

    def unconsumed_replies(self, run_id: str) -> list[dict]:
        """Replies received before a crash whose iteration has no program yet."""
        rows = self.db.execute(
            """SELECT c.* FROM llm_calls c WHERE c.run_id=? AND c.reply IS NOT NULL
               AND NOT EXISTS (SELECT 1 FROM programs p WHERE p.run_id=c.run_id AND p.iteration=c.iteration)
               AND c.call_id = (SELECT MAX(call_id) FROM llm_calls c2 WHERE c2.run_id=c.run_id
                                AND c2.iteration=c.iteration AND c2.reply IS NOT NULL)
               ORDER BY c.iteration""",
            (run_id,),
        ).fetchall()
        return [dict(r) for r in rows]

    def usage(self, run_id: str) -> dict:
        r = self.db.execute(
            """SELECT COUNT(*) AS calls, COALESCE(SUM(prompt_tokens),0) AS prompt_tokens,
                      COALESCE(SUM(completion_tokens),0) AS completion_tokens,
                      COALESCE(SUM(cost_usd),0) AS cost_usd FROM llm_calls WHERE run_id=?""",
            (run_id,),
        ).fetchone()
        return dict(r)

    def add_migration(
        self, run_id: str, program_id: str, to_island: int, at_iteration: int
    ) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO migrations VALUES (?,?,?,?)",
                (run_id, program_id, to_island, at_iteration),
            )

    def migrations(self, run_id: str) -> list[tuple[str, int, int]]:
        rows = self.db.execute(
            "SELECT program_id, to_island, at_iteration FROM migrations WHERE run_id=?"
            " ORDER BY at_iteration",
            (run_id,),
        ).fetchall()
        return [tuple(r) for r in rows]
