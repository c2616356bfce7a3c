"""Process confinement for LocalSandbox: rlimits, per-slot uids, privilege drop, reaping.

Why a dedicated uid per concurrent slot: RLIMIT_NPROC counts the tasks of a
*real uid*, and a uid is the one handle that finds everything an evaluation
started (a daemon that calls setsid leaves the process group, never its uid).
As root the child drops to that uid completely, keeping only
CAP_DAC_READ_SEARCH as an ambient capability so it can still read and exec the
interpreter under /root (mode 0700) but cannot write outside its own files,
signal other users' processes or regain root. Without root the limits are
best-effort: processes are found by a per-evaluation token in their environment.
"""

from __future__ import annotations

import ctypes
import fcntl
import math
import os
import resource
import shutil
import signal
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager

from evaluators.sandbox import Limits

UID_BASE = 61000  # slot i runs candidates as uid/gid UID_BASE + i, its score() as + UID_SLOTS
UID_SLOTS = 512
LOCK_DIR = "/run/evolve-sandbox"  # per-uid flock files: a slot is exclusive across processes
OWNED_TMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
TOKEN_VAR = "EVOLVE_SANDBOX_TOKEN"
HOST_PREFIX = "evolve-host-"  # host-side dirs: stdout/stderr captures and out/RESULT.json

_PR_SET_KEEPCAPS = 8
_PR_CAPBSET_DROP = 24
_PR_SET_CHILD_SUBREAPER = 36
_PR_SET_NO_NEW_PRIVS = 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE = 47, 2
_CAP_DAC_READ_SEARCH = 2
_CAP_VERSION_3 = 0x20080522

_libc = ctypes.CDLL(None, use_errno=True)  # loaded before any fork: preexec must not dlopen


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


_CAP_LAST = int(_read("/proc/sys/kernel/cap_last_cap") or b"40")


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


def _drop_to(uid: int) -> None:
    """Become uid/gid `uid` with no capability but ambient CAP_DAC_READ_SEARCH."""
    for cap in range(_CAP_LAST + 1):
        if cap != _CAP_DAC_READ_SEARCH:
            _prctl(_PR_CAPBSET_DROP, cap)
    _prctl(_PR_SET_KEEPCAPS, 1)  # keep the permitted set across setresuid
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    bit = 1 << _CAP_DAC_READ_SEARCH
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = data[0].inheritable = bit
    if _libc.capset(ctypes.byref(_CapHeader(_CAP_VERSION_3, 0)), data) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    _prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_RAISE, _CAP_DAC_READ_SEARCH)


def _lower(res: int, soft: int, hard: int | None = None) -> None:
    """Set a limit, never above the hard limit we inherited (the unprivileged case)."""
    hard = soft if hard is None else hard
    cur = resource.getrlimit(res)[1]
    if cur != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur), min(hard, cur)
    resource.setrlimit(res, (soft, hard))


def make_preexec(
    limits: Limits, uid: int | None, nproc: int, cgroup_procs: tuple[str, ...] = ()
) -> Callable[[], None]:
    """The function the child runs between fork and exec (after setsid): join the
    slot's cgroups, set the limits, drop to `uid` (None: stay, bubblewrap drops)."""
    mem = limits.memory_mb * 2**20
    cpu = math.ceil(limits.timeout_s) + 1
    fsize = limits.max_file_mb * 2**20

    def preexec() -> None:
        for path in cgroup_procs:
            with open(path, "w") as f:
                f.write("0")  # this process; its children follow
        _lower(resource.RLIMIT_AS, mem)
        _lower(resource.RLIMIT_CPU, cpu, cpu + 1)  # SIGXCPU at the soft limit, SIGKILL at hard
        _lower(resource.RLIMIT_FSIZE, fsize)
        _lower(resource.RLIMIT_CORE, 0)
        _lower(resource.RLIMIT_NPROC, nproc)
        if uid is not None:
            _drop_to(uid)
        _prctl(_PR_SET_NO_NEW_PRIVS, 1)

    return preexec


def _status_fields(pid: str) -> tuple[int, bool] | None:
    """(real uid, is zombie) of a process, None if it is gone."""
    raw = _read(f"/proc/{pid}/status")
    if raw is None:
        return None
    uid, zombie = -1, False
    for line in raw.split(b"\n"):
        if line.startswith(b"State:"):
            zombie = b"Z" in line.split()[1]
        elif line.startswith(b"Uid:"):
            uid = int(line.split()[1])
            break
    return uid, zombie


def tasks_of_uid(uid: int) -> int:
    """Threads of all processes of a real uid: what RLIMIT_NPROC counts."""
    n = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        raw = _read(f"/proc/{pid}/status") or b""
        if f"\nUid:\t{uid}\t".encode() in raw:
            n += next(
                (int(ln.split()[1]) for ln in raw.split(b"\n") if ln.startswith(b"Threads:")), 1
            )
    return n


def _find(uid: int | None, token: str | None) -> list[tuple[int, bool]]:
    """Processes of the evaluation: by real uid (root) or by env token; (pid, zombie)."""
    me, found = os.getpid(), []
    needle = f"{TOKEN_VAR}={token}\0".encode() if token else b""
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        if uid is not None:
            fields = _status_fields(name)
            if fields and fields[0] == uid:
                found.append((int(name), fields[1]))
        elif needle and needle in (_read(f"/proc/{name}/environ") or b""):
            found.append((int(name), False))
    return found


def kill_all(
    pgid: int | None,
    uid: int | None,
    token: str | None,
    skip: Collection[int | None] = (),
    timeout_s: float = 5.0,
) -> int:
    """SIGKILL the process group and every process of the uid (or token) until
    none is left, reaping zombies we adopted; `skip`: the harness itself, which
    Popen reaps, and the namespace's init, which the caller ends. Returns how many others were still running; raises
    TimeoutError if some survive."""
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
    """Delete what the slot uid left at the top of shared temp dirs, and host
    dirs (ours, root-owned) whose out/ it owns: a controller killed mid-run
    leaves them behind, and only the holder of the uid's lock can be using them."""
    for d in dict.fromkeys(dirs):
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for e in entries:
            try:
                if e.stat(follow_symlinks=False).st_uid != uid and not (
                    e.name.startswith(HOST_PREFIX)
                    and os.lstat(os.path.join(e.path, "out")).st_uid == uid
                ):
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
