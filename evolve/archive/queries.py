"""The queries the writer (Archive, store.py) and the reader (ArchiveReader, reader.py) both
answer, written once: each takes the connection, so a method of the same name on the two
classes is one query with one signature and means one thing.

Each reads an archive of any schema the reader opens (an older one lacks a table or a column:
the answer is then empty), so the writer, whose archive is always current, asks the same.
"""

from __future__ import annotations

import json
import sqlite3

from evolve.archive.readonly import columns, has_table, list_cols
from evolve.archive.rows import LlmCall, ProgramRow, ProgramStatus, row_to_call
from evolve.archive.summaries import MetaNote, SearchDecision
from evolve.archive.trees import load
from evolve.archive.vocab import CallPurpose


# ---- programs ----------------------------------------------------------------------------
def programs(
    db: sqlite3.Connection,
    run_id: str,
    after_iteration: int = -1,
    code: bool = False,
    pending: bool | None = None,
) -> list[ProgramRow]:
    """A run's programs by iteration (those after `after_iteration`): all, or only the pending
    (True) or the finished ones (False). Without code, diffs and artifacts unless `code`, so
    listing 10,000 of them stays cheap."""
    sql, args = "WHERE run_id = ? AND iteration > ?", [run_id, after_iteration]
    if pending is not None:
        sql += " AND status = ?" if pending else " AND status != ?"
        args.append(ProgramStatus.PENDING)
    cols = "*" if code else list_cols(db)
    rows = db.execute(f"SELECT {cols} FROM programs {sql} ORDER BY iteration", args).fetchall()
    return load(db, rows)


def program(db: sqlite3.Connection, program_id: str) -> ProgramRow | None:
    """The program with exactly this id, with its code."""
    r = db.execute("SELECT * FROM programs WHERE program_id = ?", (program_id,)).fetchone()
    return load(db, [r])[0] if r is not None else None


def best(
    db: sqlite3.Connection, run_id: str | None = None, problem: str | None = None
) -> ProgramRow | None:
    """The best evaluated program of a run, of a problem or of both (the earliest of equals)."""
    sql = "SELECT * FROM programs WHERE status = ? AND score IS NOT NULL"
    args: list[str] = [ProgramStatus.OK]
    if problem:
        sql += " AND problem = ?"
        args.append(problem)
    if run_id:
        sql += " AND run_id = ?"
        args.append(run_id)
    r = db.execute(sql + " ORDER BY score DESC, created_at LIMIT 1", args).fetchone()
    return load(db, [r])[0] if r else None


def migrations(db: sqlite3.Connection, run_id: str) -> list[tuple[str, int, int]]:
    """A run's island migrations (program id, to island, at iteration) in order."""
    rows = db.execute(
        "SELECT program_id, to_island, at_iteration FROM migrations WHERE run_id = ?"
        " ORDER BY at_iteration",
        (run_id,),
    ).fetchall()
    return [(r[0], r[1], r[2]) for r in rows]


# ---- what the search made of the calls ---------------------------------------------------
def meta_notes(db: sqlite3.Connection, run_id: str) -> list[MetaNote]:
    """A run's meta-notes in the order they were written."""
    if not has_table(db, "meta_notes"):
        return []
    rows = db.execute(
        "SELECT at_calls, call_id, text, created_at FROM meta_notes WHERE run_id = ?"
        " ORDER BY note_id",
        (run_id,),
    ).fetchall()
    return [MetaNote(r[0], r[1], r[2], r[3]) for r in rows]


def decisions(db: sqlite3.Connection, run_id: str) -> list[SearchDecision]:
    """A run's search decisions (stagnation bursts, island restarts) in order; a detail whose
    JSON cannot be read is {}."""
    if not has_table(db, "decisions"):
        return []
    rows = db.execute(
        "SELECT at_done, kind, detail_json, created_at FROM decisions WHERE run_id = ?"
        " ORDER BY decision_id",
        (run_id,),
    ).fetchall()
    out = []
    for at_done, kind, detail_json, created_at in rows:
        try:
            detail = json.loads(detail_json or "{}")
        except ValueError:
            detail = {}
        out.append(
            SearchDecision(at_done, kind, detail if isinstance(detail, dict) else {}, created_at)
        )
    return out


def agent_turns(db: sqlite3.Connection, run_id: str, iteration: int) -> list[LlmCall]:
    """The answered turns of an agent iteration (purpose `agent`), with prompts and replies,
    in order."""
    if "purpose" not in columns(db, "llm_calls"):
        return []
    rows = db.execute(
        "SELECT * FROM llm_calls WHERE run_id = ? AND iteration = ? AND purpose = ?"
        " AND reply IS NOT NULL AND outcome IS NULL ORDER BY call_id",
        (run_id, iteration, CallPurpose.AGENT),
    ).fetchall()
    return [row_to_call(r) for r in rows]
