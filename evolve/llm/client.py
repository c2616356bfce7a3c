"""The LLM layer: any OpenAI-compatible endpoint through the `openai` SDK.

An answer is untrusted input (evolve/llm/answer.py): one that is not a well-formed
completion, or is over `max_reply_bytes`, is a BadAnswer, retried as a transport error
is. Retries are tenacity's (the SDK's own are off, `max_retries=0`): HTTP 429 and
5xx, timeouts, connection errors and bad answers are retried up to `max_retries` times with
exponential backoff and jitter (`backoff_s`, doubling, capped at 30 s), or
after the server's `Retry-After` on 429 and 503 (seconds or an HTTP date,
capped at MAX_RETRY_AFTER_S). Every failed attempt is reported to the caller's
`on_retry` as a FailedAttempt, so the archive and the screen can show it; the
last one ends in an LLMError. Every wait and every reading of the time goes through
the client's Clock, so a test gives it one whose waits take no real time.
"""

from __future__ import annotations

import asyncio
import datetime
import email.utils
import math
import os
import random
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from evolve.llm.answer import (
    DEFAULT_MAX_REPLY_BYTES,
    BadAnswer,
    Completion,
    SlowAnswer,
    ToolCall,
    parse_completion,
    read_body,
)
from evolve.llm.pricing import PriceTable

RETRYABLE = (
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APITimeoutError,
    openai.APIConnectionError,
    SlowAnswer,
    BadAnswer,
)
RETRY_AFTER_STATUSES = (429, 503)  # where a server's Retry-After is honoured
MAX_RETRY_AFTER_S = 60.0  # the longest Retry-After honoured (a longer one waits this long)
MAX_BACKOFF_S = 30.0  # the longest computed backoff, before jitter
_STATUS_PREFIX = re.compile(r"^Error code: \d+ - ")  # the SDK's, before the server's message


@dataclass(frozen=True)
class ModelSpec:
    """A model to sample, by weight. `api_base`/`api_key` None: the run's endpoint and key
    (LLMConfig's, else $OPENAI_BASE_URL / $OPENAI_API_KEY). A key is never stored."""

    name: str
    weight: float = 1.0
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)

    @classmethod
    def parse(cls, text: str) -> ModelSpec:
        """`NAME` or `NAME:WEIGHT` (a weight is the text after the last colon, if numeric)."""
        name, sep, weight = text.rpartition(":")
        if sep and name:
            try:
                w = float(weight)
            except ValueError:
                return cls(text)
            if not w > 0:
                raise ValueError(f"--model {text}: weight must be > 0")
            return cls(name, w)
        if not text:
            raise ValueError("--model: empty model name")
        return cls(text)


@dataclass(frozen=True)
class LLMConfig:
    models: tuple[ModelSpec, ...]
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 1.0
    temperature: float = 0.8
    max_tokens: int = 4096
    max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES  # a longer answer is a bad one, never kept


@dataclass(frozen=True)
class LLMReply:
    model: str
    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    attempts: int
    tool_calls: tuple[ToolCall, ...] = ()  # native tool calls (asked with `tools` only)


@dataclass(frozen=True)
class FailedAttempt:
    """One attempt at a call that failed and will be tried again."""

    model: str
    attempt: int  # 1-based
    max_attempts: int
    fault: str  # short: "HTTP 500", "HTTP 429", "timeout", "connection error", "bad answer"
    error: str  # one line: the fault and the server's or the transport's message
    latency_s: float  # how long the attempt took
    wait_s: float  # the wait before the next attempt
    retry_after_s: float | None  # what the server asked for (Retry-After), if it did

    def describe(self) -> str:
        """One line for the archive and the log."""
        why = " (Retry-After)" if self.retry_after_s is not None else ""
        wait = f"{self.wait_s:.1f}" if self.wait_s >= 0.1 else f"{self.wait_s:.2f}"
        return (
            f"attempt {self.attempt}/{self.max_attempts} failed: {self.error}; "
            f"retrying in {wait} s{why}"
        )


class LLMError(RuntimeError):
    """The endpoint failed on every attempt, or with an error not worth retrying; the
    message (one line) says how. `fault` is the last attempt's, as in FailedAttempt."""

    def __init__(
        self, message: str, fault: str = "error", attempts: int = 1, latency_s: float = 0.0
    ):
        super().__init__(message)
        self.fault, self.attempts, self.latency_s = fault, attempts, latency_s


