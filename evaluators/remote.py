"""The candidate's function as a callable in the evaluator, run in the candidate's own process.

The evaluator (trusted: the simulator, the data, the future) never imports
candidate code. `Remote(program, name)` reads the program and starts a worker
(evaluators/worker.py) which confines itself (evaluators/confinement.py),
executes the program's source and answers calls of `name`. Frame inspection,
gc.get_objects() or `sys.modules['evaluator']` in the candidate find only the
worker, which knows nothing but the arguments it was sent: it is a fresh interpreter
(`_start`) or a fork the harness made before it read anything of its request (`zygote`),
never a copy of a process that held the request.

Parent -> worker: pickle (the worker trusts its parent), of builtins and
numpy values only, plus what evaluators/records.py makes travel by reference
(kit.Memory by identity, records by field values). Messages (op, seq,
payload, dropped Memory ids): "preload" ([module, ...], to a zygote, optional), then
"load" (path, source, name, setup); then "call"
((args, kwargs): one result and the seconds the call took), "map" ([args,
...]) and "rows" ((record class, [field values, ...]): one record per call)
-> one reply with a result per call, the calls made in order, stopping at the
first exception. Replies are untrusted: evaluators/codec.py.
"""

from __future__ import annotations

import ast
import io
import json
import operator
import os
import pickle
import signal
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from evaluators import landlock, records
from evaluators.channel import Channel
from evaluators.codec import MAX_REPLY, WHO, WorkerError, decode, rebuild_error
from evaluators.confinement import private_paths
from evaluators.records import Memory, is_numeric

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


class _Layout:
    """How the records of one class travel: (class name, fields, positions of Memory fields),
    and a getter of their values with each Memory as its id (attrgetter: no Python frame)."""

    __slots__ = ("decl", "get")

    def __init__(self, t: type, example: object) -> None:
        fields = t.fields  # type: ignore[attr-defined]
        memory_at = tuple(
            i for i, f in enumerate(fields) if type(getattr(example, f, None)) is Memory
        )
        names = [f"{f}.id" if i in memory_at else f for i, f in enumerate(fields)]
        self.decl = (t.__name__, fields, memory_at)
        if len(names) == 1:
            one = operator.attrgetter(names[0])
            self.get = lambda o: (one(o),)
        else:
            self.get = operator.attrgetter(*names)


_layouts: dict[type, _Layout] = {}


def _layout(t: type, example: object) -> _Layout | None:
    """The layout of record class t (None if t is no record class), fixed at its first instance."""
    lay = _layouts.get(t)
    if lay is None:
        fields = getattr(t, "fields", None)
        if type(fields) is not tuple or issubclass(t, type):
            return None
        lay = _layouts[t] = _Layout(t, example)
    return lay


class _Reductions(dict):
    """The pickler's dispatch_table: how each type travels, decided at its first sight.
    A KeyError lets pickle use the type's own __reduce_ex__ (builtins, numpy)."""

    def __missing__(self, t: type) -> Callable[[Any], object]:
        red: Callable[[Any], object]
        if type(getattr(t, "fields", None)) is tuple and not issubclass(t, type):

            def first(o: object) -> object:  # the layout needs an instance
                lay = _layout(t, o)
                assert lay is not None
                decl, get = lay.decl, lay.get
                self[t] = lambda o: (records.record, (decl, get(o)))
                return self[t](o)

            red = first
        elif t is Memory:
            red = operator.attrgetter("wire")  # precomputed: no Python frame per Memory
        elif t.__module__.startswith("numpy") and t.__name__ == "ndarray":
            red = _reduce_ndarray
        elif t.__module__.startswith("numpy") or t.__module__ == "builtins":
            raise KeyError(t)
        else:
            raise pickle.PicklingError(
                f"cannot send a {t.__module__}.{t.__qualname__} to {WHO}: only builtins, numpy "
                "values, kit.Memory and objects whose class lists its `fields`"
            )
        self[t] = red
        return red


