"""Per-slot uids for LocalSandbox, and finding and killing what an evaluation started.

Why a dedicated uid per concurrent slot: RLIMIT_NPROC counts the tasks of a
*real uid*, and a uid is the one handle that finds everything an evaluation
started (a daemon that calls setsid leaves the process group, never its uid).
As root the child drops to that uid completely, with no capability left
(exec_chain.py does it): it cannot read what others may not, write outside its
own files, signal other users' processes or regain root; an interpreter or
problem it could not walk to (under /root, mode 0700) is linked where it can
(reachable.py). Without root the limits
are best-effort: processes are found by a per-evaluation token in their
environment. Processes are looked up with psutil.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import shutil
import signal
import threading
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager

import psutil

UID_BASE = 61000  # slot i runs candidates as uid/gid UID_BASE + i, its score() as + UID_SLOTS
UID_SLOTS = 512
LOCK_DIR = "/run/evolve-sandbox"  # per-uid flock files: a slot is exclusive across processes
OWNED_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
TOKEN_VAR = "EVOLVE_SANDBOX_TOKEN"

_PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    if _libc.prctl(option, arg2, arg3, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}, {arg2}, {arg3}): {os.strerror(err)}")


def is_root() -> bool:
    return os.geteuid() == 0


def set_subreaper() -> None:
    """Adopt our children's orphans: this machine's PID 1 reaps zombies only
    lazily, and a zombie still counts against its uid's RLIMIT_NPROC."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


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


def _find(uid: int | None, token: str | None) -> list[tuple[int, bool]]:
    """Processes of the evaluation: by real uid (root) or by env token; (pid, zombie)."""
    me, found = os.getpid(), []
    for pid in psutil.pids():
        if pid == me:
            continue
        try:
            p = psutil.Process(pid)
            if uid is not None:
                with p.oneshot():
                    if p.uids().real == uid:
                        found.append((pid, p.status() == psutil.STATUS_ZOMBIE))
            elif token and p.environ().get(TOKEN_VAR) == token:
                found.append((pid, False))
        except psutil.Error:  # gone, or not ours to read
            pass
    return found


def kill_all(
    pgid: int | None,
    uid: int | None,
    token: str | None,
    skip: Collection[int | None] = (),
    timeout_s: float = 5.0,
) -> int:
    """SIGKILL the process group and every process of the uid (or token) until
    none is left, reaping zombies we adopted; `skip`: what the caller reaps itself
    (the process Popen started, the harness under a watchdog, the namespace's init).
    Returns how many others were still running; raises TimeoutError if some survive."""
    killed: set[int] = set()
    end = time.monotonic() + timeout_s
    while True:
        found = [(pid, zombie) for pid, zombie in _find(uid, token) if pid not in skip]
        if pgid is not None and pgid > 1:  # after the first scan, so the count is honest
            try:
                os.killpg(pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            pgid = None
        if not found:
            return len(killed)
        for pid, zombie in found:
            if zombie:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass  # not ours yet: its parent dies this round, then we adopt it
                continue
            killed.add(pid)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if time.monotonic() > end:
            if all(zombie for _, zombie in found):  # dead already; another parent will reap them
                return len(killed)
            raise TimeoutError(f"{len(found)} sandbox processes survived SIGKILL")
        time.sleep(0.002)


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
    """Process-wide pool of slot uids; flock makes a uid exclusive across processes too."""

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
                fd = os.open(f"{LOCK_DIR}/{uid}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
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
            os.close(self._held.pop(uid))  # closing drops the flock


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
