"""Locks between processes on this machine: an flock on a lock file, which the OS drops when
its holder dies, so a crashed process never leaves anything locked. At the root of
evaluators/, beside the protocol, not under local/: the loop (the archive, the LLM layer)
imports it, and no sandbox backend.

One helper for every such lock: the local sandbox's slot uids (local/uids.py), a run's owner
(evolve/archive/lease.py) and the local model's files and server state
(evolve/llm/local_weights.py, local_server.py). A lock file is never deleted: unlinking it
would let two processes each lock a different file of the same name.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

try:
    import fcntl
except ImportError:  # no flock on this platform (Windows): `locked` does not lock
    fcntl = None  # type: ignore[assignment]


def try_lock(
    path: str | Path, mode: int = 0o644, tries: int = 1, pause_s: float = 0.025
) -> int | None:
    """An exclusive lock on `path` (created with `mode` if missing), held until the returned
    descriptor is closed; None while another process holds it, after `tries` attempts
    `pause_s` apart. OSError if the file cannot be opened."""
    assert fcntl is not None, "flock is not available on this platform"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, mode)
    for attempt in range(tries):
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if attempt < tries - 1:
                time.sleep(pause_s)
    os.close(fd)
    return None


def is_locked(path: str | Path) -> bool:
    """Whether a live process holds the lock on `path` (True when it cannot tell: a file
    that exists but cannot be opened)."""
    assert fcntl is not None, "flock is not available on this platform"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on `path` for the with-block, waiting for it as long as it takes
    (the folder and the file are made if missing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        if fcntl is not None:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
