"""The candidate's own process: a worker that runs the program and serves calls of one function.

The evaluator (trusted: the simulator, the data, the future) never imports
candidate code. `Remote(program, name)` reads the program and starts

    python -I -s remote.py READ_FD WRITE_FD SETUP_JSON

which confines itself with Landlock (evaluators/landlock.py: read-only access
to the interpreter and its libraries, nothing else: not the program file, the
problem, the data, the kit or the working directory; no write, no TCP, no
signal out), then executes the program's source, sent as its first message,
and answers calls of `name` until its request pipe closes. The evaluator holds
a `Remote`, a callable proxy: frame inspection, gc.get_objects() or
`sys.modules['evaluator']` in the candidate find only the worker, which knows
nothing but the arguments it was sent.

The protocol travels on two dedicated pipes (4-byte length + bytes frames, the
framing of multiprocessing's Connection, one write() each), never on
stdin/stdout: the candidate's prints go to the inherited stdout/stderr, which
the sandbox captures.

- Parent -> worker: pickle (the worker trusts its parent), of builtins and
  numpy values only, plus two kit types. An object whose class has a `fields`
  tuple (spot's State) travels as its field values and becomes a slotted
  object of the same class name and repr in the worker; a `Memory` (a dict)
  travels by identity: the worker keeps one dict per Memory, the same object
  at every call that passes it, so what the candidate stores there persists,
  and drops it once the parent's Memory is garbage.
  Messages (op, seq, payload, dropped Memory ids): "load" (path, source,
  name) first; then "call" ((args, kwargs): one result and the seconds the
  call took), "map" ([args, ...]) and "rows" ((record class, [field values,
  ...]): one record per call) -> one reply with a result per call, the calls
  made in order, stopping at the first exception.
- Worker -> parent: UNTRUSTED, never unpickled. One frame: b"J" + JSON, or
  b"B" + 4-byte JSON length + JSON + raw bytes that numeric numpy arrays
  (dtype kind b, i, u, f) point into. Containers other than lists are tagged
  ({"t": tuple}, {"d": dict pairs}, {"a"/"n": array/numpy scalar},
  {"b": bytes}); anything else becomes a stand-in with the type's name and a
  clipped repr (`Foreign`), so an evaluator's validation sees what it would
  have seen. Replies are capped at MAX_REPLY bytes.

A candidate's exception comes back as a `CandidateError` subclass named and
based like the original (a ZeroDivisionError is caught by `except
ArithmeticError`, a SystemExit is not caught by `except Exception`, an
OSError keeps its errno), carrying the message and the worker's traceback
text. A worker that dies, hangs up or sends garbage raises `WorkerError`.

Stdlib only: it runs inside both sandboxes, and as the worker before the
candidate imports anything.
"""

from __future__ import annotations

import builtins
import gc
import importlib.util
import io
import itertools
import json
import keyword
import linecache
import operator
import os
import pickle
import re
import select
import signal
import struct
import subprocess
import sys
import time
import traceback
import types
import weakref
from collections.abc import Callable, Iterable, Sequence
from typing import Any

MAX_REPLY = 64 << 20  # bytes of one worker reply
MAX_DEPTH = 64  # nesting of a reply's containers
MAX_TEXT = 4000  # characters of an exception message or a stand-in's repr
MAX_TRACEBACK = 8000
_INT_BITS = 10_000  # larger ints travel as stand-ins (JSON parsers cap digits)
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
_DTYPE = re.compile(r"[<>|=][biuf](1|2|4|8)\Z")
_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))
_WHO = "the candidate's process"


SPIN_S = 0.0002  # how long recv() polls an empty pipe before it sleeps, with a spare CPU


def _idle_cpu() -> bool:
    """Whether a spare CPU is likely: 2+ usable and the load average leaves one free. Polling
    keeps both processes on a CPU; a loaded machine (parallel evaluations) is better off
    sleeping."""
    try:
        cpus = len(os.sched_getaffinity(0))
        return cpus > 1 and os.getloadavg()[0] < cpus - 1
    except (AttributeError, OSError):
        return False


