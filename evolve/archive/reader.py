"""ArchiveReader: the archive opened read-only, for people and scripts that look at it.

The web view, the exports and the report read through this, never through Archive: an
SQLite `mode=ro` connection cannot write, so looking at a run can never change it, even
while its controller is still writing (WAL readers see the last committed state). The
connection and the schema-tolerant column lists are in readonly.py, the queries the writer
answers too in queries.py, those over LLM calls in call_queries.py, those over the
leaderboard in board_queries.py; the runs, programs and benchmarks are here.
"""

from __future__ import annotations

import json
import sqlite3

from evolve.archive import ids, queries
from evolve.archive.board_queries import BoardQueries
from evolve.archive.call_queries import CallQueries
from evolve.archive.lease import is_locked, lock_file, owner_holds_lock
from evolve.archive.readonly import has_table, list_cols, or_null
from evolve.archive.rows import ProgramRow, ProgramStatus, RunStatus, member, row_to_program
from evolve.archive.summaries import BenchRun, BenchSummary, RunSummary

# The owner (schema 2) and data seed (schema 5) of each run.
_RUN_COLS = ("owner_pid", "owner_host", "data_seed")

_RUNS_SQL = """
SELECT r.*,
  COALESCE(p.programs, 0) AS programs, COALESCE(p.valid, 0) AS valid,
  COALESCE(p.done, 0) AS iterations_done, p.best_score,
  (SELECT program_id FROM programs b WHERE b.run_id = r.run_id AND b.status = :ok
     AND b.score IS NOT NULL ORDER BY b.score DESC, b.created_at LIMIT 1) AS best_program_id,
  (SELECT test_score FROM programs b WHERE b.run_id = r.run_id AND b.status = :ok
     AND b.score IS NOT NULL ORDER BY b.score DESC, b.created_at LIMIT 1) AS best_test_score,
  (SELECT score FROM programs s WHERE s.run_id = r.run_id AND s.iteration = 0) AS seed_score,
  (SELECT program_id FROM programs s WHERE s.run_id = r.run_id AND s.iteration = 0)
     AS seed_program_id,
  COALESCE(c.prompt_tokens, 0) AS prompt_tokens,
  COALESCE(c.completion_tokens, 0) AS completion_tokens,
  COALESCE(c.cost_usd, 0) AS cost_usd, COALESCE(c.calls, 0) AS llm_calls,
  COALESCE(c.answered, 0) AS answered_calls
FROM runs r
LEFT JOIN (SELECT run_id, COUNT(*) AS programs, SUM(status = :ok) AS valid,
                  SUM(iteration > 0 AND status != :pending AND kind != 'tune') AS done, MAX(score) AS best_score
           FROM programs GROUP BY run_id) p ON p.run_id = r.run_id
LEFT JOIN (SELECT run_id, SUM(prompt_tokens) AS prompt_tokens,
                  SUM(completion_tokens) AS completion_tokens, SUM(cost_usd) AS cost_usd,
                  COUNT(*) AS calls, SUM(error IS NULL) AS answered
           FROM llm_calls GROUP BY run_id) c ON c.run_id = r.run_id
"""
_RUNS_ARGS = {"ok": ProgramStatus.OK, "pending": ProgramStatus.PENDING}  # _RUNS_SQL's parameters

# `evolve archive runs` (its --json is these rows as they are); a dead owner's run is
# `interrupted`, as in RunSummary.
_RUN_LIST_SQL = """SELECT r.run_id, r.problem, r.status, r.stop_reason, r.iterations_target,
       r.created_at, r.updated_at, {run_cols},
       (SELECT COUNT(*) FROM programs p WHERE p.run_id=r.run_id AND p.iteration>0
          AND p.status!=:pending AND p.kind!='tune') AS iterations_done,
       (SELECT MAX(score) FROM programs p WHERE p.run_id=r.run_id AND p.status=:ok) AS best_score,
       (SELECT score FROM programs p WHERE p.run_id=r.run_id AND p.iteration=0) AS seed_score,
       (SELECT COALESCE(SUM(cost_usd),0) FROM llm_calls c WHERE c.run_id=r.run_id) AS cost_usd
FROM runs r ORDER BY r.created_at"""


