"""What travels from the evaluator to the candidate's worker by reference rather than by value.

A `Memory` travels by identity: the worker keeps one dict per Memory, the
same object at every call that passes it, and drops it once the parent's
Memory is garbage. A record (an object whose class lists its `fields`, such as
spot's State) travels as its field values and becomes, in the worker, a
slotted object of the same class name and repr. A numeric numpy array travels
as its raw bytes. The parent pickles references to the functions below; the
worker's unpickler resolves exactly these.

Stdlib only (numpy at first need): it runs in the worker before the candidate
imports anything.
"""

from __future__ import annotations

import itertools
import keyword
import re
from typing import Any

DTYPE = re.compile(r"[<>|=][biuf](1|2|4|8)\Z")  # numeric dtypes that travel as raw bytes


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
        self.wire = (memory, (self.id,))  # how it travels

    def __del__(self) -> None:
        dropped.append(self.id)

    def __reduce_ex__(self, protocol: Any) -> tuple:
        return self.wire


dropped: list[int] = []  # ids of Memory objects gone in this process, for the worker to drop


def record(decl: tuple, values: tuple) -> object:
    """Worker side: a parent's record as a plain object of the same class name and repr."""
    cls = record_classes.get(decl)
    if cls is None:
        cls = record_classes[decl] = record_class(*decl)
    return cls(values)


def record_class(name: str, fields: tuple, memory_at: tuple) -> type:
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
            f"    d = memories.get(_m{i})\n    self.{fields[i]} = d if d is not None else memory(_m{i})\n"
        )
    ns: dict = {"memories": memories, "memory": memory}
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
            if id(getattr(self, k, None)) not in memory_ids
        )
        return f"{type(self).__name__}({shown})"


record_classes: dict[tuple, type] = {}
memories: dict[int, dict] = {}  # worker side: Memory id -> the candidate's dict
memory_ids: set[int] = set()  # id() of those dicts, left out of a record's repr


def memory(mid: int) -> dict:
    """Worker side: the dict of Memory `mid`, empty at first sight."""
    d = memories.get(mid)
    if d is None:
        d = memories[mid] = {}
        memory_ids.add(id(d))
    return d


def ndarray(data: bytearray, dtype: str, shape: tuple) -> object:
    """Worker side: a numeric array from its bytes (writable, as the caller's copy was)."""
    return numpy_module().frombuffer(data, dtype=dtype).reshape(shape)


_np: Any = None


def numpy_module() -> Any:
    """numpy, imported at first need: the kit and the worker work without it."""
    global _np
    if _np is None:
        import numpy

        _np = numpy
    return _np


_numeric: dict[object, bool] = {}  # dtype -> travels as raw bytes (kind b, i, u, f; sizes 1-8)


def is_numeric(dtype: Any) -> bool:
    ok = _numeric.get(dtype)
    if ok is None:
        ok = _numeric[dtype] = bool(DTYPE.match(dtype.str))
    return ok
