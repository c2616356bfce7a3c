"""The candidate's function as a callable in the evaluator, run in the candidate's own process.

The evaluator (trusted: the simulator, the data, the future) never imports
candidate code. `Remote(program, name)` reads the program and takes a worker
(worker.py, started by worker_start.py) which confines itself (worker_grants.py),
executes the program's source and answers calls of `name`. Frame inspection,
gc.get_objects() or `sys.modules['evaluator']` in the candidate find only the
worker, which knows nothing but the arguments it was sent: it is a fresh interpreter
or a fork the harness made before it read anything of its request (`zygote`),
never a copy of a process that held the request.

Parent -> worker: pickle (the worker trusts its parent), of builtins and
numpy values only, plus what records.py makes travel by reference
(kit.Memory by identity, records by field values). Messages (op, seq,
payload, dropped Memory ids): "preload" ([module, ...], to a zygote, optional), then
"load" (path, source, name, setup); then "call"
((args, kwargs): one result and the seconds the call took), "map" ([args,
...]) and "rows" ((record class, [field values, ...]): one record per call)
-> one reply with a result per call, the calls made in order, stopping at the
first exception. Replies are untrusted: codec.py.
"""

from __future__ import annotations

import io
import operator
import os
import pickle
import signal
import subprocess
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from evaluators.inside import landlock, records, worker_start
from evaluators.inside.codec import MAX_REPLY, WHO, WorkerError, decode, rebuild_error
from evaluators.inside.records import Memory, is_numeric
from evaluators.inside.worker_grants import private_paths


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


_tree: tuple[str, tuple[str, ...]] | None = None  # (root, relative paths): `use_tree`


def use_tree(root: str, paths: list[str] | tuple[str, ...]) -> None:
    """Trusted processes only (the harness): the program is a tree of files laid out under
    `root` at `paths`; a Remote of one of them sends the worker the whole tree."""
    global _tree
    _tree = (os.path.abspath(root), tuple(paths)) if paths else None


def tree_of(program: str) -> dict | None:
    """What the worker needs to import `program` as a file of the tree (`use_tree`): the root,
    every file's source, and `program`'s own path in it; None for a one-file program."""
    if _tree is None:
        return None
    root, paths = _tree
    entry = os.path.relpath(os.path.abspath(program), root)
    if entry not in paths:
        return None
    files = {}
    for path in paths:
        with open(os.path.join(root, path), "rb") as f:
            files[path] = f.read()
    return {"root": root, "entry": entry, "files": files}


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
        tree = tree_of(program)
        undumpable()
        self._proc, self._out, self._in = worker_start.take(source)
        self._finalizer = weakref.finalize(self, worker_start.reap, self._proc, self._out, self._in)
        try:
            setup = {"private": private_paths(), "confine": confine}
            if tree is not None:
                setup["tree"] = tree
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
