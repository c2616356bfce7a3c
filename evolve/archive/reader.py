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
from pathlib import Path

from evolve.archive import ids
from evolve.archive.faults import ArchiveError, check_runs_dir, describe_fault
from evolve.archive.lease import is_locked, lock_file
from evolve.archive.rows import (
    CallOutcome,
    LlmCall,
    ProgramRow,
    RunStatus,
    Status,
    member,
    row_to_call,
    row_to_program,
)
from evolve.archive.schema import refuse_newer, user_version
from evolve.archive.summaries import (
    AnsweredCall,
    BenchRun,
    BenchSummary,
    CallCounts,
    MetaNote,
    ModelUse,
    RunSummary,
    SearchDecision,
)

# Columns a listing needs: everything but the code, diff and JSON blobs it never shows
# (skip_reason came with schema 3: see _list_cols).
_LIST_COLS = (
    "program_id, run_id, problem, iteration, island, parent_id, second_parent_id, kind,"
    " edit_kind, model, status, score, test_score, cell, eval_s, llm_call_id, skip_reason,"
    " created_at, metrics_json, scores_json, test_metrics_json, features_json"
)
# The owner (schema 2) and data seed (schema 5) of each run.
_RUN_COLS = ("owner_pid", "owner_host", "data_seed")

# The columns schema 4 added to llm_calls: an older archive, read as it is, has none.
CALL_V4_COLS = ("purpose", "outcome", "temperature", "decision")


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
  COALESCE(c.cost_usd, 0) AS cost_usd, COALESCE(c.calls, 0) AS llm_calls
FROM runs r
LEFT JOIN (SELECT run_id, COUNT(*) AS programs, SUM(status = :ok) AS valid,
                  SUM(iteration > 0 AND status != :pending) AS done, MAX(score) AS best_score
           FROM programs GROUP BY run_id) p ON p.run_id = r.run_id
LEFT JOIN (SELECT run_id, SUM(prompt_tokens) AS prompt_tokens,
                  SUM(completion_tokens) AS completion_tokens, SUM(cost_usd) AS cost_usd,
                  COUNT(*) AS calls
           FROM llm_calls GROUP BY run_id) c ON c.run_id = r.run_id
"""
_RUNS_ARGS = {"ok": Status.OK, "pending": Status.PENDING}  # _RUNS_SQL's parameters

# `evolve archive runs` (its --json is these rows as they are); a dead owner's run is
# `interrupted`, as in RunSummary.
_RUN_LIST_SQL = """SELECT r.run_id, r.problem, r.status, r.stop_reason, r.iterations_target,
       r.created_at, r.updated_at, {run_cols},
       (SELECT COUNT(*) FROM programs p WHERE p.run_id=r.run_id AND p.iteration>0
          AND p.status!=:pending) AS iterations_done,
       (SELECT MAX(score) FROM programs p WHERE p.run_id=r.run_id AND p.status=:ok) AS best_score,
       (SELECT score FROM programs p WHERE p.run_id=r.run_id AND p.iteration=0) AS seed_score,
       (SELECT COALESCE(SUM(cost_usd),0) FROM llm_calls c WHERE c.run_id=r.run_id) AS cost_usd