class Channel:
    """One direction of a pipe, framed as a 4-byte big-endian length and the bytes (the framing
    of multiprocessing's Connection), written with one write() per frame and read in large
    chunks: fewer syscalls and wake-ups than Connection, which writes a large frame's header
    and body separately. With a spare CPU, recv() polls for SPIN_S before it sleeps: a round
    trip then often costs no wake-up (20-25% of a spot_scheduling evaluation)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self._buf = bytearray()
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)
        self.spin = SPIN_S if _idle_cpu() else 0.0

    def send(self, data: bytes | bytearray | memoryview) -> None:
        frame = memoryview(struct.pack("!i", len(data)) + data)
        while frame:
            frame = frame[os.write(self.fd, frame) :]

    def recv(self, limit: int = 1 << 62) -> bytearray:
        """The next frame; EOFError at the end of the pipe, OSError over `limit` bytes."""
        buf = self._buf
        if len(buf) < 4 and self.spin:  # the other side answers fast: poll before sleeping
            poll, clock = self._poll.poll, time.perf_counter
            end = clock() + self.spin
            while not poll(0) and clock() < end:
                pass
        while len(buf) < 4:
            self._read(4)
        (n,) = struct.unpack_from("!i", buf)
        if n < 0 or n > limit:
            raise OSError(f"bad message length ({n} bytes)")
        while len(buf) < 4 + n:
            self._read(4 + n - len(buf))
        frame = buf[4 : 4 + n]
        del buf[: 4 + n]
        return frame

    def _read(self, want: int) -> None:
        chunk = os.read(self.fd, max(want, 1 << 16))
        if not chunk:
            raise EOFError
        self._buf += chunk

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)


# --- shared by both sides ----------------------------------------------------------------------
class Memory(dict):
    """A dict the candidate keeps across calls: sent to the worker by identity (one dict there
    per Memory here, the same object at every call that passes it, empty at first), dropped
    there once this Memory is garbage. What the candidate stores lives only in the worker;
    in-process (`kit.REMOTE = False`) this is the candidate's dict itself."""

    __slots__ = ("id", "wire")
    _ids = itertools.count()

    def __init__(self) -> None:
        super().__init__()
        self.id = next(Memory._ids)
        self.wire = (_memory, (self.id,))  # how it travels

    def __del__(self) -> None:
        _dropped.append(self.id)

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return self.wire


_dropped: list[int] = []  # ids of Memory objects gone in this process, for the worker to drop


class CandidateError(BaseException):
    """Raised by the candidate in its process. Never raised as such: `error_class()` makes a
    subclass with the original's name, also based on its nearest builtin exception class."""

    type_name = "CandidateError"
    message = ""
    remote_traceback = ""
    call_index: int | None = None  # in a map(): which call raised

    def __str__(self) -> str:
        return self.message


class WorkerError(RuntimeError):
    """The candidate's process died, hung up or broke the protocol."""


class Foreign:
    """A value of a type that cannot leave the candidate's process: its type name and repr."""

    __slots__ = ("_repr",)

    def __init__(self, text: str) -> None:
        self._repr = text

    def __repr__(self) -> str:
        return self._repr


_BUILTIN_EXC = {
    n: c for n, c in vars(builtins).items() if isinstance(c, type) and issubclass(c, BaseException)
}
_error_classes: dict[tuple[str, type], type] = {}
_foreign_classes: dict[str, type] = {}


def _name(raw: object, default: str) -> str:
    return raw if isinstance(raw, str) and raw.isidentifier() and len(raw) <= 100 else default


def error_class(name: str, base: type[BaseException]) -> type[CandidateError]:
    """CandidateError subclass `name`, also a subclass of the builtin exception `base`."""
    key = (name, base)
    if key not in _error_classes:
        bases = (CandidateError,) if base is BaseException else (CandidateError, base)
        _error_classes[key] = type(name, bases, {"__module__": "candidate", "type_name": name})
    return _error_classes[key]  # type: ignore[return-value]


def _record(decl: tuple, values: tuple) -> object:
    """Worker side: a parent's record as a plain object of the same class name and repr."""
    cls = _record_classes.get(decl)
    if cls is None:
        cls = _record_classes[decl] = _record_class(*decl)
    return cls(values)


