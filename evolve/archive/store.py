"""The Archive: one SQLite database, the single source of truth for every run.

Every state change is one committed transaction, so a controller killed at
any instant leaves a database from which `resume` rebuilds everything else
(population, islands, budgets) without losing or repeating work.

A run has one owner, the controller holding its lock (see lease.py), whose pid and
host the run's row records. A `running` row whose lock is free shows as `interrupted`.

The Archive is the loop's (the controller, `evolve run`/`resume`, `evolve bench`): every
other reader of the archive goes through the read-only ArchiveReader (reader.py).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evolve.archive import ids, queries
from evolve.archive.boards import BoardStore
from evolve.archive.faults import ArchiveError, RunBusy, check_runs_dir, describe_fault
from evolve.archive.lease import RunLease, is_locked, lock_file, owner_holds_lock, try_lock
from evolve.archive.private import private_archive
from evolve.archive.rows import (
    CallOutcome,
    LlmCall,
    ProgramRow,
    ProgramStatus,
    RunStatus,
    call_insert,
    insert_statement,
    row_to_call,
)
from evolve.archive.schema import SCHEMA_VERSION, refuse_newer, upgrade, user_version
from evolve.archive.summaries import MetaNote, SearchDecision
from evolve.archive.trees import store
from evolve.archive.vocab import CallPurpose, ProgramKind


class Archive(BoardStore):
    """One database for all runs under a runs dir (the leaderboard's writes: BoardStore).

    Opening it checks the runs dir and the schema: a newer archive is refused, an
    older one migrated in one transaction. Faults raise ArchiveError (one line)."""

    def __init__(self, runs_dir: str | Path, create: bool = True):
        self.runs_dir = Path(runs_dir)
        self.path = self.runs_dir / "archive.db"
        check_runs_dir(self.runs_dir, self.path, create)
        private_archive(self.runs_dir, self.path, create)  # 0700 / 0600, before SQLite makes it
        try:
            self.db = sqlite3.connect(self.path, isolation_level=None, timeout=30.0)
        except sqlite3.Error as e:
            raise ArchiveError(describe_fault(self.path, e)) from None
        try:
            self.db.row_factory = sqlite3.Row
            self._open()
            private_archive(self.runs_dir, self.path, create=False)  # the -wal and -shm too
        except sqlite3.Error as e:
            self.db.close()
            raise ArchiveError(describe_fault(self.path, e)) from None
        except BaseException:
            self.db.close()
            raise

    def _open(self) -> None:
        refuse_newer(self.path, user_version(self.db))  # before writing, even the journal mode
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        if user_version(self.db) != SCHEMA_VERSION:
            with self.tx() as db:
                upgrade(db, self.path)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            if self.db.in_transaction:  # SQLite may have rolled back already (a full disk)
                try:
                    self.db.execute("ROLLBACK")
                except sqlite3.Error:
                    pass  # the error that got us here is the one worth reporting
            raise
        self.db.execute("COMMIT")

    # ---- ownership ----------------------------------------------------------
    def lock_path(self, run_id: str) -> Path:
        return lock_file(self.runs_dir, run_id)

    def claim(self, run_id: str) -> RunLease:
        """Own `run_id` until release() or this process's death, or raise RunBusy."""
        path = self.lock_path(run_id)
        lease = try_lock(run_id, path)
        run = self.get_run(run_id) or {}
        pid, host = run.get("owner_pid"), run.get("owner_host")
        owner = f"pid {pid} on host {host}" if pid else "another process"
        if lease is None:
            raise RunBusy(
                f"run {run_id} is in progress, owned by {owner} (lock {path});"
                " stop it first or wait for it to end"
            )
        if run.get("status") == RunStatus.RUNNING and owner_holds_lock(pid, host):
            lease.release()  # its lock file was deleted under it: it owns the run all the same
            raise RunBusy(
                f"run {run_id} is in progress, owned by {owner}, whose lock file {path} was"
                " removed; stop it first or wait for it to end"
            )
        return lease

    def owner_alive(self, run_id: str) -> bool:
        """Whether a live process holds the run's lock (False: a `running` row is stale)."""
        if is_locked(self.lock_path(run_id)):
            return True
        run = self.get_run(run_id) or {}
        return owner_holds_lock(run.get("owner_pid"), run.get("owner_host"))

    # ---- runs -------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        problem: str,
        problem_dir: str,
        config: dict,
        target: int,
        data_seed: int | None = None,
    ) -> None:
        """A new run, owned by this process (call claim() first). `data_seed`: the private
        seed its generated workloads are drawn from, kept so resume and re-scoring are exact."""
        now = time.time()
        with self.tx() as db:
            db.execute(
                "INSERT INTO runs (run_id, problem, problem_dir, config_json, status, stop_reason,"
                " iterations_target, created_at, updated_at, owner_pid, owner_host, data_seed)"
                " VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run_id,
                    problem,
                    problem_dir,
                    json.dumps(config),
                    RunStatus.RUNNING,
                    None,
                    target,
                    now,
                    now,
                    os.getpid(),
                    socket.gethostname(),
                    data_seed,
                ),
            )

    def take_over(self, run_id: str, target: int, config: dict) -> None:
        """Mark a run `running` under this process (call claim() first)."""
        with self.tx() as db:
            db.execute(
                "UPDATE runs SET status=?, stop_reason=NULL, updated_at=?,"
                " iterations_target=?, config_json=?, owner_pid=?, owner_host=? WHERE run_id=?",
                (
                    RunStatus.RUNNING,
                    time.time(),
                    target,
                    json.dumps(config),
                    os.getpid(),
                    socket.gethostname(),
                    run_id,
                ),
            )

    def settle_run(self, run_id: str, status: RunStatus, reason: str | None) -> bool:
        """End a run this process still has `running`; False when it was already ended."""
        with self.tx() as db:
            cur = db.execute(
                "UPDATE runs SET status=?, stop_reason=?, updated_at=? WHERE run_id=?"
                " AND status=? AND owner_pid=? AND owner_host=?",
                (
                    status,
                    reason,
                    time.time(),
                    run_id,
                    RunStatus.RUNNING,
                    os.getpid(),
                    socket.gethostname(),
                ),
            )
            return cur.rowcount > 0

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
        status: RunStatus,
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

    def resolve_run(self, text: str) -> str | None:
        """The run id `text` names: itself, or the one run id it is a prefix of."""
        return ids.resolve_run(self.db, text)

    # ---- programs ---------------------------------------------------------
    def insert_program(self, p: ProgramRow) -> None:
        with self.tx() as db:
            code, code_files = store(db, p.program_id, p.code)  # a tree: by its files
            db.execute(*insert_statement(p, code, code_files))

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

    def skip_parent(self, program_id: str, reason: str) -> None:
        """Record why a program is no longer picked as a parent (a resume reads it back)."""
        with self.tx() as db:
            db.execute("UPDATE programs SET skip_reason=? WHERE program_id=?", (reason, program_id))

    def set_test_result(self, program_id: str, score: float | None, metrics: dict) -> None:
        with self.tx() as db:
            db.execute(
                "UPDATE programs SET test_score=?, test_metrics_json=? WHERE program_id=?",
                (score, json.dumps(metrics), program_id),
            )

    def programs(
        self,
        run_id: str,
        after_iteration: int = -1,
        code: bool = False,
        pending: bool | None = None,
    ) -> list[ProgramRow]:
        """A run's programs by iteration (queries.programs)."""
        return queries.programs(self.db, run_id, after_iteration, code, pending)

    def finished_count(self, run_id: str) -> int:
        """The run's iterations done: the model's candidates (not the seed, not a tuned
        child) no longer pending."""
        r = self.db.execute(
            "SELECT COUNT(*) FROM programs WHERE run_id=? AND iteration>0 AND status!=?"
            " AND kind!=?",
            (run_id, ProgramStatus.PENDING, ProgramKind.TUNE),
        ).fetchone()
        return int(r[0])

    def tuned_count(self, run_id: str) -> int:
        """The run's tuned children (evolve/search/tune.py), evaluated or not."""
        r = self.db.execute(
            "SELECT COUNT(*) FROM programs WHERE run_id=? AND kind=?", (run_id, ProgramKind.TUNE)
        ).fetchone()
        return int(r[0])

    def iterations(self, run_id: str) -> set[int]:
        return {
            r[0]
            for r in self.db.execute("SELECT iteration FROM programs WHERE run_id=?", (run_id,))
        }

    def program(self, program_id: str) -> ProgramRow | None:
        """The program with exactly this id (queries.program)."""
        return queries.program(self.db, program_id)

    def hash_seen(self, run_id: str, code_hash: str) -> str | None:
        r = self.db.execute(
            "SELECT program_id FROM programs WHERE run_id=? AND code_hash=? AND status!=? LIMIT 1",
            (run_id, code_hash, ProgramStatus.DUPLICATE),
        ).fetchone()
        return r[0] if r else None

    def best(self, run_id: str | None = None, problem: str | None = None) -> ProgramRow | None:
        """The best evaluated program of a run or a problem (queries.best)."""
        return queries.best(self.db, run_id, problem)

    # ---- LLM calls and migrations ------------------------------------------
    def insert_llm_call(self, call: LlmCall) -> int:
        """Store one call (answered or failed); its call_id. `call` gets its call_id and
        created_at (now, unless set)."""
        call.created_at = call.created_at or time.time()
        with self.tx() as db:
            cur = db.execute(*call_insert(call))
            assert cur.lastrowid is not None  # set by the INSERT
            call.call_id = cur.lastrowid
            return cur.lastrowid

    def reject_call(self, call_id: int, outcome: CallOutcome) -> None:
        """The call's reply did not become its iteration's program (it repeated one)."""
        with self.tx() as db:
            db.execute("UPDATE llm_calls SET outcome=? WHERE call_id=?", (outcome, call_id))

    def rejected_call_count(self, run_id: str, iteration: int) -> int:
        r = self.db.execute(
            "SELECT COUNT(*) FROM llm_calls WHERE run_id=? AND iteration=? AND outcome IS NOT NULL",
            (run_id, iteration),
        ).fetchone()
        return int(r[0])

    def rejected_by_model(self, run_id: str) -> list[str]:
        """The model of each rejected call (the bandit counts them as calls that gave nothing)."""
        rows = self.db.execute(
            "SELECT model FROM llm_calls WHERE run_id=? AND outcome IS NOT NULL ORDER BY call_id",
            (run_id,),
        ).fetchall()
        return [r[0] for r in rows]

    def repair_parents(self, run_id: str) -> set[str]:
        """The failed programs a repair call was made for (answered or not)."""
        rows = self.db.execute(
            "SELECT DISTINCT parent_id FROM llm_calls WHERE run_id=? AND purpose=?",
            (run_id, CallPurpose.REPAIR),
        ).fetchall()
        return {r[0] for r in rows}

    def unconsumed_replies(self, run_id: str) -> list[LlmCall]:
        """Replies received before a crash whose iteration has no program yet (a rejected
        reply or a meta-note is not an iteration's reply)."""
        rows = self.db.execute(
            """SELECT c.* FROM llm_calls c WHERE c.run_id=? AND c.reply IS NOT NULL
               AND c.outcome IS NULL AND COALESCE(c.purpose, '') != ?
               AND NOT EXISTS (SELECT 1 FROM programs p WHERE p.run_id=c.run_id AND p.iteration=c.iteration)
               AND c.call_id = (SELECT MAX(call_id) FROM llm_calls c2 WHERE c2.run_id=c.run_id
                                AND c2.iteration=c.iteration AND c2.reply IS NOT NULL)
               ORDER BY c.iteration""",
            (run_id, CallPurpose.META),
        ).fetchall()
        return [row_to_call(r) for r in rows]

    def agent_turns(self, run_id: str, iteration: int) -> list[LlmCall]:
        """The answered turns of an agent iteration, in order (queries.agent_turns)."""
        return queries.agent_turns(self.db, run_id, iteration)

    # ---- meta-notes and search decisions -------------------------------------
    def meta_calls(self, run_id: str) -> list[dict]:
        """Every answered meta-notes call, with its note if one was stored."""
        rows = self.db.execute(
            """SELECT c.call_id, c.reply, n.text FROM llm_calls c
               LEFT JOIN meta_notes n ON n.call_id = c.call_id
               WHERE c.run_id=? AND c.purpose=? AND c.reply IS NOT NULL
               ORDER BY c.call_id""",
            (run_id, CallPurpose.META),
        ).fetchall()
        return [dict(r) for r in rows]

    def add_meta_note(self, run_id: str, at_calls: int, call_id: int, text: str) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO meta_notes (run_id, at_calls, call_id, text, created_at)"
                " VALUES (?,?,?,?,?)",
                (run_id, at_calls, call_id, text, time.time()),
            )

    def meta_notes(self, run_id: str) -> list[MetaNote]:
        return queries.meta_notes(self.db, run_id)

    def add_decision(self, run_id: str, at_done: int, kind: str, detail: dict) -> None:
        with self.tx() as db:
            db.execute(
                "INSERT INTO decisions (run_id, at_done, kind, detail_json, created_at)"
                " VALUES (?,?,?,?,?)",
                (run_id, at_done, kind, json.dumps(detail), time.time()),
            )

    def decisions(self, run_id: str) -> list[SearchDecision]:
        return queries.decisions(self.db, run_id)

    def usage(self, run_id: str) -> dict:
        r = self.db.execute(
            """SELECT COUNT(*) AS calls, COUNT(reply) AS answered,
                      COALESCE(SUM(prompt_tokens),0) AS prompt_tokens,
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
        return queries.migrations(self.db, run_id)

    # ---- benchmarks (`evolve bench`) ------------------------------------------
    def add_bench_run(
        self,
        bench_id: str,
        problem: str,
        seed: int,
        run_id: str,
        model: str,
        calls: int,
        result: dict,
    ) -> None:
        """One run of a benchmark and what it measured (replaced if measured again)."""
        with self.tx() as db:
            db.execute(
                """INSERT OR REPLACE INTO bench_runs (bench_id, problem, seed, run_id, model,
                   calls, result_json, created_at) VALUES (?,?,?,?,?,?,?,?)""",
                (bench_id, problem, seed, run_id, model, calls, json.dumps(result), time.time()),
            )

    def bench_exists(self, bench_id: str) -> bool:
        r = self.db.execute("SELECT 1 FROM bench_runs WHERE bench_id=? LIMIT 1", (bench_id,))
        return r.fetchone() is not None
