"""Live progress for a run: a rich bar plus a one-line status.

Off when stdout is not a terminal's (CI, pipes): then only the notes are
printed, one line each, so logs stay readable.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

from rich.console import Console, Group
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text


@dataclass
class Snapshot:
    target: int = 0
    done: int = 0
    ok: int = 0
    best: float | None = None
    best_test: float | None = None
    seed_score: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    llm_in_flight: int = 0
    eval_in_flight: int = 0
    last_migration: int = -1

    def add_call(self, pt: int, ct: int, cost: float) -> None:
        self.calls += 1
        self.prompt_tokens += pt
        self.completion_tokens += ct
        self.cost_usd += cost

    def calls_usage(self, usage: dict) -> None:
        self.calls = usage["calls"]
        self.prompt_tokens = usage["prompt_tokens"]
        self.completion_tokens = usage["completion_tokens"]
        self.cost_usd = usage["cost_usd"]

    def status_line(self) -> str:
        valid = f"{100.0 * self.ok / self.done:.0f}%" if self.done else "-"
        best = "-" if self.best is None else f"{self.best:.6g}"
        seed = "" if self.seed_score is None else f" (seed {self.seed_score:.6g})"
        test = "" if self.best_test is None else f", held-out {self.best_test:.6g}"
        tokens = self.prompt_tokens + self.completion_tokens
        return (f"best {best}{test}{seed} | valid {valid} | {tokens:,} tokens ${self.cost_usd:.4f}"
                f" | in flight: {self.llm_in_flight} LLM, {self.eval_in_flight} eval")


class RunProgress:
    def __init__(self, enabled: bool | None = None, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.live: Live | None = None
        self.bar: Progress | None = None
        self.task = None
        self.last_plain = 0.0

    def start(self, snap: Snapshot) -> None:
        if not self.enabled:
            return
        self.bar = Progress(
            TextColumn("[bold]iterations"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
            console=self.console,
        )
        self.task = self.bar.add_task("run", total=snap.target, completed=snap.done)
        self.status = Text(snap.status_line())
        self.live = Live(Group(self.bar, self.status), console=self.console, refresh_per_second=4,
                         transient=False)
        self.live.start()

    def update(self, snap: Snapshot) -> None:
        if self.bar is not None:
            self.bar.update(self.task, total=snap.target, completed=snap.done)
            self.status.plain = snap.status_line()
        elif time.monotonic() - self.last_plain > 10 and snap.done:
            self.last_plain = time.monotonic()
            self.console.print(f"[{snap.done}/{snap.target}] {snap.status_line()}", highlight=False)

    def note(self, text: str) -> None:
        self.console.print(text, highlight=False)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