def _record_class(name: str, fields: tuple, memory_at: tuple) -> type:
    """A class with slots `fields` whose __init__ takes their values in one tuple; the values
    at `memory_at` are Memory ids, replaced by the candidate's dicts."""
    if not all(
        isinstance(f, str) and f.isidentifier() and not keyword.iskeyword(f) for f in fields
    ):
        raise ValueError(f"bad record fields {fields!r:.100}")
    targets = "".join(f"_m{i}, " if i in memory_at else f"self.{f}, " for i, f in enumerate(fields))
    lines = [f"def __init__(self, values):\n    {targets}= values\n"]
    for i in memory_at:  # one frame per record: these run for every call
        lines.append(
            f"    d = _memories.get(_m{i})\n    self.{fields[i]} = d if d is not None else _memory(_m{i})\n"
        )
    ns: dict = {"_memories": _memories, "_memory": _memory}
    exec("".join(lines), ns)
    return type(
        name,
        (_Record,),
        {"__slots__": fields, "fields": fields, "__init__": ns["__init__"], "__module__": "state"},
    )


class _Record:
    __slots__ = ()
    fields: tuple = ()

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{k}={getattr(self, k)!r}"
            for k in self.fields
            if id(getattr(self, k, None)) not in _memory_ids
        )
        return f"{type(self).__name__}({shown})"


_record_classes: dict[tuple, type] = {}
_memories: dict[int, dict] = {}  # worker side: Memory id -> the candidate's dict
_memory_ids: set[int] = set()  # id() of those dicts, left out of a record's repr


def _memory(mid: int) -> dict:
    """Worker side: the dict of Memory `mid`, empty at first sight."""
    d = _memories.get(mid)
    if d is None:
        d = _memories[mid] = {}
        _memory_ids.add(id(d))
    return d


def _ndarray(data: bytearray, dtype: str, shape: tuple) -> object:
    """Worker side: a numeric array from its bytes (writable, as the caller's copy was)."""
    return _numpy().frombuffer(data, dtype=dtype).reshape(shape)


_np: Any = None


def _numpy() -> Any:
    """numpy, imported at first need: the kit and the worker work without it."""
    global _np
    if _np is None:
        import numpy

        _np = numpy
    return _np


_numeric: dict[object, bool] = {}  # dtype -> travels as raw bytes (kind b, i, u, f; sizes 1-8)


def _is_numeric(dtype: Any) -> bool:
    ok = _numeric.get(dtype)
    if ok is None:
        ok = _numeric[dtype] = bool(_DTYPE.match(dtype.str))
    return ok


# --- parent side -------------------------------------------------------------------------------
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
                self[t] = lambda o: (_record, (decl, get(o)))
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
                f"cannot send a {t.__module__}.{t.__qualname__} to {_WHO}: only builtins, numpy "
                "values, kit.Memory and objects whose class lists its `fields`"
            )
        self[t] = red
        return red


def _reduce_ndarray(a: Any) -> object:
    if _is_numeric(a.dtype):  # raw bytes, no numpy reconstruction machinery
        flags = a.flags
        data = (
            pickle.PickleBuffer(a)
            if flags.c_contiguous and flags.writeable
            else bytearray(a.tobytes())
        )
        return (_ndarray, (data, a.dtype.str, a.shape))
    return a.__reduce_ex__(5)


_reductions = _Reductions()


def undumpable() -> None:
    """prctl(PR_SET_DUMPABLE, 0): a same-uid process cannot read this one's memory (/proc/PID/mem)."""
    try:
        _landlock().prctl(4, 0)
    except (OSError, AttributeError):
        pass


