"""ArchiveReader: the archive opened read-only, for people and scripts that look at it.

The web view, the exports and the report read through this, never through Archive: an
SQLite `mode=ro` connection cannot write, so looking at a run can never change it, even
while its controller is still writing (WAL readers see the last committed state).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from evolve.archive.faults import ArchiveError, check_runs_dir, describe_fault
from evolve.archive.lease import is_locked, lock_file
from evolve.archive.rows import ProgramRow, row_to_program
from evolve.archive.schema import refuse_newer, user_version

# Columns a listing needs: everything but the code, diff and JSON blobs it never shows.
_LIST_COLS = (
    "program_id, run_id, problem, iteration, island, parent_id, second_parent_id, kind,"
    " edit_kind, model, status, score, test_score, cell, eval_s, llm_call_id, skip_reason,"
    " created_at, metrics_json, scores_json, test_metrics_json, features_json"
)


@dataclass
class RunSummary:
    """One run as a list of runs shows it; `status` says `interrupted` for a dead owner."""

    run_id: str
    problem: str
    problem_dir: str
    status: str
    stop_reason: str | None
    iterations_target: int
    iterations_done: int
    programs: int
    valid: int
    best_score: float | None
    best_program_id: str | None
    best_test_score: float | None  # the held-out score of the best (train) program
    seed_score: float | None
    seed_program_id: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    llm_calls: int
    created_at: float
    updated_at: float
    config: dict = field(default_factory=dict)

    @property
    def valid_pct(self) -> float | None:
        judged = self.programs - 1  # the seed is not a candidate
        return None if judged <= 0 else 100.0 * (self.valid - 1) / judged

    @property
    def duration_s(self) -> float:
        return max(0.0, self.updated_at - self.created_at)


@dataclass
class LlmCall:
    """One request to a model and its reply, as the archive keeps it."""

    call_id: int
    run_id: str
    iteration: int
    island: int
    model: str
    edit_format: str
    prompt: list
    reply: str | None
    error: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    created_at: float


_RUNS_SQL = """
SELECT r.*,
  COALESCE(p.programs, 0) AS programs, COALESCE(p.valid, 0) AS valid,
  COALESCE(p.done, 0) AS iterations_done, p.best_score,
  (SELECT program_id FROM programs b WHERE b.run_id = r.run_id AND b.status = 'ok'
     AND b.score IS NOT NULL ORDER BY b.score DESC, b.created_at LIMIT 1) AS best_program_id,
  (SELECT test_score FROM programs b WHERE b.run_id = r.run_id AND b.status = 'ok'
     AND b.score IS NOT NULL ORDER BY b.score DESC, b.created_at LIMIT 1) AS best_test_score,
  (SELECT score FROM programs s WHERE s.run_id = r.run_id AND s.iteration = 0) AS seed_score,
  (SELECT program_id FROM programs s WHERE s.run_id = r.run_id AND s.iteration = 0)
     AS seed_program_id,
  COALESCE(c.prompt_tokens, 0) AS prompt_tokens,
  COALESCE(c.completion_tokens, 0) AS completion_tokens,
  COALESCE(c.cost_usd, 0) AS cost_usd, COALESCE(c.calls, 0) AS llm_calls
FROM runs r
LEFT JOIN (SELECT run_id, COUNT(*) AS programs, SUM(status = 'ok') AS valid,
                  SUM(iteration > 0 AND status != 'pending') AS done, MAX(score) AS best_score
           FROM programs GROUP BY run_id) p ON p.run_id = r.run_id
LEFT JOIN (SELECT run_id, SUM(prompt_tokens) AS prompt_tokens,
                  SUM(completion_tokens) AS completion_tokens, SUM(cost_usd) AS cost_usd,
                  COUNT(*) AS calls
           FROM llm_calls GROUP BY run_id) c ON c.run_id = r.run_id
