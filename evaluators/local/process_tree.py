"""What one launch of the local sandbox started: wait for it, find it, kill it, reap it.

Every step that ends processes lives here, each racing the kernel in its own way: wait
for the harness without reaping it (its pid stays the process group's), find the
namespace's init that bubblewrap reports and reap it, find the launch's strays by their
uid (root) or by a per-launch token in their environment (otherwise) and SIGKILL them
with the process group (`kill_all`), and adopt orphans so that zombies are reaped at
once (`set_subreaper`). sandbox.py keeps the policy; exec_chain.py the watchdog that
kills the group if the controller dies. Processes are looked up with psutil.
"""

from __future__ import annotations

import ctypes
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Collection

import psutil

TOKEN_VAR = "EVOLVE_SANDBOX_TOKEN"  # the per-launch token processes are found by (no root)
KILL_WAIT_S = 5.0  # for bubblewrap to exit once its namespace was killed
START_WAIT_S = 10.0  # for bubblewrap to say which process is its namespace's init
STOP_POLL_S = 0.1  # how often a wait looks at its `stop` event


def wait_exit(
    proc: subprocess.Popen, timeout_s: float, stop: threading.Event | None = None
) -> bool:
    """Wait until the harness exits, without reaping it; False at the deadline, or once
    `stop` is set (a GEPA worker ended by the host: evaluators/stateful.py).

    Not reaping keeps its pid (= the process group id) from being reused
    before we kill the group. A pidfd wakes us at exit; Popen.wait(timeout)
    would poll with sleeps of up to 50 ms.
    """
    if stop is not None:
        end = time.monotonic() + timeout_s
        while not stop.is_set() and (left := end - time.monotonic()) > 0:
            if wait_exit(proc, min(left, STOP_POLL_S)):
                return True
        return False
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


_PR_SET_CHILD_SUBREAPER = 36

_libc = ctypes.CDLL(None, use_errno=True)


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> None:
    if _libc.prctl(option, arg2, arg3, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}, {arg2}, {arg3}): {os.strerror(err)}")


def set_subreaper() -> None:
    """Adopt our children's orphans: this machine's PID 1 reaps zombies only
    lazily, and a zombie still counts against its uid's RLIMIT_NPROC."""
    _prctl(_PR_SET_CHILD_SUBREAPER, 1)


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
