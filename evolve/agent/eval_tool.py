"""`evolve-eval`: the tool on an agent command's PATH that evaluates its workspace on the
train cascade, through the controller, over a unix socket the controller serves while the
command runs.

The tool sends one line and prints what comes back; the controller reads the workspace
itself (command_workspace.harvest: no link followed, the rules checked), counts the
evaluation against --agent-evals, and answers with the status, score, public metrics and
artifacts. Past the budget it says so and evaluates nothing. The tool cannot name what is
evaluated, so a hostile caller can only ask for its own workspace to be scored."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

SOCKET = "eval.sock"
REQUEST_BYTES = 64  # the request is a word; more is not read
Answer = Callable[[], Awaitable[str]]

_SCRIPT = '''#!{python}
"""evolve-eval: evaluate this workspace's files on the training data (evolve)."""
import socket
import sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
try:
    s.connect({sock!r})
except OSError as e:
    sys.exit(f"evolve-eval: the controller does not answer ({{e}})")
s.sendall(b"evaluate\\n")
s.shutdown(socket.SHUT_WR)
chunks = []
while True:
    b = s.recv(65536)
    if not b:
        break
    chunks.append(b)
text = b"".join(chunks).decode("utf-8", "replace")
sys.stdout.write(text if text.endswith("\\n") else text + "\\n")
sys.exit(0 if text.startswith("status: ok") else 1)
'''


def install(tools_dir: Path, inside: str) -> None:
    """Write bin/evolve-eval into tools_dir; `inside`: where tools_dir is in the namespace."""
    bin_dir = tools_dir / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "evolve-eval"
    script.write_text(_SCRIPT.format(python=sys.executable, sock=f"{inside}/{SOCKET}"))
    os.chmod(script, 0o755)
    os.chmod(tools_dir, 0o755)
    os.chmod(bin_dir, 0o755)


class EvalServer:
    """Serves evolve-eval requests, one at a time, while an agent's command runs."""

    def __init__(self, tools_dir: Path, answer: Answer):
        self.path = tools_dir / SOCKET
        self.answer = answer
        self.lock = asyncio.Lock()
        self.server: asyncio.AbstractServer | None = None

    async def __aenter__(self) -> EvalServer:
        self.server = await asyncio.start_unix_server(self._serve, path=str(self.path))
        os.chmod(self.path, 0o777)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.read(REQUEST_BYTES)
            async with self.lock:  # one evaluation at a time: the count stays exact
                text = await self.answer()
            writer.write(text.encode("utf-8", "replace"))
            await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            writer.close()