"""


class ArchiveReader:
    """Read-only queries over `<runs_dir>/archive.db`; each call uses its own connection,
    so one reader serves many threads (a web server's workers)."""

    def __init__(self, runs_dir: str | Path):
        self.runs_dir = Path(runs_dir)
        self.path = self.runs_dir / "archive.db"
        check_runs_dir(self.runs_dir, self.path, create=False)
        with self._db() as db:
            refuse_newer(self.path, user_version(db))

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        try:
            db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, timeout=30)
        except sqlite3.Error as e:
            raise ArchiveError(describe_fault(self.path, e)) from None
        db.row_factory = sqlite3.Row
        try:
            yield db
        except sqlite3.Error as e:
            raise ArchiveError(describe_fault(self.path, e)) from None
        finally:
            db.close()

    # ---- runs ---------------------------------------------------------------
    def runs(self, problem: str | None = None) -> list[RunSummary]:
        sql = _RUNS_SQL + (" WHERE r.problem = ?" if problem is not None else "")
        args = (problem,) if problem is not None else ()
        with self._db() as db:
            rows = db.execute(sql + " ORDER BY r.created_at", args).fetchall()
        return [self._summary(r) for r in rows]

    def run(self, run_id: str) -> RunSummary | None:
        with self._db() as db:
            r = db.execute(_RUNS_SQL + " WHERE r.run_id = ?", (run_id,)).fetchone()
        return self._summary(r) if r is not None else None

    def _summary(self, r: sqlite3.Row) -> RunSummary:
        d = dict(r)
        d["config"] = json.loads(d.pop("config_json") or "{}")
        owner_pid, owner_host = d.pop("owner_pid", None), d.pop("owner_host", None)
        if d["status"] == "running" and not is_locked(lock_file(self.runs_dir, d["run_id"])):
            d["status"] = "interrupted"
            who = f"pid {owner_pid} on {owner_host}" if owner_pid else "its controller"
            d["stop_reason"] = f"{who} is gone"
        return RunSummary(**d)

    def problems(self) -> list[str]:
        with self._db() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT problem FROM runs ORDER BY problem")]

    # ---- programs -------------------------------------------------------------
    def programs(
        self, run_id: str, after_iteration: int = -1, code: bool = False
    ) -> list[ProgramRow]:
        """A run's programs by iteration (those after `after_iteration`); without code,
        diffs and artifacts unless `code`, so listing 10,000 of them stays cheap."""
        cols = "*" if code else _LIST_COLS
        with self._db() as db:
            rows = db.execute(
                f"SELECT {cols} FROM programs WHERE run_id = ? AND iteration > ?"
                " ORDER BY iteration",
                (run_id, after_iteration),
            ).fetchall()
        return [row_to_program(r) for r in rows]

    def program(self, program_id: str) -> ProgramRow | None:
        with self._db() as db:
            r = db.execute("SELECT * FROM programs WHERE program_id = ?", (program_id,)).fetchone()
        return row_to_program(r) if r is not None else None

    def children(self, program_id: str) -> list[ProgramRow]:
        with self._db() as db:
            rows = db.execute(
                f"SELECT {_LIST_COLS} FROM programs WHERE parent_id = ? ORDER BY iteration",
                (program_id,),
            ).fetchall()
        return [row_to_program(r) for r in rows]

    def lineage(self, program_id: str) -> list[ProgramRow]:
        """The program, its parent, ... back to the seed (a cycle ends the walk)."""
        chain: list[ProgramRow] = []
        seen: set[str] = set()
        next_id: str | None = program_id
        while next_id is not None and next_id not in seen:
            p = self.program(next_id)
            if p is None:
                break
            chain.append(p)
            seen.add(next_id)
            next_id = p.parent_id
        return chain

    def leaderboard(self, problem: str, limit: int = 50) -> list[ProgramRow]:
        """The best valid programs of a problem across all its runs, one per code hash."""
        with self._db() as db:
            rows = db.execute(
                f"""SELECT {_LIST_COLS} FROM (
                      SELECT *, ROW_NUMBER() OVER (PARTITION BY COALESCE(code_hash, program_id)
                                                   ORDER BY score DESC, created_at) AS rank_
                      FROM programs WHERE problem = ? AND status = 'ok' AND score IS NOT NULL)
                    WHERE rank_ = 1 ORDER BY score DESC, created_at LIMIT ?""",
                (problem, limit),
            ).fetchall()
        return [row_to_program(r) for r in rows]

    # ---- LLM calls --------------------------------------------------------------
    def llm_call(self, call_id: int) -> LlmCall | None:
        with self._db() as db:
            r = db.execute("SELECT * FROM llm_calls WHERE call_id = ?", (call_id,)).fetchone()
        return _call(r) if r is not None else None

    def llm_calls(self, run_id: str, prompts: bool = False) -> list[LlmCall]:
        """A run's calls in order; prompts and replies only when asked (they are large)."""
        cols = (
            "*"
            if prompts
            else "call_id, run_id, iteration, island, model, edit_format, '[]' AS prompt_json,"
            " NULL AS reply, error, prompt_tokens, completion_tokens, cost_usd, latency_s,"
            " created_at"
        )
        with self._db() as db:
            rows = db.execute(
                f"SELECT {cols} FROM llm_calls WHERE run_id = ? ORDER BY call_id", (run_id,)
            ).fetchall()
        return [_call(r) for r in rows]

    def migrations(self, run_id: str) -> list[tuple[str, int, int]]:
        with self._db() as db:
            rows = db.execute(
                "SELECT program_id, to_island, at_iteration FROM migrations WHERE run_id = ?"
                " ORDER BY at_iteration",
                (run_id,),
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]


def _call(r: sqlite3.Row) -> LlmCall:
    d = {k: r[k] for k in r.keys() if k not in ("parent_id", "second_parent_id")}
    d["prompt"] = json.loads(d.pop("prompt_json") or "[]")
    return LlmCall(**d)
