"""How a person names a run or a program: the exact id, a unique prefix of one, or (for a
program) RUN:ITERATION. One resolution, used by the Archive (resume) and the ArchiveReader
(every `evolve archive` command) on their own connections."""

from __future__ import annotations

import re
import sqlite3

from evolve.archive.faults import AmbiguousId, ambiguous


def resolve_run(db: sqlite3.Connection, text: str) -> str | None:
    """The run id `text` names: itself, or the one run id it is a prefix of."""
    if db.execute("SELECT 1 FROM runs WHERE run_id=?", (text,)).fetchone():
        return text
    ids = _prefixed(db, "runs", "run_id", text)
    if len(ids) > 1:
        raise AmbiguousId(ambiguous(text, "run", ids))
    return ids[0] if ids else None


def resolve_program(db: sqlite3.Connection, text: str) -> str | None:
    """The id of the program `text` names, as a person types it: the exact id; RUN:ITERATION
    with RUN a unique prefix of a run id (the iteration is never a prefix: r:1 is not
    r:12); or a unique prefix of one program id. AmbiguousId otherwise."""
    if db.execute("SELECT 1 FROM programs WHERE program_id=?", (text,)).fetchone():
        return text
    m = re.fullmatch(r"(.+):(\d+)", text)
    if m:
        run_id = resolve_run(db, m.group(1))
        return f"{run_id}:{int(m.group(2))}" if run_id else None
    ids = _prefixed(db, "programs", "program_id", text)
    if len(ids) > 1:
        raise AmbiguousId(ambiguous(text, "program", ids))
    return ids[0] if ids else None


def _prefixed(db: sqlite3.Connection, table: str, col: str, prefix: str) -> list[str]:
    """Up to 6 values of `col` that begin with `prefix` (literally: no wildcards)."""
    rows = db.execute(
        f"SELECT {col} FROM {table} WHERE substr({col}, 1, ?) = ? ORDER BY {col} LIMIT 6",
        (len(prefix), prefix),
    ).fetchall()
    return [r[0] for r in rows] if prefix else []
