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
    TimeRemainingColumn,
)
from rich.text import Text

from evolve.cli.safe_text import safe_rich, safe_text
from evolve.pipeline.state import RunStats


def status_line(s: RunStats) -> str:
    valid = f"{100.0 * s.ok / s.done:.0f}%" if s.done else "-"
    best = "-" if s.best is None else f"{s.best:.6g}"
    seed = "" if s.seed_score is None else f" (seed {s.seed_score:.6g})"
    test = "" if s.best_test is None else f", held-out {s.best_test:.6g}"
    tokens = s.prompt_tokens + s.completion_tokens
    new = f", {s.novel} new behaviours" if s.novel else ""
    new += f", {s.tuned} tuned" if s.tuned else ""
    rejected = f", {s.rejected} clones asked again" if s.rejected else ""
    return (
        f"best {best}{test}{seed} | valid {valid}{new} | {s.calls} calls{rejected}"
        f" | {tokens:,} tokens ${s.cost_usd:.4f}"
        f" | in flight: {s.llm_in_flight} LLM, {s.eval_in_flight} eval{llm_faults(s)}"
    )


def counts(s: RunStats) -> str:
    """`20/20 model, tuning 5/12`: the model's candidates, and the tuned children done of
    those done and queued (a better one queues more), while any are queued."""
    tuning = f", tuning {s.tuned}/{s.tuned + s.tune_left}" if s.tune_left else ""
    return f"{s.done}/{s.target} model{tuning}"


def llm_faults(s: RunStats) -> str:
    """` | LLM: 3 retries, 1 failed call, last HTTP 500`, or nothing while all is well."""
    if not (s.llm_retries or s.llm_failed):
        return ""
    parts = []
    if s.llm_retries:
        parts.append(f"{s.llm_retries} {'retry' if s.llm_retries == 1 else 'retries'}")
    if s.llm_failed:
        parts.append(f"{s.llm_failed} failed {'call' if s.llm_failed == 1 else 'calls'}")
    last = f", last {s.llm_last_fault}" if s.llm_last_fault else ""
    return f" | LLM: {', '.join(parts)}{last}"


class RunProgress:
    """Shows a run's RunStats on stderr (implements evolve.pipeline.state.RunObserver)."""

    def __init__(self, enabled: bool | None = None, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.live: Live | None = None
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.tuning: TaskID | None = None
        self.status = Text()
        self.last_plain = 0.0
        self.faults_shown = (0, 0)  # (retries, failed calls) in the last plain line

    def start(self, stats: RunStats) -> None:
        if not self.enabled:
            return
        self.bar = Progress(
            TextColumn("[bold]{task.fields[what]}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),  # from the pace so far: a guess, shown as one
            console=self.console,
        )
        self.task = self.bar.add_task(
            "run", total=stats.target, completed=stats.done, what="model's candidates"
        )
        self.tuning = self.bar.add_task("tuning", total=1, visible=False, what="tuned children")
        self.status = safe_rich(status_line(stats))
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
            if self.tuning is not None and (stats.tuned or stats.tune_left):  # a queue that grows
                total = stats.tuned + stats.tune_left
                self.bar.update(self.tuning, total=total, completed=stats.tuned, visible=True)
            self.status.plain = safe_text(status_line(stats))
        elif (faults := (stats.llm_retries, stats.llm_failed)) != self.faults_shown or (
            time.monotonic() - self.last_plain > 10 and stats.done
        ):  # every new LLM fault at once (a log shows each), progress every 10 s
            self.last_plain, self.faults_shown = time.monotonic(), faults
            self.console.print(
                safe_rich(f"[{counts(stats)}] {status_line(stats)}"), highlight=False
            )

    def note(self, text: str) -> None:
        """A line from the controller; it may quote a candidate, so never markup or escapes."""
        self.console.print(safe_rich(text), highlight=False)

    def stop(self) -> None:
        if self.live is not None:
            self.live.stop()
            self.live = None
