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
WILDCARD = {"0.0.0.0", "::", ""}  # every interface: the machine's own names and addresses


def _routed_addresses() -> list[str]:
    """This machine's addresses on its default routes (a UDP socket's connect sends nothing)."""
    found = []
    for family, probe in ((socket.AF_INET, "192.0.2.1"), (socket.AF_INET6, "2001:db8::1")):
        try:
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))
                found.append(str(s.getsockname()[0]))
        except OSError:
            pass
    return found


def trusted_hosts(host: str, extra: tuple[str, ...] = ()) -> list[str]:
    """The Host header values the view answers: the loopback names, the name or address it
    was told to listen on (on every interface: this machine's names and addresses), and
    `extra` (--allow-host). Anything else, a rebinding attacker's domain above all, is refused."""
    names = {*LOOPBACK, "[::1]", host.strip("[]"), *extra}
    if ":" in host.strip("[]"):
        names.add(f"[{host.strip('[]')}]")  # a Host header brackets an IPv6 address
    if host.strip("[]") in WILDCARD:
        me = socket.gethostname()
        names |= {me, socket.getfqdn()}
        try:
            infos = socket.getaddrinfo(me, None)
        except OSError:
            infos = []
        addrs = [str(info[4][0]).split("%")[0] for info in infos] + _routed_addresses()
        names |= {f"[{a}]" if ":" in a else a for a in addrs}
    return sorted(n.lower() for n in names if n and n not in WILDCARD)


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
    allow_hosts: tuple[str, ...] = (),
) -> None:
    hosts = trusted_hosts(host, allow_hosts)
    app = make_app(runs_dir, Baselines(sandbox, enabled=baselines), hosts)
    port = port or free_port(host)
    url = f"http://{'[' + host + ']' if ':' in host else host}:{port}{path}"
    where = (
        "on this machine only (loopback)"
        if host in LOOPBACK
        else "to every machine that can reach this one: the archive holds your programs and prompts"
    )
    print(f"evolve ui: {url} serves {runs_dir}/archive.db read-only, {where}; Ctrl-C stops it")
    if host not in LOOPBACK:
        names = ", ".join(hosts)
        print(f"evolve ui: answers the host names {names} only (--allow-host adds one)")
    sys.stdout.flush()
    if open_browser:
        threading.Timer(1.0, webbrowser.open, args=(url,)).start()
    uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