FROM runs r ORDER BY r.created_at"""


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
        if d["status"] == RunStatus.RUNNING and not self._owned(d["run_id"]):
            d["status"] = RunStatus.INTERRUPTED
            who = f"pid {owner_pid} on {owner_host}" if owner_pid else "its controller"
            d["stop_reason"] = f"{who} is gone"
        return RunSummary(**d)

    def _owned(self, run_id: str) -> bool:
        """Whether a live process holds the run's lock (False: a `running` row is stale)."""
        return is_locked(lock_file(self.runs_dir, run_id))

    def list_runs(self) -> list[dict]:
        """Every run as `evolve archive runs` lists it (--json prints these dicts)."""
        with self._db() as db:
            cols = ", ".join(_or_null(db, "runs", _RUN_COLS, "r."))
            sql = _RUN_LIST_SQL.format(run_cols=cols)
            runs = [dict(r) for r in db.execute(sql, _RUNS_ARGS).fetchall()]
        for r in runs:
            r["status"] = member(RunStatus, r["status"])
            if r["status"] == RunStatus.RUNNING and not self._owned(r["run_id"]):
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
        self, run_id: str, after_iteration: int = -1, code: bool = False
    ) -> list[ProgramRow]:
        """A run's programs by iteration (those after `after_iteration`); without code,
        diffs and artifacts unless `code`, so listing 10,000 of them stays cheap."""
        with self._db() as db:
            cols = "*" if code else _list_cols(db)
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

    def resolve_program(self, text: str) -> ProgramRow | None:
        """The program `text` names, as a person types it (ids.resolve_program)."""
        with self._db() as db:
            program_id = ids.resolve_program(db, text)
        return self.program(program_id) if program_id is not None else None

    def best(self, problem: str | None = None, run_id: str | None = None) -> ProgramRow | None:
        """The best evaluated program of a problem or a run (the earliest of equals)."""
        sql = "SELECT * FROM programs WHERE status = ? AND score IS NOT NULL"
        args: list[str] = [Status.OK]
        if problem:
            sql += " AND problem = ?"
            args.append(problem)
        if run_id:
            sql += " AND run_id = ?"
            args.append(run_id)
        with self._db() as db:
            r = db.execute(sql + " ORDER BY score DESC, created_at LIMIT 1", args).fetchone()
        return row_to_program(r) if r else None

    def best_per_problem(self) -> list[ProgramRow]:
        """The best evaluated program of each problem, across all its runs."""
        with self._db() as db:
            rows = db.execute(
                """SELECT * FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY problem
                                      ORDER BY score DESC, created_at) AS rank_
                                  FROM programs WHERE status = ? AND score IS NOT NULL)
                   WHERE rank_ = 1 ORDER BY problem""",
                (Status.OK,),
            ).fetchall()
        return [row_to_program({k: r[k] for k in r.keys() if k != "rank_"}) for r in rows]

    def children(self, program_id: str) -> list[ProgramRow]:
        with self._db() as db:
            rows = db.execute(
                f"SELECT {_list_cols(db)} FROM programs WHERE parent_id = ? ORDER BY iteration",
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
                f"""SELECT {_list_cols(db)} FROM (
                      SELECT *, ROW_NUMBER() OVER (PARTITION BY COALESCE(code_hash, program_id)
                                                   ORDER BY score DESC, created_at) AS rank_
                      FROM programs WHERE problem = ? AND status = ? AND score IS NOT NULL)
                    WHERE rank_ = 1 ORDER BY score DESC, created_at LIMIT ?""",
                (problem, Status.OK, limit),
            ).fetchall()
        return [row_to_program(r) for r in rows]

    # ---- LLM calls --------------------------------------------------------------
    def llm_call(self, call_id: int) -> LlmCall | None:
        with self._db() as db:
            r = db.execute("SELECT * FROM llm_calls WHERE call_id = ?", (call_id,)).fetchone()
        return row_to_call(r) if r is not None else None

    def llm_calls(self, run_id: str, prompts: bool = False) -> list[LlmCall]:
        """A run's calls in order; prompts and replies only when asked (they are large)."""
        with self._db() as db:
            cols = (
                "*"
                if prompts
                else "call_id, run_id, iteration, island, parent_id, second_parent_id, model,"
                " edit_format, '[]' AS prompt_json, NULL AS reply, error, prompt_tokens,"
                " completion_tokens, cost_usd, latency_s, created_at, " + ", ".join(_v4_cols(db))
            )
            rows = db.execute(
                f"SELECT {cols} FROM llm_calls WHERE run_id = ? ORDER BY call_id", (run_id,)
            ).fetchall()
        return [row_to_call(r) for r in rows]

    # ---- what the search did (schema 4; an older archive has none of it) ----------------
    def rejected_calls(self, run_id: str, iteration: int) -> list[LlmCall]:
        """The answered calls of one iteration whose reply was not used (it repeated a
        program, so the model was asked again), with prompts and replies, in order."""
        with self._db() as db:
            if "outcome" not in _columns(db, "llm_calls"):
                return []
            rows = db.execute(
                "SELECT * FROM llm_calls WHERE run_id = ? AND iteration = ?"
                " AND outcome IS NOT NULL ORDER BY call_id",
                (run_id, iteration),
            ).fetchall()
        return [row_to_call(r) for r in rows]

    def meta_notes(self, run_id: str) -> list[MetaNote]:
        """A run's meta-notes in the order they were written."""
        with self._db() as db:
            if not _has_table(db, "meta_notes"):
                return []
            rows = db.execute(
                "SELECT at_calls, call_id, text, created_at FROM meta_notes WHERE run_id = ?"
                " ORDER BY note_id",
                (run_id,),
            ).fetchall()
        return [MetaNote(**dict(r)) for r in rows]

    def decisions(self, run_id: str) -> list[SearchDecision]:
        """A run's search decisions (stagnation bursts, island restarts) in order."""
        with self._db() as db:
            if not _has_table(db, "decisions"):
                return []
            rows = db.execute(
                "SELECT at_done, kind, detail_json, created_at FROM decisions WHERE run_id = ?"
                " ORDER BY decision_id",
                (run_id,),
            ).fetchall()
        out = []
        for r in rows:
            d = dict(r)
            try:
                detail = json.loads(d.pop("detail_json") or "{}")
            except ValueError:
                detail = {}
            out.append(SearchDecision(**d, detail=detail if isinstance(detail, dict) else {}))
        return out

    def call_counts(self, run_id: str) -> CallCounts:
        """What became of a run's LLM calls, and how many programs repairs made."""
        with self._db() as db:
            has = _columns(db, "llm_calls")
            purpose = "purpose" if "purpose" in has else "NULL"
            outcome = "outcome" if "outcome" in has else "NULL"
            rows = db.execute(
                f"""SELECT reply IS NOT NULL AS answered, {purpose} AS purpose,
                      {outcome} AS outcome, COUNT(*) AS n
                    FROM llm_calls WHERE run_id = ? GROUP BY 1, 2, 3""",
                (run_id,),
            ).fetchall()
            rep = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(status = ?), 0) FROM programs"
                " WHERE run_id = ? AND kind = 'repair'",
                (Status.OK, run_id),
            ).fetchone()
        by_purpose: dict[str, int] = {}
        by_outcome: dict[str, int] = {}
        answered = failed = rejected = 0
        for r in rows:
            n = int(r["n"])
            if not r["answered"]:
                failed += n
                by_outcome["failed attempt"] = by_outcome.get("failed attempt", 0) + n
                continue
            answered += n
            key = r["purpose"] if r["purpose"] is not None else "not recorded"
            by_purpose[key] = by_purpose.get(key, 0) + n
            what = r["outcome"] if r["outcome"] is not None else "used"
            by_outcome[what] = by_outcome.get(what, 0) + n
            rejected += n if r["outcome"] == CallOutcome.REJECTED_DUPLICATE else 0
        return CallCounts(answered, failed, rejected, int(rep[0]), int(rep[1]),
                          by_purpose, by_outcome)  # fmt: skip

    def status_counts(self, run_id: str) -> dict[str, int]:
        """A run's candidates (the seed is none) by status, most common first."""
        with self._db() as db:
            rows = db.execute(
                "SELECT status, COUNT(*) AS n FROM programs WHERE run_id = ? AND iteration > 0"
                " GROUP BY status ORDER BY n DESC, status",
                (run_id,),
            ).fetchall()
        return {r["status"]: int(r["n"]) for r in rows}

    def model_use(self, run_id: str) -> list[ModelUse]:
        """Per model, by name: its calls, tokens and the bandit's reward proxy."""
        with self._db() as db:
            has = _columns(db, "llm_calls")
            meta = "COALESCE(purpose, '') = 'meta'" if "purpose" in has else "edit_format = 'meta'"
            outcome = "outcome IS NOT NULL" if "outcome" in has else "0"
            rows = db.execute(
                f"""SELECT model, COUNT(reply) AS calls, SUM(reply IS NULL) AS failed,
                      SUM(reply IS NOT NULL AND {outcome}) AS rejected,
                      SUM(prompt_tokens + completion_tokens) AS tokens,
                      SUM(cost_usd) AS cost_usd,
                      SUM(reply IS NOT NULL AND NOT ({meta})) AS proposals
                    FROM llm_calls WHERE run_id = ? GROUP BY model ORDER BY model""",
                (run_id,),
            ).fetchall()
            improved = dict(
                db.execute(
                    """SELECT c.model, COUNT(*) FROM programs c
                       JOIN programs p ON p.program_id = c.parent_id
                       WHERE c.run_id = ? AND c.iteration > 0 AND c.status = ?
                         AND c.score IS NOT NULL AND p.score IS NOT NULL AND c.score > p.score
                         AND c.model IS NOT NULL
                       GROUP BY c.model""",
                    (run_id, Status.OK),
                ).fetchall()
            )
        total = sum(int(r["calls"]) for r in rows)
        return [
            ModelUse(
                model=r["model"],
                calls=int(r["calls"]),
                failed=int(r["failed"] or 0),
                rejected=int(r["rejected"] or 0),
                tokens=int(r["tokens"] or 0),
                cost_usd=float(r["cost_usd"] or 0.0),
                proposals=int(r["proposals"] or 0),
                improved=int(improved.get(r["model"], 0)),
                share=int(r["calls"]) / total if total else None,
            )
            for r in rows
        ]

    def proposal(self, p: ProgramRow) -> dict:
        """How a program was proposed, as `archive show --json` and the web API say it: its
        call's purpose, temperature and decision, the failed parent it repairs, and the
        replies of its iteration rejected before it (model text: shown as text)."""
        call = self.llm_call(p.llm_call_id) if p.llm_call_id is not None else None
        rejected = self.rejected_calls(p.run_id, p.iteration) if p.iteration > 0 else []
        return {
            "call_id": call.call_id if call else None,
            "purpose": call.purpose if call else None,
            "temperature": call.temperature if call else None,
            "decision": call.decision if call else None,
            "repair_of": p.parent_id if p.kind == "repair" else None,
            "rejected_calls": [
                {
                    "call_id": c.call_id,
                    "model": c.model,
                    "purpose": c.purpose,
                    "temperature": c.temperature,
                    "decision": c.decision,
                    "outcome": c.outcome,
                    "reply": c.reply,
                }
                for c in rejected
            ],
        }

    def run_counts(self) -> dict[str, dict[str, int]]:
        """Per run: its answered LLM calls (`calls`), the rejected ones and its repairs."""
        with self._db() as db:
            outcome = "outcome IS NOT NULL" if "outcome" in _columns(db, "llm_calls") else "0"
            calls = db.execute(
                f"""SELECT run_id, COUNT(reply) AS calls,
                      COALESCE(SUM(reply IS NOT NULL AND {outcome}), 0) AS rejected
                    FROM llm_calls GROUP BY run_id"""
            ).fetchall()
            repairs = dict(
                db.execute(
                    "SELECT run_id, COUNT(*) FROM programs WHERE kind = 'repair' GROUP BY run_id"
                ).fetchall()
            )
            run_ids = [r[0] for r in db.execute("SELECT run_id FROM runs")]
        out = {r: {"calls": 0, "rejected": 0, "repairs": int(repairs.get(r, 0))} for r in run_ids}
        for r in calls:
            if r["run_id"] in out:
                out[r["run_id"]].update(calls=int(r["calls"]), rejected=int(r["rejected"]))
        return out

    def answered_calls(self, run_id: str) -> list[AnsweredCall]:
        """A run's answered calls in the order they were answered (failed attempts left out),
        each with the program its reply became, if any."""
        with self._db() as db:
            cols = {r[1] for r in db.execute("PRAGMA table_info(llm_calls)")}
            outcome = "c.outcome" if "outcome" in cols else "NULL"
            rows = db.execute(
                f"""SELECT c.call_id, {outcome} AS outcome,
                      c.prompt_tokens + c.completion_tokens AS tokens, p.status, p.code_hash,
                      p.score, p.test_score, p.created_at
                    FROM llm_calls c LEFT JOIN programs p
                      ON p.run_id = c.run_id AND p.llm_call_id = c.call_id
                    WHERE c.run_id = ? AND c.reply IS NOT NULL
                    GROUP BY c.call_id ORDER BY c.call_id""",
                (run_id,),
            ).fetchall()
        return [
            AnsweredCall(
                **{
                    **dict(r),
                    "outcome": r["outcome"] and member(CallOutcome, r["outcome"]),
                    "status": r["status"] and member(Status, r["status"]),
                }
            )
            for r in rows
        ]

    def tokens(self, run_id: str) -> int:
        """Prompt and completion tokens of every call of a run, failed attempts included."""
        with self._db() as db:
            r = db.execute(
                "SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM llm_calls"
                " WHERE run_id = ?",
                (run_id,),
            ).fetchone()
        return int(r[0])

    # ---- benchmarks (`evolve bench`) ------------------------------------------------
    def benches(self) -> list[BenchSummary]:
        """Every benchmark, oldest first (none in an archive older than schema 4)."""
        with self._db() as db:
            if not _has_table(db, "bench_runs"):
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
            if not _has_table(db, "bench_runs"):
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
            rows = db.execute(
                "SELECT program_id, to_island, at_iteration FROM migrations WHERE run_id = ?"
                " ORDER BY at_iteration",
                (run_id,),
            ).fetchall()
        return [(r[0], r[1], r[2]) for r in rows]


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def _or_null(
    db: sqlite3.Connection, table: str, cols: tuple[str, ...], prefix: str = ""
) -> list[str]:
    """`cols` of `table` to select, NULL where an older archive lacks one."""
    has = _columns(db, table)
    return [f"{prefix}{c}" if c in has else f"NULL AS {c}" for c in cols]


def _v4_cols(db: sqlite3.Connection) -> list[str]:
    """The schema-4 columns of llm_calls, NULL where an older archive lacks them."""
    return _or_null(db, "llm_calls", CALL_V4_COLS)


def _list_cols(db: sqlite3.Connection) -> str:
    """_LIST_COLS, skip_reason NULL in an archive older than schema 3."""
    if "skip_reason" in _columns(db, "programs"):
        return _LIST_COLS
    return _LIST_COLS.replace(" skip_reason,", " NULL AS skip_reason,")


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        is not None
    )
