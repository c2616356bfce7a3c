"""A run's owner: the process holding an flock on runs/.locks/<run>.lock (evaluators/local/locks.py).

The OS drops an flock when its process dies, so a crashed controller never leaves a
run locked, and a `running` row whose lock is free belongs to a dead controller.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from evaluators.local import locks
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
        # `archive runs` probing the lock holds it for an instant: 40 tries, 25 ms apart
        fd = locks.try_lock(path, mode=0o644, tries=40, pause_s=0.025)
    except OSError as e:
        raise ArchiveError(describe_fault(path, e)) from None
    return None if fd is None else RunLease(run_id, path, fd)


def is_locked(path: Path) -> bool:
    """Whether a live process holds the lock on `path` (True when it cannot tell: believe
    the row)."""
    return locks.is_locked(path)
