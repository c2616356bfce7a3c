"""Output that outlives its reader: `evolve run ... | head -3` must not end the run.

Once the reader of stdout or stderr goes away, a write raises BrokenPipeError (Python
ignores SIGPIPE), and rich turns that into SystemExit(1): the run was recorded as failed.
A long command's streams are wrapped instead: at the first broken pipe the stream's file
descriptor is pointed at /dev/null and the command goes on, its results in the archive.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO


class Outlasting:
    """A text stream whose writes never fail for want of a reader."""

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._to_devnull()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._to_devnull()

    def _to_devnull(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, self._stream.fileno())
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, ...: the stream's
        return getattr(self._stream, name)


@contextmanager
def outlasting() -> Iterator[None]:
    """stdout and stderr wrapped while the block runs."""
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if s is None else Outlasting(s) for s in saved)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
