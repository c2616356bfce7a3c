"""How the candidate's worker process starts and ends: a fresh interpreter, or a fork the
harness made before it read anything of its request (`zygote`).

The next Remote (worker_client.py) takes the spare worker made here (`take`). In `run`
mode the harness forks it first thing (`zygote`): the fork keeps only what the harness
was at that moment, with its environment and command line wiped, and never a copy of a
process that held the request. `prestart` tells the spare (or a fresh interpreter)
which libraries the program imports, so they load while the evaluator imports;
`release` ends a spare that no Remote took.

Stdlib only: it runs in the harness, inside both sandboxes.
"""

from __future__ import annotations

import ast
import json
import os
import pickle
import signal
import subprocess
import sys
import time

from evaluators.inside import children
from evaluators.inside.channel import Channel

_ENV_KEEP = (
    "PATH",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TZ",
    "HOME",
    "TMPDIR",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
)


# The worker's command: its folder is not on sys.path (-I), so it imports its siblings as the
# `evaluators.inside` package from the folder given as its first argument.
_BOOT = (
    "import sys, types\n"
    "evaluators = sys.modules['evaluators'] = types.ModuleType('evaluators')\n"
    "evaluators.__path__ = []\n"
    "inside = evaluators.inside = sys.modules['evaluators.inside'] = types.ModuleType('evaluators.inside')\n"
    "inside.__path__ = [sys.argv[1]]\n"
    "from evaluators.inside import worker\n"
    "worker.run(sys.argv[2:])\n"
)


# Heavy libraries a worker imports before it is confined (and before it knows its program),
# when the program imports them: a prestarted worker then overlaps their import with the
# evaluator's. Only trusted, side-effect-free imports belong here.
PRELOADABLE = frozenset({"numpy"})


def preloads(source: bytes) -> list[str]:
    """The PRELOADABLE libraries the program imports at its top level."""
    try:
        tree = ast.parse(source)
    except Exception:  # SyntaxError, or too deep (RecursionError) or large (MemoryError)
        return []  # to parse: a hint only, and the candidate's failure is reported elsewhere
    found = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found.add(node.module.split(".")[0])
    return sorted(found & PRELOADABLE)


_Started = tuple[
    "subprocess.Popen | _Forked", Channel, Channel
]  # a worker and its pipes, unused so far
_spare: _Started | None = None


def _start(preload: list[str]) -> _Started:
    from_parent, to_worker = os.pipe()  # (read end, write end)
    from_worker, to_parent = os.pipe()
    try:
        with children.trusted():  # the worker confines itself, tighter than an evaluator's child
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-s",
                    "-c",
                    _BOOT,
                    os.path.dirname(os.path.abspath(__file__)),
                    str(from_parent),
                    str(to_parent),
                    str(os.getpid()),
                    json.dumps(preload),
                ],
                pass_fds=(from_parent, to_parent),
                stdin=subprocess.DEVNULL,
                env={k: v for k, v in os.environ.items() if k in _ENV_KEEP},
                close_fds=True,
            )
    finally:
        os.close(from_parent)
        os.close(to_parent)
    return proc, Channel(to_worker), Channel(from_worker)


def zygote() -> None:
    """Fork the next Remote's worker now, before anything of the request exists in this
    process: the harness calls this first thing in `run` mode, before it reads its payload
    (the request, its env values, the data paths, the hidden files) or imports the evaluator.
    The worker keeps only what this process was at that moment, with its environment and
    command line (/proc/self/environ, cmdline) wiped; it waits for the program. `prestart`
    tells it what to import; `release()` ends it if nobody takes it."""
    global _spare
    if _spare is None and hasattr(os, "fork"):
        _spare = _fork()


def prestart(program: str) -> None:
    """Start the next Remote's worker importing the libraries the program imports, while the
    evaluator imports: the zygote when there is one, else a fresh interpreter (`_start`)."""
    global _spare
    with open(program, "rb") as f:
        preload = preloads(f.read())
    if _spare is None:
        _spare = _start(preload)
    elif preload:
        try:
            _spare[1].send(pickle.dumps(("preload", 0, preload, [])))
        except OSError:
            pass  # it died: the load message finds out and says how


