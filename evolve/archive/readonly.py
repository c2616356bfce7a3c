"""The archive opened read-only, whatever its schema version: the connection each of
ArchiveReader's queries opens, and the column lists that read an older archive as it is.

An SQLite `mode=ro` connection cannot write, so looking at a run can never change it, even
while its controller is still writing (WAL readers see the last committed state).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from evolve.archive.faults import ArchiveError, check_runs_dir, describe_fault
from evolve.archive.private import private_archive
from evolve.archive.schema import refuse_newer, user_version

# Columns a listing needs: everything but the code, diff and JSON blobs it never shows
# (skip_reason came with schema 3: see list_cols).
LIST_COLS = (
    "program_id, run_id, problem, iteration, island, parent_id, second_parent_id, kind,"
    " edit_kind, model, status, score, test_score, cell, eval_s, llm_call_id, skip_reason,"
    " created_at, metrics_json, scores_json, test_metrics_json, features_json"
)

# The columns schema 4 added to llm_calls: an older archive, read as it is, has none.
CALL_V4_COLS = ("purpose", "outcome", "temperature", "decision")


class ReadOnlyArchive:
    """`<runs_dir>/archive.db` opened read-only; each query uses its own connection,
    so one reader serves many threads (a web server's workers)."""

    def __init__(self, runs_dir: str | Path):
        self.runs_dir = Path(runs_dir)
        self.path = self.runs_dir / "archive.db"
        check_runs_dir(self.runs_dir, self.path, create=False)
        private_archive(self.runs_dir, self.path, create=False)  # an older evolve's 0644
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


def columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {r[1] for r in db.execute(f"PRAGMA table_info({table})")}


def or_null(
    db: sqlite3.Connection, table: str, cols: tuple[str, ...], prefix: str = ""
) -> list[str]:
    """`cols` of `table` to select, NULL where an older archive lacks one."""
    has = columns(db, table)
    return [f"{prefix}{c}" if c in has else f"NULL AS {c}" for c in cols]


def v4_cols(db: sqlite3.Connection) -> list[str]:
    """The schema-4 columns of llm_calls, NULL where an older archive lacks them."""
    return or_null(db, "llm_calls", CALL_V4_COLS)


def list_cols(db: sqlite3.Connection) -> str:
    """LIST_COLS, skip_reason NULL in an archive older than schema 3."""
    if "skip_reason" in columns(db, "programs"):
        return LIST_COLS
    return LIST_COLS.replace(" skip_reason,", " NULL AS skip_reason,")


def has_table(db: sqlite3.Connection, name: str) -> bool:
    return (
        db.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchone()
        is not None
    )
