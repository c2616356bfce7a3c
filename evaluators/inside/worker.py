"""The candidate's worker: runs the program and serves calls of one function over two pipes.

Started for a `Remote` (worker_client.py) by worker_start.py as

    python -I -s -c BOOT INSIDE_DIR READ_FD WRITE_FD PARENT_PID PRELOAD_JSON

or forked by the harness before it reads anything of its request (worker_start.zygote);
it confines itself first (worker_grants.py), then executes the
program's source, sent as its first message, and answers calls until its
request pipe closes. Requests are pickles from its parent (trusted); replies
go through codec.py. The candidate's prints go to the inherited
stdout/stderr, which the sandbox captures.

Stdlib only: it runs before the candidate imports anything.
"""

from __future__ import annotations

import gc
import importlib.util
import io
import json
import linecache
import os
import pickle
import signal
import sys
import traceback
import types
from collections.abc import Callable
from typing import Any

from evaluators.inside import landlock, records, tree_import
from evaluators.inside.channel import Channel
from evaluators.inside.codec import MAX_REPLY, describe, encode
from evaluators.inside.worker_grants import confine

_BY_REFERENCE = {
    f"{f.__module__}.{f.__name__}": f for f in (records.record, records.memory, records.ndarray)
}


class _Unpickler(pickle.Unpickler):
    """The parent's messages (trusted): builtins, numpy, and what travels by reference."""

    def find_class(self, module: str, name: str) -> Any:
        found = _BY_REFERENCE.get(f"{module}.{name}")
        return found if found is not None else super().find_class(module, name)


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


def _serve(fn: Callable, inp: Channel, out: Channel) -> None:
    global _reserve
    while True:
        try:
            data = inp.recv()
        except EOFError:
            return
        op, seq, payload, dropped = _Unpickler(io.BytesIO(data)).load()
        for mid in dropped:
            d = records.memories.pop(mid, None)
            if d is not None:
                records.memory_ids.discard(id(d))
        reply: dict = {"seq": seq}
        at: int | None = None
        n = 1
        try:
            if op == "call":
                args, kwargs = payload
                reply["ok"] = fn(*args, **kwargs)
            else:
                results = []
                if op == "rows":  # one record per call, its class declared once
                    decl, rows = payload
                    n = len(rows)
                    cls = records.record_classes.get(decl) or records.record_classes.setdefault(
                        decl, records.record_class(*decl)
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
            reply["err"] = describe(e, 1)
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


def _preload(modules: list[str]) -> None:
    """Import the libraries the program imports (worker_start.PRELOADABLE), before confinement."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception:
            pass  # the program's own import will say why


def main(argv: list[str]) -> int:
    """READ_FD WRITE_FD PARENT_PID PRELOAD_JSON: import the preloads (and those of "preload"
    messages), wait for the program, confine, import it, serve; the exit status."""
    global _reserve
    inp = Channel(int(argv[0]))
    out = Channel(int(argv[1]))
    try:
        landlock.prctl(landlock.PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass
    if os.getppid() != int(argv[2]):  # the parent died before PDEATHSIG was set
        return 1
    _preload(json.loads(argv[3]))
    while True:  # a zygote (worker_start.zygote) may first hear what to preload
        try:
            message = inp.recv()
        except EOFError:
            return 0  # a prestarted worker nobody needed
        op, _, payload, _ = _Unpickler(io.BytesIO(message)).load()
        if op != "preload":
            break
        _preload(payload)
    assert op == "load", op
    path, source, name, setup = payload
    hello = confine(setup)  # before anything starts a thread: Landlock confines one thread
    sys.argv = [path]
    sys.dont_write_bytecode = True
    _reserve = bytearray(1 << 20)
    tree = setup.get("tree")
    try:
        if tree:  # a program of several files: its root on sys.path, its entry a module
            module = tree_import.load_entry(tree["root"], tree["files"], tree["entry"])
        else:
            module = _exec_program(path, source)
        fn = getattr(module, name, None)
    except BaseException as e:
        _reserve = None
        try:
            _flush()
        except BaseException:
            pass
        out.send(encode({"err": describe(e, 1), "hello": hello}))
        return 0
    if not callable(fn):
        out.send(encode({"missing": name, "hello": hello}))
        return 0
    out.send(encode({"hello": hello}))
    _serve(fn, inp, out)
    return 0


def run(argv: list[str]) -> None:
    """The worker process, from start to exit (see `main`)."""
    code = 1
    try:
        code = main(argv)
    except BaseException:
        traceback.print_exc()  # the worker's own failure, not the candidate's: on stderr
    finally:
        try:
            _flush()
        except BaseException:
            pass
        os._exit(code)  # no interpreter shutdown: candidate threads and atexit hooks stop here