def _fork() -> _Started:
    """A worker forked from this process; it keeps its two pipes as descriptors 3 and 4, the
    standard streams, the environment `_start` gives and no command line."""
    from_parent, to_worker = os.pipe()
    from_worker, to_parent = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()  # or the worker would write this process's buffered output again
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the worker: never returns into the caller
        try:
            read, write = os.dup(from_parent), os.dup(to_parent)
            os.dup2(read, 3)
            os.dup2(write, 4)
            os.closerange(5, os.sysconf("SC_OPEN_MAX"))
            for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD, signal.SIGALRM):
                signal.signal(sig, signal.SIG_DFL)
            signal.setitimer(signal.ITIMER_REAL, 0)
            _as_fresh()
            from evaluators.inside import worker

            worker.run(["3", "4", str(parent), "[]"])
        finally:
            os._exit(1)
    os.close(from_parent)
    os.close(to_parent)
    return _Forked(pid), Channel(to_worker), Channel(from_worker)


def _as_fresh() -> None:
    """In a forked worker: what `python -I -s` with `_start`'s environment would have, down
    to what the kernel shows (/proc/self/environ, cmdline: `wipe_proc_strings`)."""
    extra = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    sys.path[:] = [p for p in sys.path if p and p not in extra]
    kept = {k: v for k, v in os.environ.items() if k in _ENV_KEEP}
    os.environ.clear()
    os.environ.update(kept)
    sys.argv[:] = []
    if isinstance(getattr(sys, "orig_argv", None), list):
        sys.orig_argv[:] = []
    wipe_proc_strings()


# Left in a forked worker's /proc/self/environ (not in os.environ): the local sandbox's
# per-launch token (evaluators/local/process_tree.py), by which it finds what an evaluation started.
_ENV_KEEP_IN_PROC = ("EVOLVE_SANDBOX_TOKEN",)


def wipe_proc_strings() -> None:
    """Rewrite this process's original argument and environment strings, what the kernel
    shows in /proc/self/cmdline and environ (libc's `environ` no longer points there once
    os.environ was rebuilt): the name `evolve-worker` and the kept variables only."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        arg_start, arg_end, env_start, env_end = (int(x) for x in fields[45:49])
    except (OSError, ValueError, IndexError):
        return
    import ctypes

    keep = {k.encode() for k in (*_ENV_KEEP, *_ENV_KEEP_IN_PROC)}
    for start, end, name in ((arg_start, arg_end, "cmdline"), (env_start, env_end, "environ")):
        if not 0 < start < end:
            continue
        if name == "cmdline":
            text = b"evolve-worker\0"
        else:
            entries = ctypes.string_at(start, end - start).split(b"\0")
            text = b"".join(e + b"\0" for e in entries if e.split(b"=", 1)[0] in keep)
        ctypes.memset(start, 0, end - start)
        ctypes.memmove(start, text, min(len(text), end - start - 1))


class _Forked:
    """The calls `Remote` makes on a Popen (poll, wait, kill), for a forked worker."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped by someone else: its status is lost
                pid, status = self.pid, 255 << 8
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        end = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(f"worker {self.pid}", timeout or 0)
            time.sleep(0.002)
        return code

    def kill(self) -> None:
        if self.returncode is None:
            os.kill(self.pid, signal.SIGKILL)


def release() -> None:
    """End a prestarted worker that no Remote took."""
    global _spare
    if _spare is not None:
        spare, _spare = _spare, None
        reap(*spare)


def take(source: bytes) -> _Started:
    """The spare worker (forked or prestarted), or else a fresh one importing the libraries
    `source` imports; the spare is gone either way."""
    global _spare
    started, _spare = _spare or _start(preloads(source)), None
    return started


def reap(proc: subprocess.Popen | _Forked, out: Channel, inp: Channel) -> None:
    """End a worker: EOF on both pipes, then SIGKILL if it lingers past a second; reap it."""
    for conn in (out, inp):
        try:
            conn.close()
        except OSError:
            pass
    try:
        proc.wait(timeout=1.0)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
