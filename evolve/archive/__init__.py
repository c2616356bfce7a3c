"""The SQLite archive: the single source of truth for every run.

schema: the tables and their migrations; rows: ProgramRow, LlmCall and the statuses
(RunStatus, CallOutcome) they hold; vocab: the words a row holds as StrEnums
(ProgramStatus, ProgramKind, EditFormat, CallPurpose); faults: one-line errors naming the path;
lease: the per-run lock that says who owns a run; ids: how a person names a run or a
program; trees: programs of several files stored by content, each file's text once; store: the Archive, the loop's, whose every state change is one committed
transaction; reader: the ArchiveReader, read-only, for everything else (the command line's
`archive`, the web view, exports and reports); queries: the queries both answer, written
once, so a method of the same name on the two is one query; the reader is built on readonly (the read-only connection,
the columns an older schema lacks), call_queries (its queries over LLM calls) and
board_queries (over the leaderboard); boards: the leaderboard's tables (one private data seed
per problem, the scores under it) and the loop's writes to them; and summaries, what it
answers besides rows.
"""

from evolve.archive.boards import BOARD_CAPTION, BoardScore, Ranked
from evolve.archive.faults import AmbiguousId, ArchiveError, RunBusy, describe_fault
from evolve.archive.lease import LOCK_DIR, RunLease
from evolve.archive.reader import ArchiveReader
from evolve.archive.rows import CallOutcome, LlmCall, ProgramRow, RunStatus
from evolve.archive.schema import MIGRATIONS, SCHEMA, SCHEMA_VERSION
from evolve.archive.store import Archive
from evolve.archive.summaries import RunSummary
from evolve.archive.vocab import CallPurpose, EditFormat, ProgramKind, ProgramStatus

__all__ = [
    "BOARD_CAPTION",
    "LOCK_DIR",
    "MIGRATIONS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "AmbiguousId",
    "Archive",
    "ArchiveReader",
    "ArchiveError",
    "BoardScore",
    "CallOutcome",
    "CallPurpose",
    "EditFormat",
    "LlmCall",
    "ProgramKind",
    "ProgramRow",
    "Ranked",
    "RunBusy",
    "RunLease",
    "RunStatus",
    "RunSummary",
    "ProgramStatus",
    "describe_fault",
]
