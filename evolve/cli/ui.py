"""`evolve ui`: the web view of the archive (evolve/web/), on 127.0.0.1 unless told."""

from __future__ import annotations

import socket
from urllib.parse import quote

from evolve.cli.common import UsageError, runs_dir

DEFAULT_PORT = 8420


def add_parser(sub, sandboxes: tuple[str, ...], integer) -> None:
    ui = sub.add_parser("ui", help="a local web view of runs, leaderboards, programs and lineages")
    ui.add_argument("--runs-dir", metavar="DIR", help="archive location (default ./runs)")
    ui.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1: this machine only)",
    )
    ui.add_argument(
        "--port", type=integer(0), default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; 0: any free"
    )
    ui.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a Host name to answer besides 127.0.0.1, localhost and --host's (a proxy's or a "
        "tunnel's); repeatable. Any other is refused, so no web page can read the archive "
        "by DNS rebinding",
    )
    ui.add_argument("--open", action="store_true", help="open it in the default browser")
    ui.add_argument("--run", metavar="RUN_ID", help="start on this run's page")
    ui.add_argument(
        "--sandbox",
        choices=sandboxes,
        default="auto",
        help="where leaderboards score the problem folder's baselines (default auto)",
    )
    ui.add_argument(
        "--no-baselines",
        action="store_true",
        help="do not score baselines (leaderboards show them as not scored)",
    )


def ui_command(run_id: str, runs: str | None = None) -> str:
    """The command that opens the web view on a run (printed at the end of `evolve run`)."""
    where = f" --runs-dir {runs}" if runs else ""
    return f"evolve ui{where} --run {run_id} --open"


def cmd_ui(args) -> int:
    from evolve.archive import ArchiveReader
    from evolve.web.server import serve

    folder = runs_dir(args)
    reader = ArchiveReader(folder)  # ArchiveError: no archive there, one line
    path = "/"
    if args.run:
        ids = [r.run_id for r in reader.runs()]
        match = [i for i in ids if i == args.run] or [i for i in ids if i.startswith(args.run)]
        if len(match) != 1:
            raise UsageError(
                f"--run {args.run}: "
                + ("no such run" if not match else "ambiguous, it begins " + ", ".join(match[:5]))
            )
        path = f"/runs/{quote(match[0], safe='')}"
    if args.port:
        try:
            with socket.create_server((args.host, args.port)):
                pass
        except OSError as e:
            why = (e.strerror or str(e)).split(" (")[0]  # not Python's "(while attempting ...)"
            raise UsageError(
                f"--host {args.host} --port {args.port}: cannot listen there ({why});"
                " --port 0 picks a free port"
            ) from None
    serve(
        folder,
        args.host,
        args.port,
        args.open,
        path,
        sandbox=args.sandbox,
        baselines=not args.no_baselines,
        allow_hosts=tuple(args.allow_host),
    )
    return 0
