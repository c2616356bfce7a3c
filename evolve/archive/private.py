"""The runs folder and its archive are private to their owner: folder 0700, files 0600.

Why: archive.db holds every run's data seed, held-out scores and prompts; a candidate
that runs as another uid (the local fallback's slot uids) or any other user of the
machine must not read it. New ones are created so; existing ones owned by us are
tightened each time the archive is opened (an archive made by an older evolve).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

DIR_MODE = 0o700
FILE_MODE = 0o600
# SQLite's companions of the database: the write-ahead log, its index, a rollback journal
COMPANIONS = ("-wal", "-shm", "-journal")


def tighten(path: Path, mode: int) -> None:
    """chmod `path` to `mode` if it is ours and looser; anything else is left alone
    (another user's runs folder read through `--runs-dir`, a file that just went)."""
    try:
        st = os.stat(path, follow_symlinks=False)
        if st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & ~mode:
            os.chmod(path, stat.S_IMODE(st.st_mode) & mode)
    except (OSError, NotImplementedError):
        pass


def private_dir(path: Path) -> None:
    """Make the folder `path` (mode 0700) if missing, and tighten it if it is ours."""
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    tighten(path, DIR_MODE)


def private_archive(runs_dir: Path, db: Path, create: bool) -> None:
    """The runs folder 0700 and the database with its companions 0600; with `create`, a
    missing database is created empty with mode 0600 first, before SQLite makes it with
    the umask's mode (SQLite gives the -wal and -shm files the database's mode)."""
    tighten(runs_dir, DIR_MODE)
    if create:
        try:
            os.close(os.open(db, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))
        except FileExistsError:
            pass
        except OSError:
            pass  # SQLite reports why it cannot create it, naming the file
    for path in (db, *(db.with_name(db.name + s) for s in COMPANIONS)):
        tighten(path, FILE_MODE)