def _landlock():
    mod = sys.modules.get("evaluators.landlock")
    if mod is None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "landlock.py")
        spec = importlib.util.spec_from_file_location("evaluators.landlock", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules["evaluators.landlock"] = mod
        spec.loader.exec_module(mod)
    return mod


def _library_roots() -> list[str]:
    """The interpreter's prefixes and every site-packages / dist-packages folder on sys.path."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    return sorted({os.path.realpath(r) for r in roots if r})


def _under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def private_paths(extra: Iterable[str] = ()) -> list[str]:
    """Folders the worker must never be granted (nor their parents): the cwd, the evaluators
    folder, the data and include folders, the folder of every module loaded here that is not
    part of the interpreter's libraries (the evaluator, its simulator, the harness), where
    the libraries are the prefixes and the site-packages folders on sys.path."""
    paths = {os.getcwd(), os.path.dirname(os.path.abspath(__file__)), *extra}
    for var in ("EVOLVE_DATA_DIR", "EVOLVE_INCLUDE_DIR"):
        if os.environ.get(var):
            paths.add(os.environ[var])
    libs = _library_roots()
    for name, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        if isinstance(f, str) and os.path.isabs(f):
            d = os.path.realpath(os.path.dirname(f))
            if name in ("__main__", "evaluator") or not any(_under(d, r) for r in libs):
                paths.add(d)
    return sorted(os.path.realpath(p) for p in paths)


class Remote:
    """The candidate's function `name` from `program`, called in a worker process.

    `fn(*args)` is one call; `fn.map([args, ...])` and `fn.each([arg, ...])` make several in
    one round trip (stopping at the first exception, whose `call_index` says which);
    `fn.timed(*args)` also returns the seconds the call took in the worker. Import errors raise from the constructor, as
    importing the program would; a missing function raises `missing(name)`.
    """

    def __init__(
        self, program: str, name: str, missing: Callable[[str], BaseException], confine: bool = True
    ) -> None:
        self.name = name
        self.confinement: dict = {}
        self._seq = 0
        self._buf = io.BytesIO()
        self._pickler = pickle.Pickler(self._buf, protocol=pickle.HIGHEST_PROTOCOL)
        self._pickler.dispatch_table = _reductions
        with open(program, "rb") as f:
            source = f.read()
        undumpable()
        from_parent, to_worker = os.pipe()  # (read end, write end)
        from_worker, to_parent = os.pipe()
        setup = {"parent": os.getpid(), "private": private_paths(), "confine": confine}
        try:
            self._proc = subprocess.Popen(
                [
                    sys.executable,
                    "-I",
                    "-s",
                    os.path.abspath(__file__),
                    str(from_parent),
                    str(to_parent),
                    json.dumps(setup),
                ],
                pass_fds=(from_parent, to_parent),
                stdin=subprocess.DEVNULL,
                env={k: v for k, v in os.environ.items() if k in _ENV_KEEP},
                close_fds=True,
            )
        finally:
            os.close(from_parent)
            os.close(to_parent)
        self._out = Channel(to_worker)
        self._in = Channel(from_worker)
        self._finalizer = weakref.finalize(self, _reap, self._proc, self._out, self._in)
        try:
            self._send(("load", 0, (os.path.abspath(program), source, name), []))
            hello = self._receive("importing the program")
        except BaseException:
            self.close()
            raise
        if "missing" in hello:
            self.close()
            raise missing(name)
        confinement = hello.get("hello")
        self.confinement = confinement if isinstance(confinement, dict) else {}

    # -- calls
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.timed(*args, **kwargs)[0]

    def timed(self, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        """(the call's result, the seconds it took in the worker: clamp before trusting it)."""
        reply = self._request("call", (args, kwargs))
        seconds: Any = reply.get("s")
        if type(seconds) not in (int, float) or not 0 <= seconds < float("inf"):
            seconds = float("inf")  # garbage: the evaluator rejects it
        return reply["ok"], float(seconds)

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
            raise WorkerError(f"{_WHO} answered {n} calls of {self.name}() with a malformed reply")
        return results

    def _request(self, op: str, payload: object) -> dict:
        self._seq += 1
        dropped = _dropped[:]
        del _dropped[: len(dropped)]
        self._send((op, self._seq, payload, dropped))
        reply = self._receive(f"running {self.name}()")
        if reply.get("seq") != self._seq:
            raise WorkerError(f"{_WHO} broke the protocol (a reply out of sequence)")
        if "err" in reply:
            raise _rebuild_error(reply["err"], reply.get("at"))
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
            raise WorkerError(f"{_WHO} sent a reply over {MAX_REPLY >> 20} MiB ({e})") from None
        try:
            reply = decode(frame)
        except (ValueError, TypeError, KeyError, IndexError, RecursionError) as e:
            self.close()
            raise WorkerError(f"{_WHO} sent a malformed reply: {e}"[:300]) from None
        if type(reply) is not dict:
            raise WorkerError(f"{_WHO} sent a malformed reply")
        if "err" in reply and "seq" not in reply:  # failed before serving: the import
            raise _rebuild_error(reply["err"], None)
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
        raise WorkerError(f"{_WHO} {how} while {doing}")

    # -- lifetime
    @property
    def note(self) -> str | None:
        """A one-line note when the worker could not confine itself, else None."""
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


def _reap(proc: subprocess.Popen, out: Channel, inp: Channel) -> None:
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


def _rebuild_error(raw: object, index: object) -> BaseException:
    """The candidate's exception, from its untrusted description."""
    if not isinstance(raw, dict):
        return WorkerError(f"{_WHO} sent a malformed error")
    name = _name(raw.get("type"), "CandidateException")
    bases = [
        _BUILTIN_EXC[b] for b in raw.get("bases", []) if isinstance(b, str) and b in _BUILTIN_EXC
    ]
    msg = raw.get("msg")
    message = msg[:MAX_TEXT] if isinstance(msg, str) else ""
    errno_, code = raw.get("errno"), raw.get("code")
    exc: BaseException | None = None
    for base in [*bases, Exception]:
        for cand in base.__mro__:
            if not issubclass(cand, BaseException):
                continue
            if issubclass(cand, OSError) and type(errno_) is int:
                args: tuple = (errno_, message.split("] ", 1)[-1])
            elif issubclass(cand, SystemExit):
                args = (code,) if code is None or type(code) in (int, str) else (str(code),)
            else:
                args = (message,)
            try:
                exc = error_class(name, cand)(*args)
                break
            except Exception:
                continue
        if exc is not None:
            break
    assert isinstance(exc, CandidateError)
    exc.message = message
    tb_raw = raw.get("tb")
    tb = tb_raw if isinstance(tb_raw, str) else ""
    exc.remote_traceback = tb[-MAX_TRACEBACK:]
    if type(index) is int:
        exc.call_index = index
    if tb and hasattr(exc, "add_note"):
        exc.add_note(f"In {_WHO}:\n{exc.remote_traceback.rstrip()}")
    return exc


def decode(frame: bytes | bytearray) -> dict:
    """A worker reply, validated: a JSON object whose "ok" value may point into raw numeric
    arrays; ValueError if malformed."""
    raw: bytes | memoryview
    if frame[:1] == b"J":
        envelope, raw = json.loads(frame[1:]), b""
    elif frame[:1] == b"B" and len(frame) >= 5:
        (n,) = struct.unpack_from("<I", frame, 1)
        if 5 + n > len(frame):
            raise ValueError("truncated frame")
        envelope, raw = json.loads(frame[5 : 5 + n]), memoryview(frame)[5 + n :]
    else:
        raise ValueError("unknown frame")
    if type(envelope) is not dict:
        raise ValueError("not an object")
    if "ok" in envelope:
        envelope["ok"] = _dec(envelope["ok"], raw, 0)
    return envelope


def _dec(v: Any, raw: Any, depth: int) -> object:
    t = type(v)
    if t is str or t is int or t is float or t is bool or v is None:
        return v
    if depth > MAX_DEPTH:
        raise ValueError("nested too deeply")
    if t is list:
        if set(map(type, v)) <= _JSON_SCALARS:
            return v  # the common case, checked in C
        return [_dec(x, raw, depth + 1) for x in v]
    if t is not dict or len(v) != 1:
        raise ValueError("unknown value")
    ((tag, x),) = v.items()
    if tag == "t" and type(x) is list:
        return tuple(_dec(y, raw, depth + 1) for y in x)
    if tag == "d" and type(x) is list:
        out = {}
        for pair in x:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("bad dict item")
            out[_dec(pair[0], raw, depth + 1)] = _dec(pair[1], raw, depth + 1)
        return out
    if tag in ("a", "n") and type(x) is list and len(x) == 4:
        return _array(x, raw, scalar=tag == "n")
    if tag == "b" and type(x) is list and len(x) == 2:
        off, n = x
        if type(off) is not int or type(n) is not int or off < 0 or n < 0 or off + n > len(raw):
            raise ValueError("bad bytes")
        return bytes(raw[off : off + n])
    if tag == "o" and type(x) is list and len(x) == 2 and all(type(y) is str for y in x):
        name = _name(x[0], "object")
        cls = _foreign_classes.get(name)
        if cls is None:
            cls = _foreign_classes[name] = type(
                name, (Foreign,), {"__slots__": (), "__module__": "candidate"}
            )
        return cls(x[1][:MAX_TEXT])
    raise ValueError(f"unknown tag {tag!r:.20}")


_dtypes: dict[str, Any] = {}


def _array(x: list, raw: Any, scalar: bool) -> object:
    dtype, shape, off, n = x
    dt = _dtypes.get(dtype) if type(dtype) is str else None
    if dt is None:
        if type(dtype) is not str or not _DTYPE.match(dtype):
            raise ValueError(f"array dtype {dtype!r:.20} is not a real number type")
        dt = _dtypes[dtype] = _numpy().dtype(dtype)
    if (
        type(shape) is not list
        or len(shape) > 32
        or not all(type(d) is int and d >= 0 for d in shape)
        or type(off) is not int
        or type(n) is not int
        or off < 0
        or n < 0
        or off + n > len(raw)
    ):
        raise ValueError("bad array header")
    size = 1
    for d in shape:
        size *= d
    if size * dt.itemsize != n or (scalar and shape):
        raise ValueError("array size does not match its shape")
    # a view of the frame, a bytearray: writable, as the candidate's array was
    arr = _numpy().frombuffer(raw, dtype=dt, count=size, offset=off).reshape(shape)
    return arr[()] if scalar else arr


# --- worker side -------------------------------------------------------------------------------
_dumps = json.JSONEncoder(check_circular=False, separators=(",", ":")).encode
_PLAIN = frozenset((str, float, bool, type(None)))  # sent as they are (ints are checked for size)
_NOTHING = object()


def encode(envelope: dict, value: object = _NOTHING) -> bytes:
    """A reply frame (see the module docstring): the envelope, with `value` encoded as its "ok"."""
    bufs: list = []
    if value is not _NOTHING:
        envelope["ok"] = _enc(value, bufs, [0], 0)
    doc = _dumps(envelope).encode()
    if not bufs:
        return b"J" + doc
    return b"".join([b"B", struct.pack("<I", len(doc)), doc, *bufs])


def _enc(v: Any, bufs: list, pos: list, depth: int) -> object:
    t = type(v)
    if t is str or t is float or t is bool or v is None:
        return v
    if t is int:
        return v if v.bit_length() <= _INT_BITS else _foreign(v)
    if depth > MAX_DEPTH:
        return {"o": [t.__name__, "<nested too deeply to send>"]}
    if t is list:
        if set(map(type, v)) <= _PLAIN:
            return v  # the common case, checked in C
        return [_enc(x, bufs, pos, depth + 1) for x in v]
    if t is tuple:
        return {"t": [_enc(x, bufs, pos, depth + 1) for x in v]}
    if t is dict:
        items = v.items()
        return {
            "d": [[_enc(k, bufs, pos, depth + 1), _enc(x, bufs, pos, depth + 1)] for k, x in items]
        }
    if t is bytes or t is bytearray:
        bufs.append(bytes(v))
        pos[0] += len(v)
        return {"b": [pos[0] - len(v), len(v)]}
    np = sys.modules.get("numpy")
    if np is not None:
        arr = None
        if isinstance(v, (np.ndarray, np.generic)):
            arr = np.asarray(v)
        elif hasattr(t, "__array__"):  # torch tensors and the like
            try:
                arr = np.asarray(v)
            except Exception:
                arr = None
        if arr is not None and _is_numeric(arr.dtype):
            data = arr.tobytes()  # C order
            bufs.append(data)
            pos[0] += len(data)
            tag = "n" if isinstance(v, np.generic) else "a"
            return {tag: [arr.dtype.str, list(arr.shape), pos[0] - len(data), len(data)]}
    return _foreign(v)


def _foreign(v: object) -> dict:
    try:
        text = repr(v)
    except BaseException:
        text = f"<{type(v).__name__} object>"
    if type(text) is not str:
        text = f"<{type(v).__name__} object>"
    return {"o": [type(v).__name__, text[:MAX_TEXT]]}


def _safe_str(e: BaseException) -> str:
    try:
        s = str(e)
        return s if type(s) is str else ""
    except BaseException:
        return f"<unprintable {type(e).__name__}>"


def _describe(e: BaseException, skip: int) -> dict:
    """An exception as the parent rebuilds it; `skip` worker frames left out of the traceback."""
    tb = e.__traceback__
    for _ in range(skip):
        if tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
    try:
        text = "".join(traceback.format_exception(type(e), e, tb))
    except BaseException:
        text = ""
    out: dict = {
        "type": type(e).__name__,
        "bases": [c.__name__ for c in type(e).__mro__ if _BUILTIN_EXC.get(c.__name__) is c],
        "msg": _safe_str(e)[:MAX_TEXT],
        "tb": text[-MAX_TRACEBACK:],
    }
    if isinstance(e, OSError) and type(e.errno) is int:
        out["errno"] = e.errno
    if isinstance(e, SystemExit):
        out["code"] = e.code if e.code is None or type(e.code) in (int, str) else repr(e.code)
    return out


class _Unpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "evaluators.remote" and name in ("_record", "_memory", "_ndarray"):
            return {"_record": _record, "_memory": _memory, "_ndarray": _ndarray}[name]
        return super().find_class(module, name)


_SPLIT_DEPTH = 4  # how deep a library folder holding a private one is split into its entries


def _grants(setup: dict) -> tuple[list[str], list[str]]:
    """Read-only folders and files for the worker: the interpreter and its libraries, never a
    private folder, its parents or what lies in it (the cwd's subfolders excepted: a venv may
    live in a checkout). A library folder that holds a private one (site-packages holding an
    installed `evaluators`, /usr holding a problem) is granted entry by entry around it;
    any other sys.path entry that holds one (a checkout an editable install put there) is not."""
    cwd = os.path.realpath(os.getcwd())
    private = [os.path.realpath(p) for p in setup.get("private", [])]
    trees = [p for p in private if p != cwd]
    libraries = {
        os.path.realpath(p)
        for p in (
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            "/usr",
            "/lib",
            "/lib64",
        )
    }
    libraries |= {
        os.path.realpath(p)
        for p in sys.path
        if os.path.basename(p) in ("site-packages", "dist-packages")
    }
    roots = [*libraries, *(os.path.realpath(p) for p in sys.path if p and os.path.isabs(p))]
    dirs: list[str] = []
    files = ["/etc/ld.so.cache", "/dev/null", "/dev/urandom"]

    def add(path: str, depth: int, splittable: bool) -> None:
        if any(_under(path, p) for p in trees) or path == "/":
            return  # a private folder, or inside one
        if not any(_under(p, path) for p in private):
            dirs.append(path)
            return
        if not splittable or depth >= _SPLIT_DEPTH:
            return  # holds a private folder: never granted whole
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                add(entry.path, depth + 1, True)
            elif entry.is_file(follow_symlinks=False) and not any(
                _under(entry.path, p) for p in trees
            ):
                files.append(entry.path)

    for root in dict.fromkeys(r for r in roots if os.path.isdir(r)):
        add(root, 0, root in libraries)
    return list(dict.fromkeys(dirs)), [f for f in dict.fromkeys(files) if os.path.exists(f)]


def _confine(setup: dict) -> dict:
    if not setup.get("confine", True):
        return {"confined": False, "error": "landlock not requested"}
    landlock = _landlock()
    dirs, files = _grants(setup)
    try:
        c = landlock.restrict(dirs, files)
    except OSError as e:
        return {"confined": False, "error": f"landlock failed ({e})"}
    return {"confined": c.confined, "abi": c.abi, "error": c.error, "handled": c.handled}


_reserve: bytearray | None = None


def _reply(conn: Channel, envelope: dict) -> None:
    frame = encode(envelope, envelope.pop("ok")) if "ok" in envelope else encode(envelope)
    if len(frame) > MAX_REPLY:
        envelope.pop("ok", None)
        envelope["err"] = {
            "type": "ValueError",
            "bases": ["ValueError"],
            "msg": f"the result is over {MAX_REPLY >> 20} MiB and cannot be sent",
            "tb": "",
        }
        frame = encode(envelope)
    conn.send(frame)


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        if stream is not None:
            stream.flush()


_CLOCK = time.perf_counter  # times a "call" (bound before the candidate is imported)


def _serve(fn: Callable, inp: Channel, out: Channel) -> None:
    global _reserve
    while True:
        try:
            data = inp.recv()
        except EOFError:
            return
        op, seq, payload, dropped = _Unpickler(io.BytesIO(data)).load()
        for mid in dropped:
            d = _memories.pop(mid, None)
            if d is not None:
                _memory_ids.discard(id(d))
        reply: dict = {"seq": seq}
        at: int | None = None
        n = 1
        try:
            if op == "call":
                args, kwargs = payload
                t0 = _CLOCK()
                result = fn(*args, **kwargs)
                reply["s"] = _CLOCK() - t0
                reply["ok"] = result
            else:
                results = []
                if op == "rows":  # one record per call, its class declared once
                    decl, rows = payload
                    n = len(rows)
                    cls = _record_classes.get(decl) or _record_classes.setdefault(
                        decl, _record_class(*decl)
                    )
                    for at, values in enumerate(rows):  # noqa: B007  (read in the handler)
                        results.append(fn(cls(values)))
                else:
                    n = len(payload)
                    for at, args in enumerate(payload):  # noqa: B007
                        results.append(fn(*args))
                at = None
                reply["ok"] = results
            _flush()
        except BaseException as e:
            _reserve = None
            reply.pop("ok", None)
            reply["err"] = _describe(e, 1)
            if op != "call":
                reply["at"] = at if at is not None else n - 1
            try:
                _flush()
            except BaseException:
                pass
        _reply(out, reply)
        if _reserve is None:
            gc.collect()
            _reserve = bytearray(1 << 20)


def _exec_program(path: str, source: bytes) -> types.ModuleType:
    """The candidate as module `candidate`, from the source its parent read: the worker needs
    no access to the program file. Its lines are in linecache for tracebacks."""
    text = importlib.util.decode_source(source)
    module = types.ModuleType("candidate")
    module.__file__ = path
    sys.modules["candidate"] = module
    code = compile(source, path, "exec", dont_inherit=True)
    linecache.cache[path] = (len(text), None, text.splitlines(True), path)
    exec(code, module.__dict__)
    return module


def _worker(argv: list[str]) -> int:
    global _reserve
    inp = Channel(int(argv[1]))
    out = Channel(int(argv[2]))
    setup = json.loads(argv[3])
    landlock = _landlock()
    try:
        landlock.prctl(landlock.PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    if os.getppid() != setup["parent"]:  # the parent died before PDEATHSIG was set
        return 1
    hello = _confine(setup)  # before anything starts a thread: Landlock confines one thread
    op, _, (path, source, name), _ = _Unpickler(io.BytesIO(inp.recv())).load()
    assert op == "load", op
    sys.argv = [path]
    sys.dont_write_bytecode = True
    _reserve = bytearray(1 << 20)
    try:
        fn = getattr(_exec_program(path, source), name, None)
    except BaseException as e:
        _reserve = None
        try:
            _flush()
        except BaseException:
            pass
        out.send(encode({"err": _describe(e, 1), "hello": hello}))
        return 0
    if not callable(fn):
        out.send(encode({"missing": name, "hello": hello}))
        return 0
    out.send(encode({"hello": hello}))
    _serve(fn, inp, out)
    return 0


if __name__ == "__main__":
    code = 1
    try:
        code = _worker(sys.argv)
    except BaseException:
        traceback.print_exc()  # the worker's own failure, not the candidate's: on stderr
    finally:
        try:
            _flush()
        except BaseException:
            pass
        os._exit(code)  # no interpreter shutdown: candidate threads and atexit hooks stop here
