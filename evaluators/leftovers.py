"""Folders a dead evolve process left in the temp folder: named after their owner, swept.

Why names: a controller killed with SIGKILL runs no clean-up at all. So every
temporary folder a sandbox makes carries its owner in its name,
`evolve-<kind>-<boot>-<pid>-<start>-<random>`: this boot's id, the owner's pid
and its start time since boot (in clock ticks). The three name one process for
good, so a recycled pid never passes for a live owner. `sweep()`, run at the
start of every `evolve` command, lists the temp folder once and removes the
folders whose owner is gone; a live owner's folder is never touched.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import socket
import tempfile

MAX_UNLOCK_PASSES = 64  # folder levels a candidate can lock, one per pass
UNKNOWN_BOOT = "0" * 8  # where the boot id cannot be read: compared with nothing
# kind, boot (absent in names from before it was added), pid, start
_NAME = re.compile(r"^evolve-([a-z]+)-(?:([0-9a-f]{8})-)?(\d+)-(\d+)-")


@functools.cache
def boot_id() -> str:
    """This boot's id, short: a process of an earlier boot is dead whatever its pid."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8]
    except OSError:
        return UNKNOWN_BOOT


def start_ticks(pid: int) -> int | None:
    """When the process started, in 1/100 s since boot (exact: the kernel's clock ticks);
    None if it is gone or a zombie."""
    import psutil  # here: `evolve` sweeps at every start, and most find nothing to check

    try:
        p = psutil.Process(pid)
        if p.status() == psutil.STATUS_ZOMBIE:
            return None
        return round((p.create_time() - psutil.boot_time()) * 100)
    except psutil.Error:
        return None


def alive(pid: int, start: int, boot: str | None = None) -> bool:
    """Whether the process `pid` that started at `start` (of boot `boot`) still runs."""
    if boot not in (None, UNKNOWN_BOOT, boot_id()) and boot_id() != UNKNOWN_BOOT:
        return False
    now = start_ticks(pid)
    return now is not None and abs(now - start) <= 1  # a tick of rounding either way


@functools.cache
def _start_of(pid: int) -> int:
    """A process's own start, looked up once (keyed by pid: a forked child has its own)."""
    return start_ticks(pid) or 0


def owner_tag() -> str:
    """`<boot>-<pid>-<start>` of this process (what folder names carry)."""
    pid = os.getpid()
    return f"{boot_id()}-{pid}-{_start_of(pid)}"


def owner_id() -> str:
    """`host:pid:start:boot` of this process (what container labels carry)."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{_start_of(pid)}:{boot_id()}"


def owner_alive(owner: str) -> bool:
    """Whether the process an `owner_id()` names still runs (True when unknowable: another
    host's). The boot is optional: labels written before it was added have none."""
    host, pid, start, boot = ([*owner.split(":"), "", "", ""])[:4]
    if host != socket.gethostname() or not pid.isdigit():
        return True
    return start.isdigit() and alive(int(pid), int(start), boot or None)


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


def sweep(root: str | None = None) -> list[str]:
    """Remove what dead evolve processes left in `root` (the temp folder); the paths removed.

    A dead Docker sandbox's folder also means its containers may be left: they go first
    (their agents stop by themselves once the controller is gone; this is for the rest).
    """
    found = dead(root)
    if root is None:  # and the fallback's scratch folders kept out of the temp folder
        from evaluators.reachable import SCRATCH_ROOT

        found += dead(SCRATCH_ROOT)
    if any(kind == "docker" for kind, _ in found):
        try:
            from evaluators.docker_sandbox import reap_containers

            reap_containers()
        except Exception:
            pass  # no engine or no `docker` package: the next Docker sandbox start reaps them
    removed = []
    for _, path in found:
        if os.path.isdir(path) and not os.path.islink(path):
            remove_tree(path)
            if not os.path.lexists(path):
                removed.append(path)
    return removed


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
