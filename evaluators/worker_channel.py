"""The host's end of one GEPA script's worker (evaluators/inside/gepa_serve.py): its launch,
held by a thread for the worker's life, and each call on its channel within a deadline.

A call never blocks past its deadline, whatever the worker does: both pipes are polled in
short slices, and a worker whose launch ended (it crashed, exited, was killed for memory)
is seen as such even though the host, and the sandbox's own plumbing, still hold the pipes'
other ends.
"""

from __future__ import annotations

import json
import os
import select
import struct
import threading
import time
from enum import StrEnum

from evaluators.harness_result import RESULT_MAX_BYTES, ProcRun
from evaluators.sandbox import EvalRequest
from evaluators.serving import STOP_POLL_S, Server, Serving


class Lost(StrEnum):
    """Why a call got no reply."""

    TIMEOUT = "timeout"  # the deadline passed
    ENDED = "ended"  # the worker's launch ended (crash, exit, memory, its sandbox failed)
    GARBLED = "garbled"  # a reply the host cannot read


class Worker:
    """One worker: started at once, on a thread that holds its launch until it ends."""

    def __init__(self, server: Server, request: EvalRequest, number: int) -> None:
        up_r, up_w = os.pipe()  # host -> worker
        down_r, down_w = os.pipe()  # worker -> host
        os.set_blocking(up_w, False)
        self.number = number
        self.calls = 0
        self.serving = Serving((up_r, down_w))
        self._out, self._in = up_w, down_r
        self._buf = bytearray()
        self._done = threading.Event()
        self._closing = threading.Lock()
        self._fds_open = True
        self.run: ProcRun | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._serve, args=(server, request), name=f"gepa-worker-{number}", daemon=True
        )
        self._thread.start()

    def _serve(self, server: Server, request: EvalRequest) -> None:
        try:
            self.run = server.serve(request, self.serving)
        except BaseException as e:  # the backend's failure: the call says so
            self.error = e
        finally:
            self._done.set()

    def call(self, ask: dict, timeout_s: float) -> dict | Lost:
        """The worker's reply to `ask`, or why none came before `timeout_s`."""
        self.calls += 1
        deadline = time.monotonic() + timeout_s
        data = json.dumps(ask).encode()
        lost = self._send(struct.pack("!i", len(data)) + data, deadline)
        if lost is not None:
            return lost
        head = self._recv(4, deadline)
        if isinstance(head, Lost):
            return head
        (n,) = struct.unpack("!i", head)
        if n < 0 or n > RESULT_MAX_BYTES:
            return Lost.GARBLED
        body = self._recv(n, deadline)
        if isinstance(body, Lost):
            return body
        try:
            reply = json.loads(body)
        except ValueError:
            return Lost.GARBLED
        return reply if isinstance(reply, dict) else Lost.GARBLED

    def _send(self, frame: bytes, deadline: float) -> Lost | None:
        view = memoryview(frame)
        poller = select.poll()
        poller.register(self._out, select.POLLOUT)
        while view:
            if self._done.is_set():
                return Lost.ENDED
            left = deadline - time.monotonic()
            if left <= 0:
                return Lost.TIMEOUT
            if poller.poll(min(left, STOP_POLL_S) * 1000):
                try:
                    view = view[os.write(self._out, view) :]
                except BlockingIOError:
                    pass
                except BrokenPipeError:
                    return Lost.ENDED
        return None

    def _recv(self, n: int, deadline: float) -> bytes | Lost:
        poller = select.poll()
        poller.register(self._in, select.POLLIN)
        while len(self._buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                return Lost.TIMEOUT
            if poller.poll(min(left, STOP_POLL_S) * 1000):
                chunk = os.read(self._in, 1 << 16)
                if not chunk:
                    return Lost.ENDED
                self._buf += chunk
            elif self._done.is_set():  # nothing left to read, and nobody left to write it
                return Lost.ENDED
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def stop(self) -> None:
        """Ask its backend to end it now (a forced stop, from any thread)."""
        self.serving.stop.set()

    def close(self) -> ProcRun | None:
        """End it (everything it started killed), and how its launch ended."""
        self.serving.stop.set()
        self._thread.join()
        with self._closing:  # once: a forced stop and the failed call may both close it
            if self._fds_open:
                self._fds_open = False
                for fd in (*self.serving.fds, self._out, self._in):
                    os.close(fd)
        return self.run
