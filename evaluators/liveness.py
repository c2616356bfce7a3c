"""Whether a process still runs, on psutil: the one answer every owner check on this machine uses.

A pid alone can be recycled. Where something records its owner for later (the
temporary folders of local/leftovers.py, the Docker sandbox's container labels), it
records the owner's pid, its start time since boot in clock ticks, and the boot's
id: the three name one process for good, so a recycled pid never passes for a live
owner (`alive`, `owner_alive`). Where only a pid is known (the owner of a cgroup,
the local model's server and its users), `pid_alive` is the best one can say.
A zombie (exited, not yet reaped) is not alive.

At the root of evaluators/, not under local/: the loop (the LLM layer) imports it, and no
sandbox backend.
"""

from __future__ import annotations

import functools
import os
import socket

UNKNOWN_BOOT = "0" * 8  # where the boot id cannot be read: compared with nothing


@functools.cache
def boot_id() -> str:
    """This boot's id, short: a process of an earlier boot is dead whatever its pid."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return f.read().strip().replace("-", "")[:8]
    except OSError:
        return UNKNOWN_BOOT


def pid_alive(pid: int) -> bool:
    """Whether some process `pid` runs (another user's counts; a zombie does not)."""
    import psutil  # here: `evolve` sweeps at every start, and most find nothing to check

    if pid <= 0:
        return False
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # not ours to read: it exists
        return True


def start_ticks(pid: int) -> int | None:
    """When the process started, in 1/100 s since boot (exact: the kernel's clock ticks);
    None if it is gone or a zombie."""
    import psutil

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
