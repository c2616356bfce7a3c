"""One LLM call of a run, from the request to its archive row.

Every attempt is an llm_calls row (a failed one with its error), with what the call was
for and why its model and temperature were chosen, so the archive shows where each
token went. RunStats and the observer hear of each attempt as it happens.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass

from evolve.archive import Archive
from evolve.llm import LLMClient, LLMError
from evolve.llm.client import FailedAttempt
from evolve.run_state import RunObserver, RunStats
from evolve.search.bandit import Choice

LONG_LLM_WAIT_S = 5.0  # a retry waiting this long (outage, Retry-After) is also a note


@dataclass(frozen=True)
class Ask:
    """What one call asks, and for which slot."""

    iteration: int
    island: int
    parent_id: str | None
    second_id: str | None
    edit_format: str  # block | diff | full | crossover | funsearch | repair | meta
    purpose: str  # mutation | crossover | resample | repair | meta
    messages: list[dict]
    choice: Choice
    seed: int  # the request's sampling seed


class Asker:
    def __init__(
        self,
        archive: Archive,
        run_id: str,
        llm: LLMClient,
        parallel: int,
        stats: RunStats,
        observer: RunObserver,
        refresh: Callable[[], None],
    ):
        self.archive, self.run_id, self.llm = archive, run_id, llm
        self.sem = asyncio.Semaphore(parallel)
        self.stats, self.observer, self.refresh = stats, observer, refresh
        self.successes = 0
        self.ok_at = time.monotonic()  # the last answer (or the start)

    def slot(self) -> asyncio.Semaphore:
        """Held by the caller around building a prompt and asking it (--llm-parallel)."""
        return self.sem

    async def ask(self, a: Ask) -> tuple[int, str]:
        """The reply's (call_id, text); LLMError once every attempt failed. The caller
        holds a slot()."""
        model = a.choice.model
        self.stats.llm_in_flight += 1
        self.refresh()

        def record(content, error, tokens_in, tokens_out, cost_usd, latency_s) -> int:
            return self.archive.insert_llm_call(
                self.run_id, a.iteration, a.island, a.parent_id, a.second_id, a.edit_format,
                model, a.messages, content, error, tokens_in, tokens_out, cost_usd, latency_s,
                purpose=a.purpose, temperature=a.choice.temperature, decision=a.choice.decision,
            )  # fmt: skip

        def on_retry(attempt: FailedAttempt) -> None:
            """A failed attempt that will be tried again: one llm_calls row (no reply, its
            error) and the status line; a long wait is also a note."""
            record(None, attempt.describe(), 0, 0, 0.0, attempt.latency_s)
            self.stats.add_llm_fault(attempt.fault, retried=True)
            self.refresh()
            if attempt.wait_s >= LONG_LLM_WAIT_S:
                self.observer.note(
                    f"LLM {model}: {attempt.error}; waiting {attempt.wait_s:.0f} s"
                    f"{' (Retry-After)' if attempt.retry_after_s is not None else ''}"
                    f" before attempt {attempt.attempt + 1}/{attempt.max_attempts}"
                )

        try:
            reply = await self.llm.complete(
                a.messages, model, seed=a.seed, on_retry=on_retry, temperature=a.choice.temperature
            )
        except LLMError as e:
            record(None, str(e), 0, 0, 0.0, e.latency_s)
            self.stats.add_llm_fault(e.fault, retried=False)
            self.refresh()
            self.observer.note(f"LLM call for iteration {a.iteration} failed: {e}")
            raise
        finally:
            self.stats.llm_in_flight -= 1
        self.ok_at = time.monotonic()
        self.successes += 1
        call_id = record(
            reply.content,
            None,
            reply.prompt_tokens,
            reply.completion_tokens,
            reply.cost_usd,
            reply.latency_s,
        )
        self.stats.calls += 1
        self.stats.add_call(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)
        return call_id, reply.content
