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
    data_seed: int | None = None  # the private seed of its workloads (None: public data)

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
    # schema 4 (None in older archives): what the call was for and what became of it
    purpose: str | None = None  # mutation | crossover | repair | resample | meta
    outcome: str | None = None  # None: its reply was used; rejected_duplicate
    temperature: float | None = None
    decision: str | None = None  # why this model and temperature

    @property
    def category(self) -> str:
        """What the call was, as the run page's charts colour it: a failed attempt, a
        rejected reply, else its purpose (one of CALL_CATEGORIES, whatever the row holds)."""
        if self.error is not None:
            return "failed attempt"
        if self.outcome is not None:
            return "rejected duplicate" if self.outcome == "rejected_duplicate" else "rejected"
        if self.purpose is None:
            return "not recorded"
        return self.purpose if self.purpose in PURPOSES else "other"


# What an LLM call can be for (llm_calls.purpose), and every category a call is shown as.
PURPOSES = ("mutation", "crossover", "repair", "resample", "meta")
CALL_CATEGORIES = (
    *PURPOSES,
    "rejected duplicate",
    "rejected",
    "failed attempt",
    "not recorded",
    "other",
)
# The columns schema 4 added to llm_calls: an older archive, read as it is, has none.
CALL_V4_COLS = ("purpose", "outcome", "temperature", "decision")


@dataclass
class MetaNote:
    """Advice a call wrote after `at_calls` answered calls; later prompts carry it. Written
    by a model: shown as text."""

    at_calls: int
    call_id: int | None
    text: str
    created_at: float


@dataclass
class SearchDecision:
    """A search decision (kind `stagnation`: detail holds model, calls, island, from,
    after); detail is {} when its JSON cannot be read."""

    at_done: int
    kind: str
    detail: dict
    created_at: float


@dataclass
class ModelUse:
    """One model's share of a run: answered calls (failed attempts apart), tokens, and the
    bandit's reward proxy, children better than their parent per proposing call."""

    model: str
    calls: int  # answered
    failed: int  # failed attempts (each retried or given up)
    rejected: int  # answered, the reply repeated a program of the run
    tokens: int  # every attempt's prompt + completion tokens
    cost_usd: float
    proposals: int  # answered calls that proposed a program (meta-notes calls do not)
    improved: int  # its children better than their parent
    share: float | None  # of the run's answered calls

    @property
    def reward(self) -> float | None:
        return None if not self.proposals else self.improved / self.proposals


@dataclass
class CallCounts:
    """A run's LLM calls and what became of them, and the programs made by repairs."""

    answered: int
    failed: int  # failed attempts
    rejected: int  # answered calls whose reply repeated a program (rejected_duplicate)
    repairs: int  # programs made by a call that fixed a failed parent
    repairs_ok: int  # of those, the ones that scored
    by_purpose: dict[str, int]  # answered calls; "not recorded" before schema 4
    by_outcome: dict[str, int]  # every call: used, rejected_duplicate, failed attempt


@dataclass
class AnsweredCall:
    """One answered LLM call of a run and the program its reply became (`status` None: none,
    as for a reply rejected as a clone, or one that was no proposal)."""

    call_id: int
    outcome: str | None  # NULL, or rejected_duplicate (archives before v4: always NULL)
    tokens: int
    status: str | None
    code_hash: str | None
    score: float | None
    test_score: float | None
    created_at: float | None  # the program's


@dataclass
class BenchSummary:
    """One `evolve bench` invocation, as the list of benchmarks shows it."""

    bench_id: str
    model: str
    calls: int
    problems: list[str]
    runs: int
    created_at: float


@dataclass
class BenchRun:
    """One run of a benchmark: a row of `bench_runs`, its result decoded."""

    bench_id: str
    problem: str
    seed: int
    run_id: str
    model: str
    calls: int
    result: dict
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
        with self._db() as db:
            cols = (
                "*"
                if prompts
                else "call_id, run_id, iteration, island, model, edit_format, '[]' AS prompt_json,"
                " NULL AS reply, error, prompt_tokens, completion_tokens, cost_usd, latency_s,"
                " created_at, " + ", ".join(_v4_cols(db))
            )
            rows = db.execute(
                f"SELECT {cols} FROM llm_calls WHERE run_id = ? ORDER BY call_id", (run_id,)
            ).fetchall()
        return [_call(r) for r in rows]

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
        return [_call(r) for r in rows]

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
                "SELECT COUNT(*), COALESCE(SUM(status = 'ok'), 0) FROM programs"
                " WHERE run_id = ? AND kind = 'repair'",
                (run_id,),
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
            rejected += n if r["outcome"] == "rejected_duplicate" else 0
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
                       WHERE c.run_id = ? AND c.iteration > 0 AND c.status = 'ok'
                         AND c.score IS NOT NULL AND p.score IS NOT NULL AND c.score > p.score
                         AND c.model IS NOT NULL
                       GROUP BY c.model""",
                    (run_id,),
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
        return [AnsweredCall(**dict(r)) for r in rows]

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


def _v4_cols(db: sqlite3.Connection) -> list[str]:
    """The schema-4 columns of llm_calls, NULL where an older archive lacks them."""
    has = _columns(db, "llm_calls")
    return [c if c in has else f"NULL AS {c}" for c in CALL_V4_COLS]


def _has_table(db: sqlite3.Connection, name: str) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        is not None
    )


def _call(r: sqlite3.Row) -> LlmCall:
    d = {k: r[k] for k in r.keys() if k not in ("parent_id", "second_parent_id")}
    d["prompt"] = json.loads(d.pop("prompt_json") or "[]")
    return LlmCall(**d)