class ArchiveReader(CallQueries, BoardQueries):
    """Read-only queries over `<runs_dir>/archive.db`; each call uses its own connection,
    so one reader serves many threads (a web server's workers)."""

    # ---- runs ---------------------------------------------------------------
    def runs(self, problem: str | None = None) -> list[RunSummary]:
        sql = _RUNS_SQL + (" WHERE r.problem = :problem" if problem is not None else "")
        with self._db() as db:
            rows = db.execute(
                sql + " ORDER BY r.created_at", {**_RUNS_ARGS, "problem": problem}
            ).fetchall()
        return [self._summary(r) for r in rows]

    def run(self, run_id: str) -> RunSummary | None:
        with self._db() as db:
            r = db.execute(
                _RUNS_SQL + " WHERE r.run_id = :run_id", {**_RUNS_ARGS, "run_id": run_id}
            ).fetchone()
        return self._summary(r) if r is not None else None

    def _summary(self, r: sqlite3.Row) -> RunSummary:
        d = dict(r)
        d["config"] = json.loads(d.pop("config_json") or "{}")
        owner_pid, owner_host = d.pop("owner_pid", None), d.pop("owner_host", None)
        d["status"] = member(RunStatus, d["status"])
        if d["status"] == RunStatus.RUNNING and not self._owned(d["run_id"], owner_pid, owner_host):
            d["status"] = RunStatus.INTERRUPTED
            who = f"pid {owner_pid} on {owner_host}" if owner_pid else "its controller"
            d["stop_reason"] = f"{who} is gone"
        return RunSummary(**d)

    def _owned(self, run_id: str, owner_pid: object = None, owner_host: object = None) -> bool:
        """Whether a live process holds the run's lock (False: a `running` row is stale),
        its lock file deleted or not (evolve/archive/lease.py)."""
        return is_locked(lock_file(self.runs_dir, run_id)) or owner_holds_lock(
            owner_pid, owner_host
        )

    def list_runs(self) -> list[dict]:
        """Every run as `evolve archive runs` lists it (--json prints these dicts)."""
        with self._db() as db:
            cols = ", ".join(or_null(db, "runs", _RUN_COLS, "r."))
            sql = _RUN_LIST_SQL.format(run_cols=cols)
            runs = [dict(r) for r in db.execute(sql, _RUNS_ARGS).fetchall()]
        for r in runs:
            r["status"] = member(RunStatus, r["status"])
            if r["status"] == RunStatus.RUNNING and not self._owned(
                r["run_id"], r.get("owner_pid"), r.get("owner_host")
            ):
                r["status"] = RunStatus.INTERRUPTED
                who = f"pid {r['owner_pid']} on {r['owner_host']}" if r["owner_pid"] else "owner"
                r["stop_reason"] = f"{who} is gone"
        return runs

    def resolve_run(self, text: str) -> str | None:
        """The run id `text` names: itself, or the one run id it is a prefix of."""
        with self._db() as db:
            return ids.resolve_run(db, text)

    def problems(self) -> list[str]:
        with self._db() as db:
            return [r[0] for r in db.execute("SELECT DISTINCT problem FROM runs ORDER BY problem")]

    # ---- programs -------------------------------------------------------------
    def programs(
        self,
        run_id: str,
        after_iteration: int = -1,
        code: bool = False,
        pending: bool | None = None,
    ) -> list[ProgramRow]:
        """A run's programs by iteration (queries.programs)."""
        with self._db() as db:
            return queries.programs(db, run_id, after_iteration, code, pending)

    def program(self, program_id: str) -> ProgramRow | None:
        """The program with exactly this id (queries.program)."""
        with self._db() as db:
            return queries.program(db, program_id)

    def resolve_program(self, text: str) -> ProgramRow | None:
        """The program `text` names, as a person types it (ids.resolve_program)."""
        with self._db() as db:
            program_id = ids.resolve_program(db, text)
        return self.program(program_id) if program_id is not None else None

    def best(self, run_id: str | None = None, problem: str | None = None) -> ProgramRow | None:
        """The best evaluated program of a run or a problem (queries.best)."""
        with self._db() as db:
            return queries.best(db, run_id, problem)

    def children(self, program_id: str) -> list[ProgramRow]:
        with self._db() as db:
            rows = db.execute(
                f"SELECT {list_cols(db)} FROM programs WHERE parent_id = ? ORDER BY iteration",
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

    def status_counts(self, run_id: str) -> dict[str, int]:
        """A run's candidates (the seed is none) by status, most common first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT status, COUNT(*) AS n FROM programs WHERE run_id = ? AND iteration > 0"
                " GROUP BY status ORDER BY n DESC, status",
                (run_id,),
            ).fetchall()
        return {r["status"]: int(r["n"]) for r in rows}

    # ---- benchmarks (`evolve bench`) ------------------------------------------------
    def benches(self) -> list[BenchSummary]:
        """Every benchmark, oldest first (none in an archive older than schema 4)."""
        with self._db() as db:
            if not has_table(db, "bench_runs"):
                return []
            rows = db.execute(
                """SELECT bench_id, MIN(model) AS model, MAX(calls) AS calls,
                          GROUP_CONCAT(DISTINCT problem) AS problems, COUNT(*) AS runs,
                          MIN(created_at) AS created_at
                   FROM bench_runs GROUP BY bench_id ORDER BY MIN(created_at), bench_id"""
            ).fetchall()
        return [
            BenchSummary(**{**dict(r), "problems": sorted((r["problems"] or "").split(","))})
            for r in rows
        ]

    def bench_runs(self, bench_id: str) -> list[BenchRun]:
        """The runs of one benchmark by problem (in the order it ran them) and seed."""
        with self._db() as db:
            if not has_table(db, "bench_runs"):
                return []
            rows = db.execute(
                "SELECT * FROM bench_runs WHERE bench_id = ? ORDER BY created_at, problem, seed",
                (bench_id,),
            ).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            try:
                d["result"] = json.loads(d.pop("result_json") or "{}")
            except ValueError:
                d["result"] = {}
            out.append(BenchRun(**d))
        return out

    def migrations(self, run_id: str) -> list[tuple[str, int, int]]:
        with self._db() as db:
            return queries.migrations(db, run_id)
