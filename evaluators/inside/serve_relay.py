"""The Docker agent's side of a `serve` launch (a GEPA script's worker, gepa_serve.py): the
frames between the host's stream and the worker's channel, until the worker ends.

The agent (evaluators/docker/agent.py) imports it from /opt/evolve, where the image copies
evaluators/inside/. Host -> worker: the host writes whole frames (a 4-byte big-endian length
and the bytes) on the agent's stdin, relayed as they are. Worker -> host: each frame is read
whole and checked here, then answered as one JSON line {"frame": base64}: the worker (and so
the candidate) never writes on the host's stream, so it can never forge the agent's final
answer. The agent holds these frames in its memory, so a container that served is never
given another launch (the agent answers it not clean).

Stdlib only.
"""

from __future__ import annotations

import base64
import json
import os
import select
import struct
import time
from collections.abc import Callable

MAX_FRAME = 32 << 20  # beyond it the worker is garbled: the launch ends


def _read_exact(fd: int, n: int) -> bytes | None:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _say(obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


def relay(
    pid: int,
    timeout_s: float,
    to_worker: int,
    from_worker: int,
    reap: Callable[[], list[tuple[int, int]]],
) -> tuple[int | None, bool]:
    """Relay until the harness `pid` exits (its wait status, False), the deadline passes or
    the host goes away or the worker garbles a frame (None, True): `_wait`'s contract."""
    os.set_blocking(from_worker, False)
    pidfd = os.pidfd_open(pid)
    end = time.monotonic() + timeout_s
    buf = bytearray()
    watched = [pidfd, 0, from_worker]
    try:
        while True:
            for p, status in reap():
                if p == pid:
                    return status, False
            left = end - time.monotonic()
            if left <= 0:
                return None, True
            ready, _, _ = select.select(watched, [], [], min(left, 0.5))
            if 0 in ready:  # a whole frame from the host, or its end
                head = _read_exact(0, 4)
                n = struct.unpack("!i", head)[0] if head else -1
                body = _read_exact(0, n) if 0 <= n <= MAX_FRAME else None
                if head is None or body is None:
                    return None, True
                try:
                    _write_all(to_worker, head + body)  # blocks while the worker is busy
                except BrokenPipeError:
                    pass  # the worker is gone: its exit comes next
            if from_worker in ready:
                try:
                    chunk = os.read(from_worker, 1 << 16)
                except BlockingIOError:
                    continue
                if not chunk:  # the worker closed its end: it is ending
                    watched.remove(from_worker)
                buf += chunk
                if not _frames(buf):
                    return None, True
    finally:
        os.close(pidfd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _frames(buf: bytearray) -> bool:
    """Answer the host each whole frame in `buf` (removed from it); False on a bad length."""
    while len(buf) >= 4:
        (n,) = struct.unpack_from("!i", buf)
        if n < 0 or n > MAX_FRAME:
            return False
        if len(buf) < 4 + n:
            break
        _say({"frame": base64.b64encode(bytes(buf[4 : 4 + n])).decode()})
        del buf[: 4 + n]
    return True
