"""One LLM call of a run, from the request to its archive row.

Every attempt is an llm_calls row (a failed one with its error), with what the call was
for and why its model and temperature were chosen, so the archive shows where each
token went. RunStats and the observer hear of each attempt as it happens.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from evolve.archive import Archive, LlmCall
from evolve.archive.vocab import CallPurpose
from evolve.llm import LLMClient, LLMError
from evolve.llm.answer import stored_tool_reply
from evolve.llm.client import FailedAttempt
from evolve.pipeline.state import RunObserver, RunStats
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
    purpose: CallPurpose
    messages: list[dict]
    choice: Choice
    seed: int  # the request's sampling seed
    tools: list[dict] | None = None  # native tool definitions (an agent's turn), sent if set


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
        self.ok_at = llm.clock.monotonic()  # the last answer (or the start), on the LLM's clock

    def slot(self) -> asyncio.Semaphore:
        """Held by the caller around building a prompt and asking it (--llm-parallel)."""
        return self.sem

    async def ask(self, a: Ask) -> LlmCall:
        """The answered call, as stored (its call_id set, its reply text); LLMError once
        every attempt failed. The caller holds a slot()."""
        model = a.choice.model
        self.stats.llm_in_flight += 1
        self.refresh()

        def record(
            reply: str | None = None,
            error: str | None = None,
            prompt_tokens: int = 0,
            completion_tokens: int = 0,
            cost_usd: float = 0.0,
            latency_s: float = 0.0,
        ) -> LlmCall:
            """One attempt's llm_calls row: its reply or error, tokens, cost and latency."""
            call = LlmCall(
                run_id=self.run_id, iteration=a.iteration, island=a.island, model=model,
                edit_format=a.edit_format, prompt=a.messages, reply=reply, error=error,
                prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                cost_usd=cost_usd, latency_s=latency_s, parent_id=a.parent_id,
                second_parent_id=a.second_id, purpose=a.purpose,
                temperature=a.choice.temperature, decision=a.choice.decision,
            )  # fmt: skip
            self.archive.insert_llm_call(call)
            return call

        def on_retry(attempt: FailedAttempt) -> None:
            """A failed attempt that will be tried again: one llm_calls row (no reply, its
            error) and the status line; a long wait is also a note."""
            record(error=attempt.describe(), latency_s=attempt.latency_s)
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
                a.messages,
                model,
                seed=a.seed,
                on_retry=on_retry,
                temperature=a.choice.temperature,
                tools=a.tools,  # None (a single call): no `tools` in the request
            )
        except LLMError as e:
            record(error=str(e), latency_s=e.latency_s)
            self.stats.add_llm_fault(e.fault, retried=False)
            self.refresh()
            self.observer.note(f"LLM call for iteration {a.iteration} failed: {e}")
            raise
        finally:
            self.stats.llm_in_flight -= 1
        self.ok_at = self.llm.clock.monotonic()
        self.successes += 1
        text = reply.content
        if a.tools is not None:  # the tool calls are stored with the text (the agent replays)
            text = stored_tool_reply(reply.content, reply.tool_calls)
        call = record(
            reply=text,
            prompt_tokens=reply.prompt_tokens,
            completion_tokens=reply.completion_tokens,
            cost_usd=reply.cost_usd,
            latency_s=reply.latency_s,
        )
        self.stats.calls += 1
        self.stats.add_call(reply.prompt_tokens, reply.completion_tokens, reply.cost_usd)
        return call
