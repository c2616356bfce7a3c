"""Folders a dead evolve process left in the temp folder: named after their owner, swept.

Why names: a controller killed with SIGKILL runs no clean-up at all. So every
temporary folder a sandbox makes carries its owner in its name,
`evolve-<kind>-<boot>-<pid>-<start>-<random>`: this boot's id, the owner's pid
and its start time since boot (in clock ticks). The three name one process for
good, so a recycled pid never passes for a live owner (liveness.py). `sweep()`
lists the temp folder once and removes the folders whose owner is gone; a live
owner's folder is never touched. Every `evolve` command starts with
evaluators/machine.py's `sweep`, which also removes a dead Docker sandbox's containers.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

from evaluators.liveness import alive, owner_tag
from evaluators.local.reachable import SCRATCH_ROOT

MAX_UNLOCK_PASSES = 64  # folder levels a candidate can lock, one per pass
# kind, boot (absent in names from before it was added), pid, start
_NAME = re.compile(r"^evolve-([a-z]+)-(?:([0-9a-f]{8})-)?(\d+)-(\d+)-")


def make_dir(kind: str, root: str | None = None) -> str:
    """A fresh private folder whose name says who owns it (see the module's docstring)."""
    return tempfile.mkdtemp(prefix=f"evolve-{kind}-{owner_tag()}-", dir=root)


def dead(root: str | None = None) -> list[tuple[str, str]]:
    """(kind, path) of every folder in `root` (the temp folder) whose owner is gone."""
    root = root or tempfile.gettempdir()
    try:
        names = os.listdir(root)
    except OSError:
        return []
    found = []
    for name in names:
        m = _NAME.match(name)
        if m and not alive(int(m[3]), int(m[4]), m[2] or None):
            found.append((m[1], os.path.join(root, name)))
    return found


def found(root: str | None = None) -> list[tuple[str, str]]:
    """`dead(root)`; with no root, the temp folder's and the fallback's scratch folders kept
    out of it (reachable.SCRATCH_ROOT)."""
    return dead(root) + (dead(SCRATCH_ROOT) if root is None else [])


def remove(folders: list[tuple[str, str]]) -> list[str]:
    """Remove the (kind, path) folders `found` listed; the paths removed."""
    removed = []
    for _, path in folders:
        if os.path.isdir(path) and not os.path.islink(path):
            remove_tree(path)
            if not os.path.lexists(path):
                removed.append(path)
    return removed


def sweep(root: str | None = None) -> list[str]:
    """Remove the folders dead evolve processes left in `root` (the temp folder); the paths
    removed. The folders only: machine.sweep also removes a dead Docker sandbox's containers."""
    return remove(found(root))


def remove_tree(path: str) -> None:
    """Remove a folder even after a candidate chmod-ed parts of it (non-root): each pass
    unlocks the folders the walk can now see, until nothing is left or nothing changes."""
    for _ in range(MAX_UNLOCK_PASSES):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        unlocked = False
        for top, dirs, _ in os.walk(path):
            for d in (top, *(os.path.join(top, x) for x in dirs)):
                unlocked |= _unlock(d)
        if not unlocked:
            return


def _unlock(path: str) -> bool:
    """chmod 0700 the folder at `path` if it is less, never through a link: it is opened with
    O_PATH | O_NOFOLLOW (no read permission needed) and changed through that descriptor."""
    try:
        fd = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if os.fstat(fd).st_mode & 0o700 == 0o700:
            return False
        os.chmod(f"/proc/self/fd/{fd}", 0o700)  # the very folder the descriptor names
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