RetryHook = Callable[[FailedAttempt], None]


@dataclass(frozen=True)
class Clock:
    """Where the LLM layer reads the time and waits: the real clock unless a test passes
    its own, whose waits take no real time and are exactly what the client asked for."""

    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep  # the wait before a retry
    monotonic: Callable[[], float] = time.monotonic  # how long the endpoint has been down
    wall: Callable[[], float] = time.time  # "now" for a Retry-After given as an HTTP date


class LLMClient:
    def __init__(
        self, cfg: LLMConfig, prices: PriceTable, seed: int = 0, clock: Clock | None = None
    ):
        self.cfg = cfg
        self.prices = prices
        self.clock = clock or Clock()
        self.rng = random.Random(seed)
        self.base_url = cfg.api_base or os.environ.get("OPENAI_BASE_URL")
        key = cfg.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        # one SDK client per distinct endpoint and key; each model's requests go to its own
        clients: dict[tuple[str | None, str], AsyncOpenAI] = {}
        self._endpoint: dict[str, tuple[str | None, AsyncOpenAI]] = {}
        for m in cfg.models:
            where = (m.api_base or self.base_url, m.api_key or key)
            if where not in clients:
                clients[where] = self._client(*where)
            self._endpoint.setdefault(m.name, (where[0], clients[where]))
        default = (self.base_url, key)
        self.client = clients.get(default) or self._client(*default)
        self._clients = [*clients.values(), *([] if default in clients else [self.client])]

    def _client(self, base: str | None, key: str) -> AsyncOpenAI:
        return AsyncOpenAI(api_key=key, base_url=base, timeout=self.cfg.timeout_s, max_retries=0)

    def endpoint(self, model: str) -> tuple[str | None, AsyncOpenAI]:
        """The base URL and SDK client `model`'s requests go to (the run's for a name
        not among the models)."""
        return self._endpoint.get(model, (self.base_url, self.client))

    def pick_model(self) -> str:
        models = self.cfg.models
        return self.rng.choices([m.name for m in models], weights=[m.weight for m in models])[0]

    async def complete(
        self,
        messages: list[dict],
        model: str,
        seed: int | None = None,
        on_retry: RetryHook | None = None,
        temperature: float | None = None,
        tools: list[dict] | None = None,
    ) -> LLMReply:
        """One chat completion. Each failed attempt that is retried goes to `on_retry`
        (called before the wait); the last failure raises LLMError. `tools`: OpenAI's
        function definitions, sent only when given (the reply's `tool_calls` are kept)."""
        extra: dict[str, Any] = {"seed": seed} if seed is not None else {}
        if tools is not None:
            extra["tools"] = tools
        max_attempts = self.cfg.max_retries + 1
        attempt, t0 = 0, time.monotonic()
        base_url, client = self.endpoint(model)

        def before_sleep(state: RetryCallState) -> None:
            exc = state.outcome.exception() if state.outcome is not None else None
            if on_retry is None or exc is None:
                return
            wait = state.next_action.sleep if state.next_action is not None else 0.0
            on_retry(
                FailedAttempt(
                    model,
                    attempt,
                    max_attempts,
                    self.fault(exc),
                    self.describe(exc),
                    time.monotonic() - t0,
                    wait,
                    retry_after_of(exc, self.clock.wall()),
                )
            )

        retrying = AsyncRetrying(
            stop=stop_after_attempt(max_attempts),
            wait=self._wait,
            retry=retry_if_exception_type(RETRYABLE),
            before_sleep=before_sleep,
            sleep=self.clock.sleep,
            reraise=True,
        )
        try:
            async for try_ in retrying:
                with try_:
                    attempt, t0 = attempt + 1, time.monotonic()
                    answer = await self._ask(client, model, messages, temperature, extra)
        except openai.OpenAIError as e:
            if isinstance(e, RETRYABLE):
                what = (
                    f"{model} at {base_url or 'api.openai.com'}: failed after "
                    f"{attempt} attempts: {type(e).__name__}: {self.describe(e)}"
                )
            elif isinstance(e, openai.APIStatusError):
                what = f"{model}: HTTP {e.status_code}: {_short(e)}"
            else:
                what = f"{model}: {_short(e)}"
            raise LLMError(what, self.fault(e), attempt, time.monotonic() - t0) from None
        latency = time.monotonic() - t0
        pt, ct = answer.prompt_tokens, answer.completion_tokens
        cost = self.prices.cost(model, pt, ct)
        return LLMReply(model, answer.content, pt, ct, cost, latency, attempt, answer.tool_calls)

    async def _ask(
        self,
        client: AsyncOpenAI,
        model: str,
        messages: list[dict],
        temperature: float | None,
        extra: dict[str, Any],
    ) -> Completion:
        """One attempt: the request, its body read up to the reply cap, and that body
        checked (BadAnswer otherwise), all within the request timeout."""
        try:
            async with asyncio.timeout(self.cfg.timeout_s):
                async with client.chat.completions.with_streaming_response.create(
                    model=model,
                    messages=cast(list[ChatCompletionMessageParam], messages),  # role/content
                    temperature=self.cfg.temperature if temperature is None else temperature,
                    max_tokens=self.cfg.max_tokens,
                    **extra,
                ) as resp:
                    headers = resp.headers
                    body = await read_body(
                        resp.iter_bytes(), headers.get("content-length"), self.cfg.max_reply_bytes
                    )
        except TimeoutError:  # the whole answer took too long (a trickle of bytes, say)
            raise SlowAnswer(f"no whole answer within {self.cfg.timeout_s:g} s") from None
        return parse_completion(body, headers.get("content-type"))

    def fault(self, e: BaseException) -> str:
        """What went wrong, in a word or two: HTTP 500, timeout, connection error."""
        if isinstance(e, openai.APIStatusError):
            return f"HTTP {e.status_code}"
        if isinstance(e, openai.APITimeoutError | SlowAnswer):
            return "timeout"
        if isinstance(e, openai.APIConnectionError):
            return "connection error"
        if isinstance(e, BadAnswer):
            return "bad answer"
        return type(e).__name__

    def describe(self, e: BaseException) -> str:
        """The fault and its one-line detail."""
        if isinstance(e, openai.APIStatusError):
            return f"HTTP {e.status_code}: {_STATUS_PREFIX.sub('', _short(e))}"
        if isinstance(e, openai.APITimeoutError | SlowAnswer):
            return f"timeout after {self.cfg.timeout_s:g} s"
        if isinstance(e, openai.APIConnectionError):
            cause = e.__cause__ or e.__context__
            detail = _short(cause) if cause is not None and str(cause) else _short(e)
            return f"connection error: {detail}"
        if isinstance(e, BadAnswer):
            return f"bad answer: {_short(e)}"
        return f"{type(e).__name__}: {_short(e)}"

    def _wait(self, state: RetryCallState) -> float:
        """The server's Retry-After where it gave one, else backoff with jitter."""
        exc = state.outcome.exception() if state.outcome is not None else None
        after = retry_after_of(exc, self.clock.wall())
        if after is not None:
            return after
        return self._backoff(state.attempt_number - 1)

    def _backoff(self, attempt: int) -> float:
        base = self.cfg.backoff_s * (2**attempt)
        return min(MAX_BACKOFF_S, base) * (0.5 + self.rng.random())

    async def close(self) -> None:
        for client in self._clients:
            await client.close()


def retry_after_of(e: BaseException | None, now: float | None = None) -> float | None:
    """The wait a 429 or 503 asks for in its Retry-After (capped at MAX_RETRY_AFTER_S),
    or None: another error, no header, or a header asking for no wait. `now`: the wall
    clock's time for a date (default: time.time())."""
    if not isinstance(e, openai.APIStatusError) or e.status_code not in RETRY_AFTER_STATUSES:
        return None
    after = parse_retry_after(e.response.headers, now)
    return None if after is None or after <= 0 else min(after, MAX_RETRY_AFTER_S)


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` (OpenAI's), or `Retry-After` in seconds or
    as an HTTP date (RFC 9110); None when absent or unreadable. Never negative."""
    for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        return max(0.0, seconds) if math.isfinite(seconds) else MAX_RETRY_AFTER_S
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": the date is UTC, as every HTTP date is
        when = when.replace(tzinfo=datetime.UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def _short(e: BaseException | None) -> str:
    return str(e).splitlines()[0][:300] if e is not None and str(e) else ""
