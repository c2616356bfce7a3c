"""Waiting on one launch of the local sandbox, and reaping what it leaves.

Why apart from local.py: these are the process-level steps around one launch
(wait without reaping, find the namespace's init, reap it, tell the harness from
its strays), each racing the kernel in its own way; local.py keeps the policy.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time

import psutil

KILL_WAIT_S = 5.0  # for bubblewrap to exit once its namespace was killed
START_WAIT_S = 10.0  # for bubblewrap to say which process is its namespace's init


def wait_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until the harness exits, without reaping it; False at the deadline.

    Not reaping keeps its pid (= the process group id) from being reused
    before we kill the group. A pidfd wakes us at exit; Popen.wait(timeout)
    would poll with sleeps of up to 50 ms.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        end = time.monotonic() + timeout_s
        while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() > end:
                return False
            time.sleep(0.005)
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0.0, timeout_s) * 1000))
    finally:
        os.close(fd)


def children(pid: int) -> list[int]:
    """The direct children of the (unreaped) process Popen started: under the fallback's
    watchdog, the harness itself."""
    try:
        return [c.pid for c in psutil.Process(pid).children()]
    except psutil.Error:
        return []


def namespace_init(info_f, proc: subprocess.Popen) -> tuple[int, int] | None:
    """(a pidfd, the pid) of the namespace's init, from what bubblewrap writes to --info-fd.

    A pidfd names that very process: killing and reaping it can never hit a
    recycled pid.
    """
    end = time.monotonic() + START_WAIT_S
    while time.monotonic() < end:
        info_f.seek(0)
        raw = info_f.read(4096)
        try:
            pid = json.loads(raw)["child-pid"]
        except (ValueError, KeyError, TypeError):
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return None  # bubblewrap failed at once (left unreaped: _wait_exit sees it)
            time.sleep(0.001)
            continue
        try:
            return (os.pidfd_open(pid), pid) if type(pid) is int and pid > 1 else None
        except OSError:
            return None
    return None


def reap(init: int) -> None:
    """Reap the namespace's init once it exits: bubblewrap left it to us (we are a subreaper)."""
    end = time.monotonic() + KILL_WAIT_S
    while time.monotonic() < end:
        try:
            if os.waitid(os.P_PIDFD, init, os.WEXITED | os.WNOHANG) is not None:
                return
        except ChildProcessError:
            return  # reaped by bubblewrap after all
        time.sleep(0.001)
