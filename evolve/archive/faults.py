"""What goes wrong with a runs dir or its database, said in one line naming the path.

Every fault the archive raises is an ArchiveError (a ValueError), which the command
line prints as that one line and exits 2.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from evolve.archive.private import private_dir


class ArchiveError(ValueError):
    """The runs dir or its database cannot be used: one line naming the path and why."""


class RunBusy(ArchiveError):
    """The run is owned by a live controller."""


class AmbiguousId(ArchiveError):
    """An id prefix that begins more than one run or program."""


def ambiguous(text: str, what: str, ids: list[str]) -> str:
    shown = ", ".join(ids[:5]) + (", ..." if len(ids) > 5 else "")
    return f"{text}: ambiguous, it begins more than one {what} id ({shown})"


def why_unwritable(directory: Path) -> str | None:
    """Why nothing can be written in `directory`, when the file system says so."""
    try:
        st = os.statvfs(directory)
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return "read-only file system"
    if not os.access(directory, os.W_OK):
        return "permission denied"
    if (st.f_bfree if os.geteuid() == 0 else st.f_bavail) == 0:
        return "no space left on the device"
    return None


def describe_fault(path: Path, e: BaseException) -> str:
    """One line naming `path` (the database, a lock file) and what is wrong with it."""
    msg = str(e.strerror if isinstance(e, OSError) and e.strerror else e)
    if "not a database" in msg:
        return f"{path}: not an evolve archive ({msg})"
    if "full" in msg or getattr(e, "errno", None) == errno.ENOSPC:
        return f"{path}: no space left on the device ({msg})"
    why = why_unwritable(path.parent)
    if why is None and path.exists() and not os.access(path, os.R_OK | os.W_OK):
        why = "permission denied"
    return f"{path}: {why} ({msg})" if why and why not in msg.lower() else f"{path}: {msg}"


def check_runs_dir(runs_dir: Path, path: Path, create: bool) -> None:
    """Make sure `runs_dir` is (or can become) a directory holding the database `path`.

    Checked before SQLite sees it, whose own errors name neither the path nor the cause."""
    try:
        if runs_dir.exists() and not runs_dir.is_dir():
            raise ArchiveError(f"{runs_dir}: not a directory")
        if not create and not path.exists():
            raise ArchiveError(f"{runs_dir}: no archive.db there (no run has been started in it)")
        if path.exists() and not path.is_file():
            raise ArchiveError(f"{path}: not a file")
    except OSError as e:
        raise ArchiveError(f"{runs_dir}: {e.strerror or e}") from None
    try:
        private_dir(runs_dir)
    except OSError as e:
        why = e.strerror or str(e)
        raise ArchiveError(f"{runs_dir}: cannot create the runs directory ({why})") from None
