"""The host's side of a GEPA worker in a Docker container: the frames between the worker's
channel (evaluators/worker_channel.py's pipes) and the container's agent, which relays them to
and from the worker (evaluators/inside/serve_relay.py): whole frames raw on its stdin, each
reply frame as a JSON line {"frame": base64} on its stdout, then its usual final answer.
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import select
import struct

from evaluators.docker.agent_link import Box
from evaluators.serving import STOP_POLL_S, Serving


def relay(box: Box, serving: Serving) -> dict | None:
    """Relay until the agent's final answer (returned), or None: `stop` was set, the stream
    ended, or the agent wrote something that is neither a frame nor an answer."""
    requests, replies = serving.fds
    while not serving.stop.is_set():
        try:
            ready, _, _ = select.select([requests, box.sock], [], [], STOP_POLL_S)
        except (OSError, ValueError):  # the socket closed under us (close())
            return None
        if requests in ready:
            data = os.read(requests, 1 << 16)
            if not data or not box.send(data):
                return None
        if box.sock in ready and not box.pump(STOP_POLL_S):
            return None
        while (line := box.next_line()) is not None:
            try:
                answer = json.loads(line)
                if not isinstance(answer, dict):
                    raise ValueError("not an object")
                if "frame" not in answer:
                    return answer
                frame = base64.b64decode(answer["frame"], validate=True)
            except (ValueError, TypeError, binascii.Error):
                box.broken = True
                return None
            _write_all(replies, struct.pack("!i", len(frame)) + frame)
    return None


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
