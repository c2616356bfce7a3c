"""Per-slot uids for LocalSandbox: one uid per concurrent evaluation, exclusive across processes.

Why a dedicated uid per concurrent slot: RLIMIT_NPROC counts the tasks of a
*real uid*, and a uid is the one handle that finds everything an evaluation
started (a daemon that calls setsid leaves the process group, never its uid).
As root the child drops to that uid completely, with no capability left
(exec_chain.py does it): it cannot read what others may not, write outside its
own files, signal other users' processes or regain root; an interpreter or
problem it could not walk to (under /root, mode 0700) is linked where it can
(reachable.py). Without root there is no uid to switch to (`uid_slot` gives
None) and process_tree.py finds a launch's processes by a token instead. A slot
is held by a lock file (locks.py), so two controllers never share a uid.
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psutil

from evaluators import locks
from evaluators.local.process_tree import kill_all

UID_BASE = 61000  # slot i runs candidates as uid/gid UID_BASE + i, its score() as + UID_SLOTS
UID_SLOTS = 512
LOCK_DIR = "/run/evolve-sandbox"  # per-uid lock files: a slot is exclusive across processes
OWNED_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def is_root() -> bool:
    return os.geteuid() == 0


def tasks_of_uid(uid: int) -> int:
    """Threads of all processes of a real uid: what RLIMIT_NPROC counts."""
    n = 0
    for pid in psutil.pids():  # not process_iter(): its shared cache is not thread-safe
        try:
            p = psutil.Process(pid)
            with p.oneshot():
                if p.uids().real == uid:
                    n += p.num_threads()
        except psutil.Error:
            pass
    return n


def remove_owned(uid: int, dirs: tuple[str, ...] = OWNED_TMP_DIRS) -> None:
    """Delete what the slot uid left at the top of shared temp dirs: a controller killed
    mid-run leaves it behind, and only the holder of the uid's lock can be using it."""
    for d in dict.fromkeys(dirs):
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if e.is_dir(follow_symlinks=False):
                    shutil.rmtree(e.path, ignore_errors=True)
                else:
                    os.unlink(e.path)
            except OSError:
                pass


def score_uid(uid: int) -> int:
    """The uid of a slot's trusted score() process: never the candidate's own."""
    return uid + UID_SLOTS


class _UidPool:
    """Process-wide pool of slot uids; a lock file makes a uid exclusive across processes too."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: dict[int, int] = {}  # uid -> lock file fd
        self._swept: set[int] = set()

    def acquire(self) -> int:
        os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
        with self._lock:
            for uid in range(UID_BASE, UID_BASE + UID_SLOTS):
                if uid in self._held:
                    continue
                fd = locks.try_lock(f"{LOCK_DIR}/{uid}.lock", mode=0o600)
                if fd is None:
                    continue
                self._held[uid] = fd
                break
            else:
                raise RuntimeError(f"all {UID_SLOTS} sandbox uids are in use")
            fresh = uid not in self._swept
            self._swept.add(uid)
        if fresh:  # a crashed earlier run may have left processes under these uids
            kill_all(None, uid, None)
            kill_all(None, score_uid(uid), None)
        return uid

    def release(self, uid: int) -> None:
        with self._lock:
            os.close(self._held.pop(uid))  # closing drops the lock


_POOL = _UidPool()


@contextmanager
def uid_slot() -> Iterator[int | None]:
    """A uid for one evaluation when root, else None (no uid switch possible)."""
    if not is_root():
        yield None
        return
    uid = _POOL.acquire()
    try:
        yield uid
    finally:
        _POOL.release(uid)
