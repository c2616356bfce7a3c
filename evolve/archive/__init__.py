"""The SQLite archive: the single source of truth for every run.

schema: the tables and their migrations; rows: ProgramRow and its columns; faults:
one-line errors naming the path; lease: the per-run lock that says who owns a run;
store: the Archive, whose every state change is one committed transaction; reader: the
ArchiveReader, read-only, for the web view, exports and reports.
"""

from evolve.archive.faults import AmbiguousId, ArchiveError, RunBusy, describe_fault
from evolve.archive.lease import LOCK_DIR, RunLease
from evolve.archive.reader import ArchiveReader, LlmCall, RunSummary
from evolve.archive.rows import ProgramRow
from evolve.archive.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION
from evolve.archive.store import Archive

__all__ = [
    "LOCK_DIR",
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "AmbiguousId",
    "Archive",
    "ArchiveReader",
    "ArchiveError",
    "LlmCall",
    "ProgramRow",
    "RunBusy",
    "RunLease",
    "RunSummary",
    "describe_fault",
]
