"""Landlock from ctypes: a process confines itself, and all it will start, to reading a few paths.

The candidate's worker (worker.py) calls `restrict()` on itself
before it imports the candidate: from then on, opening any file outside the
granted paths fails with PermissionError, writing fails everywhere, and where
the kernel knows how (Landlock ABI 4 and 6) TCP bind/connect, connecting to
abstract unix sockets of other domains and signalling processes outside the
domain fail too. A Landlock domain cannot be left, and children inherit it.

Stdlib only: it runs in the worker before anything else is imported.
Landlock restricts the calling thread: call `restrict()` while the process has
no other thread (before numpy starts its BLAS threads).
"""

from __future__ import annotations

import ctypes
import errno
import os
from collections.abc import Iterable
from dataclasses import dataclass, field

# Syscall numbers: the same on every architecture (the unified table since Linux 5.13).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_ADD_RULE = 445
SYS_LANDLOCK_RESTRICT_SELF = 446
CREATE_RULESET_VERSION = 1 << 0
RULE_PATH_BENEATH = 1

PR_SET_DUMPABLE = 4
PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38

# Filesystem access rights and the ABI that introduced them.
FS_EXECUTE = 1 << 0
FS_WRITE_FILE = 1 << 1
FS_READ_FILE = 1 << 2
FS_READ_DIR = 1 << 3
FS_REFER = 1 << 13  # ABI 2
FS_TRUNCATE = 1 << 14  # ABI 3
FS_IOCTL_DEV = 1 << 15  # ABI 5
_FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_FS_LATEST = (1 << 16) - 1  # ABI 5 and later
NET_BIND_TCP = 1 << 0  # ABI 4
NET_CONNECT_TCP = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0  # ABI 6
SCOPE_SIGNAL = 1 << 1

READ_DIR = FS_READ_FILE | FS_READ_DIR  # what a granted folder allows
READ_FILE = FS_READ_FILE  # what a granted file allows
EXEC_DIR = READ_DIR | FS_EXECUTE  # a folder of programs to run (an interpreter's)
WRITE_DIR = _FS_LATEST  # a private folder: everything the ABI handles
WRITE_FILE = FS_READ_FILE | FS_WRITE_FILE | FS_TRUNCATE  # /dev/null
_FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class LandlockError(OSError):
    """A Landlock call failed for a reason other than Landlock being unavailable."""


@dataclass
class Confinement:
    """What `restrict()` did: `abi` > 0 when the process is confined, else `error` says why not."""

    abi: int = 0
    error: str | None = None
    granted: list[str] = field(default_factory=list)
    handled: list[str] = field(default_factory=list)  # what the domain restricts

    @property
    def confined(self) -> bool:
        return self.abi > 0 and self.error is None


_libc: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
        _libc.prctl.restype = ctypes.c_int
    return _libc


def _syscall(*args: object) -> int:
    r = _lib().syscall(*args)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return int(r)


def prctl(option: int, arg2: int = 0) -> None:
    """prctl(option, arg2, 0, 0, 0); OSError on failure."""
    zero = ctypes.c_ulong(0)
    if _lib().prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), zero, zero, zero) != 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))


def abi_version() -> int:
    """The kernel's Landlock ABI version; 0 where Landlock is unavailable (or filtered)."""
    try:
        return _syscall(
            SYS_LANDLOCK_CREATE_RULESET,
            None,
            ctypes.c_size_t(0),
            ctypes.c_uint32(CREATE_RULESET_VERSION),
        )
    except OSError as e:
        if e.errno in (errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
            return 0
        raise


def _handled(abi: int) -> tuple[_RulesetAttr, int, list[str]]:
    """The ruleset attributes for this ABI, the size to pass and a description."""
    attr = _RulesetAttr(_FS_BY_ABI.get(abi, _FS_LATEST), 0, 0)
    what = ["filesystem"]
    size = 8
    if abi >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        what.append("tcp bind/connect")
        size = 16
    if abi >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        what += ["abstract unix sockets", "signals"]
        size = 24
    return attr, size, what


def restrict(
    read_dirs: Iterable[str],
    read_files: Iterable[str] = (),
    more: Iterable[tuple[str, int]] = (),
) -> Confinement:
    """Confine this thread (and every process it starts) to reading `read_dirs` (their whole
    trees) and `read_files`, plus the (path, rights) of `more` (EXEC_DIR, WRITE_DIR,
    WRITE_FILE); nothing else is writable. Paths that do not exist are skipped.

    Returns a Confinement whose `error` says why Landlock is unavailable (ENOSYS,
    EOPNOTSUPP: not built in or disabled; EPERM: a seccomp filter refused it);
    any other failure raises LandlockError rather than run unconfined unnoticed.
    """
    abi = abi_version()
    if abi <= 0:
        return Confinement(0, "landlock unavailable (this kernel or a seccomp filter refuses it)")
    attr, size, handled = _handled(abi)
    out = Confinement(abi, None, [], handled)
    ruleset = _syscall(
        SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0)
    )
    try:
        rules = [(p, READ_DIR) for p in read_dirs] + [(p, READ_FILE) for p in read_files]
        rules += list(more)
        for path, access in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if not os.path.isdir(path):
                    access &= _FILE_RIGHTS  # a rule on a file may hold file rights only
                rule = _PathBeneathAttr(access & attr.handled_access_fs, fd)
                _syscall(
                    SYS_LANDLOCK_ADD_RULE,
                    ctypes.c_int(ruleset),
                    ctypes.c_int(RULE_PATH_BENEATH),
                    ctypes.byref(rule),
                    ctypes.c_uint32(0),
                )
                out.granted.append(path)
            finally:
                os.close(fd)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        _syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0))
    except OSError as e:
        raise LandlockError(e.errno, f"landlock: {e.strerror}") from None
    finally:
        os.close(ruleset)
    return out
