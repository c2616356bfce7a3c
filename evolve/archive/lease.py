"""A run's owner: the process holding an flock on runs/.locks/<run>.lock.

The OS drops an flock when its process dies, so a crashed controller never leaves a
run locked, and a `running` row whose lock is free belongs to a dead controller.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

from evolve.archive.faults import ArchiveError, describe_fault

LOCK_DIR = ".locks"  # under the runs dir: one lock file per run, held by its controller
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


@dataclass
class RunLease:
    """This process's ownership of one run: an exclusive flock the OS drops when it dies."""

    run_id: str
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the only descriptor drops the lock
            self.fd = -1


def lock_file(runs_dir: Path, run_id: str) -> Path:
    """The run's lock file; an id unfit for a file name is hashed."""
    name = (
        run_id
        if _SAFE_NAME.fullmatch(run_id)
        else "id-" + hashlib.sha256(run_id.encode()).hexdigest()[:32]
    )
    return runs_dir / LOCK_DIR / f"{name}.lock"


def try_lock(run_id: str, path: Path) -> RunLease | None:
    """Lock `path` for `run_id`, or None while another process holds it.

    The lock file is never deleted: unlinking a lock file lets two processes
    each lock a different file of the same name."""
    try:
        path.parent.mkdir(exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as e:
        raise ArchiveError(describe_fault(path, e)) from None
    for _ in range(40):  # `archive runs` probing the lock holds it for an instant
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return RunLease(run_id, path, fd)
        except BlockingIOError:
            time.sleep(0.025)
    os.close(fd)
    return None


def is_locked(path: Path) -> bool:
    """Whether a live process holds the lock on `path`."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True  # cannot tell: believe the row
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False
