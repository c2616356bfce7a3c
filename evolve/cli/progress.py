"""Live progress for a run: a rich bar plus a one-line status.

Off when stderr is not a terminal (CI, pipes): then the notes are printed one
line each, with a status line at most every 10 s, so logs stay readable.
RunProgress is the controller's RunObserver for `evolve run` and `resume`.
"""

from __future__ import annotations

import sys
import time

from rich.console import Console, Group
from rich.live import Live
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from evolve.run_state import RunStats


def status_line(s: RunStats) -> str:
    valid = f"{100.0 * s.ok / s.done:.0f}%" if s.done else "-"
    best = "-" if s.best is None else f"{s.best:.6g}"
    seed = "" if s.seed_score is None else f" (seed {s.seed_score:.6g})"
    test = "" if s.best_test is None else f", held-out {s.best_test:.6g}"
    tokens = s.prompt_tokens + s.completion_tokens
    return (
        f"best {best}{test}{seed} | valid {valid} | {tokens:,} tokens ${s.cost_usd:.4f}"
        f" | in flight: {s.llm_in_flight} LLM, {s.eval_in_flight} eval"
    )


class RunProgress:
    """Shows a run's RunStats on stderr (implements evolve.run_state.RunObserver)."""

    def __init__(self, enabled: bool | None = None, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.live: Live | None = None
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.status = Text()
        self.last_plain = 0.0

    def start(self, stats: RunStats) -> None:
        if not self.enabled:
            return
        self.bar = Progress(
            TextColumn("[bold]iterations"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
        )
        self.task = self.bar.add_task("run", total=stats.target, completed=stats.done)
        self.status = Text(status_line(stats))
        self.live = Live(
            Group(self.bar, self.status),
            console=self.console,
            refresh_per_second=4,
            transient=False,
        )
        self.live.start()

    def update(self, stats: RunStats) -> None:
        if self.bar is not None and self.task is not None:
            self.bar.update(self.task, total=stats.target, completed=stats.done)
            self.status.plain = status_line(stats)
        elif time.monotonic() - self.last_plain > 10 and stats.done:
            self.last_plain = time.monotonic()
            self.console.print(
                f"[{stats.done}/{stats.target}] {status_line(stats)}", highlight=False
            )

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
