"""Per-slot control groups: memory (tmpfs pages included) and process count, as root.

Why on top of rlimits: RLIMIT_AS counts one process's address space, not the
files a candidate writes to its tmpfs /tmp or /dev/shm, nor the memory of its
children together. A memory cgroup charges all of it to the evaluation, and a
pids cgroup counts every task the evaluation starts. cgroup v2 where its
memory controller is enabled, else the v1 hierarchies; absent both (no root,
a read-only /sys/fs/cgroup), the sandbox says so in its notice.
"""

from __future__ import annotations

import functools
import itertools
import os
import signal
import time
from dataclasses import dataclass

from evaluators.liveness import pid_alive

ROOT = "/sys/fs/cgroup"
GROUP = "evolve-sandbox"
_launches = itertools.count()


@dataclass(frozen=True)
class Layout:
    """Where the memory and pids controllers of our group live (equal on cgroup v2)."""

    memory: str
    pids: str | None
    v2: bool


def _writable_dir(path: str) -> bool:
    try:
        os.makedirs(path, exist_ok=True)
        return os.access(os.path.join(path, "cgroup.procs"), os.W_OK)
    except OSError:
        return False


@functools.cache
def layout() -> Layout | None:
    """The usable hierarchy, or None (not root, or no memory controller we may write);
    empty groups that dead processes left behind are removed on the way. A live
    process's group is left alone even while empty: it may be about to join it."""
    found = _layout()
    if found is not None:
        for root in {found.memory, found.pids} - {None}:
            for entry in os.scandir(root):
                if entry.is_dir(follow_symlinks=False) and not _owner_alive(entry.name):
                    try:
                        os.rmdir(entry.path)  # fails, harmlessly, for a group in use
                    except OSError:
                        pass
    return found


def _owner_alive(name: str) -> bool:
    """Whether the process that made group `slot-SLOT-PID-N` still runs (pid reuse errs
    toward keeping an empty group until a later sweep)."""
    parts = name.split("-")
    if len(parts) != 4 or parts[0] != "slot" or not parts[2].isdigit():
        return False
    return pid_alive(int(parts[2]))


def _layout() -> Layout | None:
    if os.geteuid() != 0:
        return None
    try:
        with open(os.path.join(ROOT, "cgroup.controllers")) as f:
            controllers = f.read().split()
    except OSError:
        controllers = []
    if "memory" in controllers:
        group = os.path.join(ROOT, GROUP)
        try:
            with open(os.path.join(ROOT, "cgroup.subtree_control"), "w") as f:
                f.write("+memory +pids" if "pids" in controllers else "+memory")
        except OSError:
            return None
        return (
            Layout(group, group if "pids" in controllers else None, True)
            if _writable_dir(group)
            else None
        )
    memory = os.path.join(ROOT, "memory", GROUP)
    if not _writable_dir(memory):
        return None
    pids = os.path.join(ROOT, "pids", GROUP)
    return Layout(memory, pids if _writable_dir(pids) else None, False)


def _put(path: str, name: str, value: str) -> None:
    with open(os.path.join(path, name), "w") as f:
        f.write(value)


def slot_groups(slot: int, memory_mb: int, max_procs: int) -> tuple[str, ...]:
    """Fresh groups for one launch of the slot, with these limits; their cgroup.procs files.

    Fresh, not reused: a zombie that some dead process left for the machine's
    init to reap keeps its pids charge until then, and must not count against
    the next evaluation. `remove_groups` deletes them afterwards.
    """
    lay = layout()
    if lay is None:
        return ()
    mem = os.path.join(lay.memory, f"slot-{slot}-{os.getpid()}-{next(_launches)}")
    os.makedirs(mem, exist_ok=True)
    limit = str(memory_mb * 2**20)
    if lay.v2:
        _put(mem, "memory.max", limit)
        _put(mem, "memory.swap.max", "0")
    else:
        memsw = os.path.exists(os.path.join(mem, "memory.memsw.limit_in_bytes"))
        if memsw:  # memory+swap may never be below memory: lift it, set memory, lower it
            _put(mem, "memory.memsw.limit_in_bytes", "-1")
        _put(mem, "memory.limit_in_bytes", limit)
        if memsw:
            _put(mem, "memory.memsw.limit_in_bytes", limit)
    procs = [os.path.join(mem, "cgroup.procs")]
    if lay.pids is not None:
        pids = mem if lay.v2 else os.path.join(lay.pids, os.path.basename(mem))
        os.makedirs(pids, exist_ok=True)
        _put(pids, "pids.max", str(max_procs + 2))  # + bubblewrap and its namespace init
        if not lay.v2:
            procs.append(os.path.join(pids, "cgroup.procs"))
    return tuple(procs)


def oom_kills(procs_files: tuple[str, ...]) -> int:
    """How often the kernel's OOM killer ran in the launch's memory group: the
    candidate's memory, not our failure (memory.events on v2, memory.oom_control on
    v1; 0 where neither can be read). Read before `wait_empty` deletes the group."""
    if not procs_files:
        return 0
    group = os.path.dirname(procs_files[0])
    for name in ("memory.events", "memory.oom_control"):
        try:
            with open(os.path.join(group, name)) as f:
                return read_oom_kill(f.read())
        except OSError:
            continue
    return 0


def read_oom_kill(text: str) -> int:
    """The `oom_kill N` line of memory.events or memory.oom_control."""
    return event_count(text, "oom_kill")


def event_count(text: str, name: str) -> int:
    """The count on a cgroup events file's `NAME N` line (0 where there is none)."""
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == name and value.strip().isdigit():
            return int(value)
    return 0


def wait_empty(procs_files: tuple[str, ...], timeout_s: float = 5.0) -> None:
    """Wait until no task is left in the groups, killing any found (the pid namespace
    is dying already), then delete them."""
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        pids = []
        for path in procs_files:
            try:
                with open(path) as f:
                    pids += [int(p) for p in f.read().split()]
            except (OSError, ValueError):
                pass
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.002)
    for path in procs_files:
        try:
            os.rmdir(os.path.dirname(path))
        except OSError:
            pass  # still in use: `layout()` of a later process removes it
