"""An export's file appears whole or not at all, and a kill leaves nothing beside it.

The new content is written into an unnamed file in the target's folder (Linux's O_TMPFILE):
a process killed mid-write, even by SIGKILL, leaves nothing a user can see, and the kernel
frees the space. Once written, the file is given a name and renamed over the target in
one step. Where the file system has no unnamed files, a named `.NAME.PID.tmp` is used,
removed on any error, and one left by a killed process is removed by the next export.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

UNNAMED = hasattr(os, "O_TMPFILE") and os.path.isdir("/proc/self/fd")  # Linux
_NOT_HERE = {errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.ENOENT}  # no O_TMPFILE here


def _temp_name(path: Path) -> Path:
    return path.with_name(f".{path.name}.{os.getpid()}.tmp")


def clean_stale(path: Path) -> None:
    """Remove what an earlier export of `path` killed mid-write left: `.NAME.PID.tmp` of a
    process that is gone (and `.NAME.tmp`, as exports named it before)."""
    pattern = re.compile(rf"\.{re.escape(path.name)}(?:\.(\d+))?\.tmp")
    try:
        names = os.listdir(path.parent)
    except OSError:
        return
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or (m.group(1) is not None and _alive(int(m.group(1)))):
            continue
        with contextlib.suppress(OSError):
            (path.parent / name).unlink()


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return False  # ours from an earlier call that failed: not in use now
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's live process
    return True


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[BinaryIO]:
    """A binary file for `path`'s new content; when the block ends without an error it
    replaces `path` in one rename. On an error, or a kill at any moment, `path` is as it was
    and nothing is left beside it (see the module's note for file systems without unnamed
    files)."""
    path = Path(path)
    clean_stale(path)
    fd = _unnamed(path.parent)
    named = fd is None
    tmp = _temp_name(path)
    if named:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    assert fd is not None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            if not named:  # its name, for the instant before the rename
                _name(f.fileno(), tmp)
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _name(fd: int, path: Path) -> None:
    """Give the unnamed file `fd` the name `path`: linkat(2) of /proc/self/fd/FD, symlink
    followed (os.link takes that path only with a directory descriptor given)."""
    folder = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.link(f"/proc/self/fd/{fd}", path.name, dst_dir_fd=folder, follow_symlinks=True)
    finally:
        os.close(folder)


def _unnamed(folder: Path) -> int | None:
    """A descriptor of a new unnamed file in `folder`, or None where there are none."""
    if not UNNAMED:
        return None
    try:
        return os.open(folder, os.O_TMPFILE | os.O_WRONLY | os.O_CLOEXEC, 0o666)
    except OSError as e:
        if e.errno in _NOT_HERE:
            return None
        raise
