"""One warm container of the Docker sandbox, as the host sees it: the attached stream to
its agent (evaluators/docker/agent.py), one JSON line each way.

Why apart from sandbox.py: the engine's stream framing, the size cap on an
answer and the liveness check are their own concern; the pool and the policy
stay there.
"""

from __future__ import annotations

import json
import select
import time

from evaluators.harness_result import RESULT_MAX_BYTES

ANSWER_MAX_BYTES = 2 * RESULT_MAX_BYTES + 2**20  # base64 result, output tails, the rest


class Box:
    """One warm container and the attached stream to its agent."""

    def __init__(self, key: tuple, cid: str, sock, in_dir: str) -> None:
        self.key, self.cid, self.in_dir = key, cid, in_dir
        self._io = sock  # keeps the HTTP response (and so the socket) alive
        self.sock = getattr(sock, "_sock", sock)
        self.sock.settimeout(None)
        self._buf = bytearray()  # the engine's frames, not yet split
        self._out = bytearray()  # stdout payload, not yet split into lines
        self._scanned = 0  # no newline in _out before this offset
        self.err = b""  # the agent's stderr, last 8 KiB
        self.broken = False
        self.timed_out = False

    def _pump(self, deadline: float) -> bool:
        """Read what is there into stdout/stderr; False at EOF or the deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            self.timed_out = True
            return False
        try:  # a socket closed by close() on another thread: fileno() -1, ValueError
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return True
            chunk = self.sock.recv(1 << 20)
        except (OSError, ValueError):
            chunk = b""
        if not chunk:
            return False
        self._buf += chunk
        start = 0
        while len(self._buf) - start >= 8:  # the engine's frames: stream, 0, 0, 0, size (4 bytes)
            size = int.from_bytes(self._buf[start + 4 : start + 8], "big")
            if len(self._buf) - start < 8 + size:
                break
            stream, payload = self._buf[start], self._buf[start + 8 : start + 8 + size]
            start += 8 + size
            if stream == 2:
                self.err = (self.err + bytes(payload))[-8192:]
            else:
                self._out += payload
        del self._buf[:start]
        return True

    def read(self, timeout_s: float) -> dict | None:
        """The agent's next answer; None when it died, garbled, or missed the deadline."""
        deadline = time.monotonic() + timeout_s
        while (end := self._out.find(b"\n", self._scanned)) < 0:
            self._scanned = len(self._out)
            if self._scanned > ANSWER_MAX_BYTES or not self._pump(deadline):
                self.broken = True
                return None
        line = bytes(self._out[:end])
        del self._out[: end + 1]
        self._scanned = 0
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            self.broken = True
            return None
        return answer

    def call(self, msg: dict, timeout_s: float, body: bytes = b"") -> dict | None:
        """One request line, then `body` raw (the launch's request and data seed, which the
        agent reads straight into memfds: never a file under /in, never the agent's heap)."""
        if not self.send(json.dumps(msg).encode() + b"\n" + body):
            return None
        return self.read(timeout_s)

    def send(self, data: bytes) -> bool:
        """Raw bytes on the agent's stdin; False (broken) when the stream is gone."""
        try:
            self.sock.sendall(data)
        except OSError:
            self.broken = True
            return False
        return True

    def pump(self, timeout_s: float) -> bool:
        """Read what arrives within `timeout_s`; False once the stream ended."""
        if self._pump(time.monotonic() + timeout_s):
            return True
        ended = not self.timed_out  # a deadline of ours is no end of the stream
        self.timed_out = False
        return not ended

    def next_line(self) -> bytes | None:
        """The next whole line the agent wrote, if one is in (a serve launch's frames)."""
        end = self._out.find(b"\n")
        if end < 0:
            return None
        line = bytes(self._out[:end])
        del self._out[: end + 1]
        self._scanned = 0
        return line

    def stale(self) -> bool:
        """An idle agent says nothing: anything readable means it died or misbehaved."""
        if self.broken:
            return True
        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)