def _reduce_ndarray(a: Any) -> object:
    if is_numeric(a.dtype):  # raw bytes, no numpy reconstruction machinery
        flags = a.flags
        data = (
            pickle.PickleBuffer(a)
            if flags.c_contiguous and flags.writeable
            else bytearray(a.tobytes())
        )
        return (records.ndarray, (data, a.dtype.str, a.shape))
    return a.__reduce_ex__(5)


_reductions = _Reductions()


def undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): a same-uid process cannot read this one's memory (/proc/PID/mem)."""
    try:
        landlock.prctl(4, 0)
    except (OSError, AttributeError):
        pass


# The worker's command: its folder is not on sys.path (-I), so it imports its siblings as the
# `evaluators` package from the folder given as its first argument.
_BOOT = (
    "import sys, types\n"
    "evaluators = types.ModuleType('evaluators')\n"
    "evaluators.__path__ = [sys.argv[1]]\n"
    "sys.modules['evaluators'] = evaluators\n"
    "from evaluators import worker\n"
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
    except (SyntaxError, ValueError):
        return []
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
            from evaluators import worker

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
# per-launch token (evaluators/limits.py), by which it finds what an evaluation started.
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
        _reap(*spare)


class LoadFailed(BaseException):
    """The program failed to import (or lacks the function) and the evaluator found out at its
    first call: carried past the evaluator's `except Exception` to `kit.evaluate`, which
    raises the original. A BaseException so that no simulator's handler mistakes it for a
    failure of that call."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class Remote:
    """The candidate's function `name` from `program`, called in a worker process.

    `fn(*args)` is one call; `fn.map([args, ...])` and `fn.each([arg, ...])` make several in
    one round trip (stopping at the first exception, whose `call_index` says which);
    `fn.timed(*args)` also returns the seconds the call took, timed by the caller. Import errors
    raise from the constructor, as importing the program would; a missing function raises
    `missing(name)`. With `wait=False` the constructor returns while the worker starts and
    imports the program (in parallel with the evaluator loading its data), and the first call
    raises `LoadFailed` carrying either error.
    """

    def __init__(
        self,
        program: str,
        name: str,
        missing: Callable[[str], BaseException],
        confine: bool = True,
        wait: bool = True,
    ) -> None:
        self.name = name
        self.confinement: dict = {}
        self._missing = missing
        self._loaded = False
        self._seq = 0
        self._buf = io.BytesIO()
        self._pickler = pickle.Pickler(self._buf, protocol=pickle.HIGHEST_PROTOCOL)
        self._pickler.dispatch_table = _reductions
        with open(program, "rb") as f:
            source = f.read()
        undumpable()
        global _spare
        started, _spare = _spare or _start(preloads(source)), None
        self._proc, self._out, self._in = started
        self._finalizer = weakref.finalize(self, _reap, self._proc, self._out, self._in)
        try:
            setup = {"private": private_paths(), "confine": confine}
            self._send(("load", 0, (os.path.abspath(program), source, name, setup), []))
        except BaseException:
            self.close()
            raise
        if wait:
            self.ready()

    def ready(self) -> None:
        """Wait for the worker's word on the import: raise the import error, or `missing`."""
        if self._loaded:
            return
        self._loaded = True
        try:
            hello = self._receive("importing the program")
        except BaseException:
            self.close()
            raise
        confinement = hello.get("hello")
        self.confinement = confinement if isinstance(confinement, dict) else {}
        if "missing" in hello:
            self.close()
            raise self._missing(self.name)

    # -- calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.timed(*args, **kwargs)[0]

    def timed(self, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        """(the call's result, the seconds it took), timed here around the request and its
        reply, after the program's import: a clock the candidate cannot rebind, as it could
        the worker's."""
        self._await_load()
        t0 = time.perf_counter()
        reply = self._request("call", (args, kwargs))
        return reply["ok"], time.perf_counter() - t0

    def map(self, calls: Sequence[tuple]) -> list:
        """[fn(*args) for args in calls], in order, in one round trip."""
        if calls and all(len(c) == 1 for c in calls):
            return self.each([c[0] for c in calls])
        return self._results("map", calls, len(calls))

    def each(self, args: Sequence[object]) -> list:
        """[fn(a) for a in args], in order, in one round trip. When all are records of one
        class (spot's State), they travel as rows of values and the class once."""
        if not args:
            return []
        t = type(args[0])
        lay = _layout(t, args[0])
        if lay is not None and all(type(a) is t for a in args):
            return self._results("rows", (lay.decl, list(map(lay.get, args))), len(args))
        return self._results("map", [(a,) for a in args], len(args))

    def _results(self, op: str, payload: object, n: int) -> list:
        results = self._request(op, payload)["ok"]
        if type(results) is not list or len(results) != n:
            raise WorkerError(f"{WHO} answered {n} calls of {self.name}() with a malformed reply")
        return results

    def _await_load(self) -> None:
        if not self._loaded:
            try:
                self.ready()
            except BaseException as e:
                raise LoadFailed(e) from None

    def _request(self, op: str, payload: object) -> dict:
        self._await_load()
        self._seq += 1
        dropped = records.dropped[:]
        del records.dropped[: len(dropped)]
        self._send((op, self._seq, payload, dropped))
        reply = self._receive(f"running {self.name}()")
        if reply.get("seq") != self._seq:
            raise WorkerError(f"{WHO} broke the protocol (a reply out of sequence)")
        if "err" in reply:
            raise rebuild_error(reply["err"], reply.get("at"))
        return reply

    def _send(self, message: tuple) -> None:
        buf, pickler = self._buf, self._pickler
        buf.seek(0)
        buf.truncate()
        pickler.clear_memo()
        pickler.dump(message)
        try:
            self._out.send(buf.getbuffer())
        except OSError:
            self._died(f"running {self.name}()")

    def _receive(self, doing: str) -> dict:
        try:
            frame = self._in.recv(MAX_REPLY + 8)
        except EOFError:
            self._died(doing)
        except OSError as e:  # "bad message length": over the cap
            self.close()
            raise WorkerError(f"{WHO} sent a reply over {MAX_REPLY >> 20} MiB ({e})") from None
        try:
            reply = decode(frame)
        except (ValueError, TypeError, KeyError, IndexError, RecursionError) as e:
            self.close()
            raise WorkerError(f"{WHO} sent a malformed reply: {e}"[:300]) from None
        if type(reply) is not dict:
            raise WorkerError(f"{WHO} sent a malformed reply")
        if "err" in reply and "seq" not in reply:  # failed before serving: the import
            raise rebuild_error(reply["err"], None)
        return reply

    def _died(self, doing: str):
        code = self._proc.poll()
        if code is None:
            try:
                code = self._proc.wait(timeout=2)
            except subprocess.TimeoutExpired:
                code = None
        self.close()
        if code is None:
            how = "closed its pipe"
        elif code < 0:
            try:
                how = f"was killed by signal {-code} ({signal.Signals(-code).name})"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        raise WorkerError(f"{WHO} {how} while {doing}")

    # -- lifetime
    @property
    def note(self) -> str | None:
        """A one-line note when the worker could not confine itself, else None."""
        if not self._loaded:
            return None
        c = self.confinement
        if c.get("confined"):
            missing = [w for w in ("tcp bind/connect", "signals") if w not in c.get("handled", [])]
            if missing:
                lost = " or ".join(missing)
                return f"landlock ABI {c.get('abi')}: files are confined but not {lost}"
            return None
        why = c.get("error") or "landlock unavailable"
        return f"{why}: the candidate can read the problem's files"

    def close(self) -> None:
        """End the worker: EOF on its pipe, then SIGKILL if it lingers; reap it."""
        self._finalizer()

    def __enter__(self) -> Remote:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reap(proc: subprocess.Popen | _Forked, out: Channel, inp: Channel) -> None:
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
