"""A run's owner: the process holding an flock on runs/.locks/<run>.lock (evaluators/locks.py).

The OS drops an flock when its process dies, so a crashed controller never leaves a
run locked, and a `running` row whose lock is free belongs to a dead controller.

Deleting the locks folder (or the lock file) under a live controller leaves it holding a
lock on a file no one else can open: a new file of the same name locks at once. So the
row's owner is asked too: a process on this machine with the row's pid that holds an
flock (Linux's /proc/locks) is a live owner, whatever happened to its lock file.
"""

from __future__ import annotations

import hashlib
import os
import re
import socket
from dataclasses import dataclass
from pathlib import Path

from evaluators import locks
from evolve.archive.faults import ArchiveError, describe_fault
from evolve.archive.private import FILE_MODE, private_dir, tighten

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
        private_dir(path.parent)
        tighten(path, FILE_MODE)  # one an older evolve made 0644
        # `archive runs` probing the lock holds it for an instant: 40 tries, 25 ms apart
        fd = locks.try_lock(path, mode=FILE_MODE, tries=40, pause_s=0.025)
    except OSError as e:
        raise ArchiveError(describe_fault(path, e)) from None
    return None if fd is None else RunLease(run_id, path, fd)


def is_locked(path: Path) -> bool:
    """Whether a live process holds the lock on `path` (True when it cannot tell: believe
    the row)."""
    return locks.is_locked(path)


def owner_holds_lock(owner_pid: object, owner_host: object) -> bool:
    """Whether the process a run's row names (its pid, on this host) is alive and holds an
    flock: a live controller whose lock file was deleted. False where it cannot tell (no
    /proc/locks) or the owner is on another host, as before."""
    if not isinstance(owner_pid, int) or owner_pid == os.getpid():
        return False
    if owner_host != socket.gethostname():
        return False
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        return False
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1201 fe:00:9805846 0 EOF" ("->" marks a waiter)
        if len(fields) >= 5 and fields[1] == "FLOCK" and fields[4] == str(owner_pid):
            return True
    return False
