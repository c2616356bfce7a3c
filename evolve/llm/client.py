"""The LLM layer: any OpenAI-compatible endpoint through the `openai` SDK.

We retry ourselves (exponential backoff with jitter) instead of relying on
the SDK's retries so every attempt is visible, bounded and counted.
"""

from __future__ import annotations

import asyncio
import os
import random
import time
from dataclasses import dataclass
from typing import Any, cast

import openai
from openai import AsyncOpenAI
from openai.types.chat import ChatCompletionMessageParam

from evolve.llm.pricing import PriceTable

RETRYABLE = (
    openai.RateLimitError,
    openai.InternalServerError,
    openai.APITimeoutError,
    openai.APIConnectionError,
)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    weight: float = 1.0

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
    api_key: str | None = None
    timeout_s: float = 120.0
    max_retries: int = 4
    backoff_s: float = 1.0
    temperature: float = 0.8
    max_tokens: int = 4096


@dataclass(frozen=True)
class LLMReply:
    model: str
    content: str
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    latency_s: float
    attempts: int


class LLMError(RuntimeError):
    """The endpoint failed on every attempt; the message says how."""


class LLMClient:
    def __init__(self, cfg: LLMConfig, prices: PriceTable, seed: int = 0):
        self.cfg = cfg
        self.prices = prices
        self.rng = random.Random(seed)
        base = cfg.api_base or os.environ.get("OPENAI_BASE_URL")
        key = cfg.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
        self.base_url = base
        self.client = AsyncOpenAI(api_key=key, base_url=base, timeout=cfg.timeout_s, max_retries=0)

    def pick_model(self) -> str:
        models = self.cfg.models
        return self.rng.choices([m.name for m in models], weights=[m.weight for m in models])[0]

    async def complete(self, messages: list[dict], model: str, seed: int | None = None) -> LLMReply:
        last: Exception | None = None
        for attempt in range(self.cfg.max_retries + 1):
            t0 = time.monotonic()
            try:
                extra: dict[str, Any] = {"seed": seed} if seed is not None else {}
                resp = await self.client.chat.completions.create(
                    model=model,
                    messages=cast(list[ChatCompletionMessageParam], messages),  # role/content dicts
                    temperature=self.cfg.temperature,
                    max_tokens=self.cfg.max_tokens,
                    **extra,
                )
            except RETRYABLE as e:
                last = e
                if attempt < self.cfg.max_retries:
                    await asyncio.sleep(self._backoff(attempt))
                continue
            except openai.APIStatusError as e:
                raise LLMError(f"{model}: HTTP {e.status_code}: {_short(e)}") from None
            except openai.OpenAIError as e:
                raise LLMError(f"{model}: {_short(e)}") from None
            latency = time.monotonic() - t0
            content = ""
            if resp.choices and resp.choices[0].message and resp.choices[0].message.content:
                content = resp.choices[0].message.content
            usage = resp.usage
            pt = int(getattr(usage, "prompt_tokens", 0) or 0)
            ct = int(getattr(usage, "completion_tokens", 0) or 0)
            return LLMReply(
                model, content, pt, ct, self.prices.cost(model, pt, ct), latency, attempt + 1
            )
        raise LLMError(
            f"{model} at {self.base_url or 'api.openai.com'}: failed after "
            f"{self.cfg.max_retries + 1} attempts: {type(last).__name__}: {_short(last)}"
        )

    def _backoff(self, attempt: int) -> float:
        base = self.cfg.backoff_s * (2**attempt)
        return min(30.0, base) * (0.5 + self.rng.random())

    async def close(self) -> None:
        await self.client.close()


def _short(e: Exception | None) -> str:
    return str(e).splitlines()[0][:300] if e is not None else ""
