"""What a run has done so far, and who is told about it.

The controller keeps a RunStats up to date and reports to a RunObserver. The
command line's live display (evolve.cli.progress.RunProgress) is one; the
default observer does nothing, so the loop never depends on a display. RunHooks is
what a front end adds around a run started through evolve.pipeline.api (its lines, its signals).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


@dataclass
class RunStats:
    target: int = 0  # iterations the run is to complete
    done: int = 0  # finished iterations (the model's candidates), the seed not counted
    ok: int = 0  # of those, evaluated cleanly
    tuned: int = 0  # tuned children evaluated (no call, no iteration: evolve/search/tune.py)
    tune_left: int = 0  # at most this many more from the variants queued now (Tuner.left)
    best: float | None = None
    best_test: float | None = None  # held-out score of the current best
    seed_score: float | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    llm_in_flight: int = 0
    eval_in_flight: int = 0
    llm_retries: int = 0  # failed LLM attempts that were tried again (this session)
    llm_failed: int = 0  # LLM calls that failed on their last attempt (this session)
    llm_last_fault: str | None = None  # the latest failed attempt's: "HTTP 500", "timeout", ...
    calls: int = 0  # LLM calls answered (resamples, repairs and meta-notes included)
    rejected: int = 0  # of those, replies that repeated a program and were asked again
    novel: int = 0  # children that behave unlike every earlier program

    def add_llm_fault(self, fault: str, retried: bool) -> None:
        """A failed LLM attempt: retried, or the last of its call."""
        if retried:
            self.llm_retries += 1
        else:
            self.llm_failed += 1
        self.llm_last_fault = fault

    def add_call(self, prompt_tokens: int, completion_tokens: int, cost_usd: float) -> None:
        self.prompt_tokens += prompt_tokens
        self.completion_tokens += completion_tokens
        self.cost_usd += cost_usd

    def set_usage(self, usage: dict) -> None:
        """The LLM usage so far, as Archive.usage sums it (a resumed run's spend counts)."""
        self.prompt_tokens = usage["prompt_tokens"]
        self.completion_tokens = usage["completion_tokens"]
        self.cost_usd = usage["cost_usd"]


class RunObserver(Protocol):
    """Told what a run does; must not raise, and must not block the loop for long."""

    def start(self, stats: RunStats) -> None: ...

    def update(self, stats: RunStats) -> None: ...

    def note(self, text: str) -> None: ...

    def stop(self) -> None: ...


class NullObserver:
    """The default observer: tells no one."""

    def start(self, stats: RunStats) -> None:
        pass

    def update(self, stats: RunStats) -> None:
        pass

    def note(self, text: str) -> None:
        pass

    def stop(self) -> None:
        pass


class RunHooks:
    """What a front end hears, and adds, while a run is set up and runs; here each does
    nothing. The command line's (evolve/cli/run.py) prints the lines and ties Ctrl-C and
    SIGTERM to the run."""

    def notice(self, line: str) -> None:
        """A line for the user before the run starts: a setting ignored, the model used."""

    def started(self, run_id: str) -> None:
        """The run's row exists (or was taken over by this process): it runs from here."""

    def owning(self, archive_path: Path, run_id: str) -> None:
        """This process holds the run's lock: the run a forced stop must leave `stopped`."""

    def on_force(self, cleanup: Callable[[], object]) -> None:
        """`cleanup` (stop a server, kill what is in flight) is what a forced stop runs."""

    def reassert(self) -> None:
        """A library may have replaced the signal handlers (Ray's init does): take them back."""

    def running(self, task: asyncio.Task) -> AbstractContextManager[None]:
        """While the controller runs as `task`: a stop request cancels it."""
        return nullcontext()
