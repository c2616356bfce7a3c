"""`evolve run` and `evolve resume`: the flags handed to evolve.pipeline.api, the run shown as it goes,
and how it ended told in a few lines (pictures, the way back in, the exit code)."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from evolve.archive import ArchiveReader, RunStatus
from evolve.cli import stopping
from evolve.cli.common import given, runs_dir
from evolve.cli.progress import RunProgress
from evolve.cli.safe_text import safe_text
from evolve.cli.ui import ui_command
from evolve.pipeline import api
from evolve.pipeline.config import RunConfig
from evolve.pipeline.controller import RunOutcome
from evolve.pipeline.launch import resolve
from evolve.pipeline.state import RunHooks
from evolve.problem.load import Problem
from evolve.settings.flags import RUN, Settings


def config_from_args(args, problem: Problem) -> RunConfig:
    """The RunConfig `evolve run ARGS` would start with on `problem` (evolve.pipeline.launch.resolve)."""
    return resolve(problem, Settings(**given(args, RUN)))


class CommandHooks(RunHooks):
    """The run's lines on the terminal, and Ctrl-C and SIGTERM (evolve/cli/stopping.py)."""

    def notice(self, line: str) -> None:
        print(safe_text(line), file=sys.stderr, flush=True)

    def started(self, run_id: str) -> None:
        print(safe_text(run_id), flush=True)

    def owning(self, archive_path: Path, run_id: str) -> None:
        if (stop := stopping.current()) is not None:
            stop.for_run(archive_path, run_id)  # a second Ctrl-C leaves it `stopped` too

    def on_force(self, cleanup: Callable[[], object]) -> None:
        if (stop := stopping.current()) is not None:
            stop.on_force(cleanup)

    def reassert(self) -> None:
        if (stop := stopping.current()) is not None:
            stop.reassert()

    def running(self, task: asyncio.Task) -> AbstractContextManager[None]:
        return stopping.running(task)


def cmd_run(args) -> int:
    with stopping.installed():  # Ctrl-C and SIGTERM are ours from here, whatever we inherited
        progress = RunProgress(enabled=False if args.no_progress else None)
        summary = api.run(
            args.problem_dir, observer=progress, hooks=CommandHooks(), **given(args, RUN)
        )
        return _ended(runs_dir(args), summary)


def cmd_resume(args) -> int:
    with stopping.installed():
        progress = RunProgress(enabled=False if args.no_progress else None)
        summary = api.resume(
            args.run_id,
            observer=progress,
            hooks=CommandHooks(),
            **given(args, ("iterations", "ray_address", "runs_dir")),
        )
        return _ended(runs_dir(args), summary)


def _ended(where: Path, s: RunOutcome) -> int:
    """How the run ended, in a few lines; the exit code (130 interrupted, 2 failed)."""
    if s.reason == "interrupted":  # the user wants out: no pictures, just the way back
        print(
            safe_text(f"interrupted: `evolve resume {s.run_id}` continues the run"),
            file=sys.stderr,
        )
        return 130
    _report(where, s)
    if s.status == RunStatus.FAILED:
        # the reason may quote the seed's or the evaluator's last error line
        print(safe_text(f"evolve: error: {s.reason}"), file=sys.stderr)
        return 2
    return 0


def _report(where: Path, s: RunOutcome) -> None:
    from evolve.export.pictures import write_run_pictures

    seed = "-" if s.seed_score is None else f"{s.seed_score:.6g}"
    best = "-" if s.best_score is None else f"{s.best_score:.6g}"
    reason = f" ({s.reason})" if s.reason else ""
    print(
        safe_text(
            f"run {s.run_id}: {s.status}{reason}; {s.iterations_done} iterations; best {best} (seed {seed})"
        ),
        file=sys.stderr,
    )
    try:
        paths = write_run_pictures(ArchiveReader(where), s.run_id)
        if paths:
            print(safe_text("pictures: " + ", ".join(str(p) for p in paths)), file=sys.stderr)
    except Exception as e:  # pictures are a convenience; never fail a finished run over them
        print(safe_text(f"(no pictures: {e})"), file=sys.stderr)
    default = Path(os.environ.get("EVOLVE_RUNS_DIR") or "runs").resolve()
    runs = None if where.resolve() == default else str(where)
    print(safe_text(f"inspect it: {ui_command(s.run_id, runs)}"), file=sys.stderr)
