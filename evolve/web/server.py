"""`evolve ui`: serve the web view with uvicorn until Ctrl-C."""

from __future__ import annotations

import socket
import sys
import threading
import webbrowser
from pathlib import Path

import uvicorn

from evolve.web.app import make_app
from evolve.web.baselines import Baselines

LOOPBACK = {"127.0.0.1", "localhost", "::1"}


def free_port(host: str) -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serve(
    runs_dir: Path,
    host: str = "127.0.0.1",
    port: int = 0,
    open_browser: bool = False,
    path: str = "/",
    sandbox: str = "local",
    baselines: bool = True,
) -> None:
    app = make_app(runs_dir, Baselines(sandbox, enabled=baselines))
    port = port or free_port(host)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}{path}"
    where = (
        "on this machine only (loopback)"
        if host in LOOPBACK
        else "to every machine that can reach this one: the archive holds your programs and prompts"
    )
    print(f"evolve ui: {url} serves {runs_dir}/archive.db read-only, {where}; Ctrl-C stops it")
    sys.stdout.flush()
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
