"""A run's meta-notes and search decisions, read one way by the writer (Archive, for the
loop) and the reader (ArchiveReader, for the views), so both name the same rows."""

from __future__ import annotations

import json
import sqlite3

from evolve.archive.summaries import MetaNote, SearchDecision


def meta_notes(db: sqlite3.Connection, run_id: str) -> list[MetaNote]:
    """A run's meta-notes in the order they were written."""
    rows = db.execute(
        "SELECT at_calls, call_id, text, created_at FROM meta_notes WHERE run_id = ?"
        " ORDER BY note_id",
        (run_id,),
    ).fetchall()
    return [MetaNote(r[0], r[1], r[2], r[3]) for r in rows]


def decisions(db: sqlite3.Connection, run_id: str) -> list[SearchDecision]:
    """A run's search decisions in order; a detail whose JSON cannot be read is {}."""
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
