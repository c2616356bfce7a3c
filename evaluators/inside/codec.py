"""The replies of the candidate's worker: encoded there, decoded and validated here.

Worker -> parent is UNTRUSTED and never unpickled. One frame: b"J" + JSON, or
b"B" + 4-byte JSON length + JSON + raw bytes that numeric numpy arrays (dtype
kind b, i, u, f) point into. Containers other than lists are tagged
({"t": tuple}, {"d": dict pairs}, {"a"/"n": array/numpy scalar}, {"b":
bytes}); anything else becomes a stand-in with the type's name and a clipped
repr (`Foreign`), so an evaluator's validation sees what it would have seen.
Replies are capped at MAX_REPLY bytes.

A candidate's exception comes back as a `CandidateError` subclass named and
based like the original (a ZeroDivisionError is caught by `except
ArithmeticError`, a SystemExit is not caught by `except Exception`, an
OSError keeps its errno), carrying the message and the worker's traceback
text. A worker that dies, hangs up or sends garbage raises `WorkerError`.

Stdlib only (numpy at first need): it runs in the worker before the candidate
imports anything.
"""

from __future__ import annotations

import builtins
import json
import struct
import sys
import traceback
from typing import Any

from evaluators.inside.records import DTYPE, is_numeric, numpy_module

MAX_REPLY = 64 << 20  # bytes of one worker reply
MAX_DEPTH = 64  # nesting of a reply's containers
MAX_TEXT = 4000  # characters of an exception message or a stand-in's repr
MAX_TRACEBACK = 8000
_INT_BITS = 10_000  # larger ints travel as stand-ins (JSON parsers cap digits)
_JSON_SCALARS = frozenset((str, int, float, bool, type(None)))
WHO = "the candidate's process"


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


def rebuild_error(raw: object, index: object) -> BaseException:
    """The candidate's exception, from its untrusted description."""
    if not isinstance(raw, dict):
        return WorkerError(f"{WHO} sent a malformed error")
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
        exc.add_note(f"In {WHO}:\n{exc.remote_traceback.rstrip()}")
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
        if type(dtype) is not str or not DTYPE.match(dtype):
            raise ValueError(f"array dtype {dtype!r:.20} is not a real number type")
        dt = _dtypes[dtype] = numpy_module().dtype(dtype)
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
    arr = numpy_module().frombuffer(raw, dtype=dt, count=size, offset=off).reshape(shape)
    return arr[()] if scalar else arr


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
        if arr is not None and is_numeric(arr.dtype):
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


def describe(e: BaseException, skip: int) -> dict:
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
