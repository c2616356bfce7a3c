"""Stand-in for `shinka.llm` (ShinkaEvolve 0.0.7): the LLMClient an evaluator uses as a judge.

ShinkaEvolve's client calls the providers its model names pick (Azure, Bedrock, Gemini,
...) with keys from the environment. Here the judge is any OpenAI-compatible endpoint the
run passes to the evaluator (`--env SHINKA_JUDGE_BASE_URL=...`, or OPENAI_BASE_URL; its key
in SHINKA_JUDGE_API_KEY or OPENAI_API_KEY), and SHINKA_JUDGE_MODEL, when set, replaces the
model names the evaluator wrote (they name providers that endpoint does not serve). Without
an endpoint a query raises one line saying so. evolve's sandboxes have no network, so
under `evolve eval` / `run` the query fails with a line saying that: the judge works where
the evaluator runs outside them (ShinkaEvolve itself, or this stand-in on its own).
Standard library only."""

from __future__ import annotations

import json
import os
import random
import re
import urllib.error
import urllib.request

__all__ = ["LLMClient", "QueryResult", "extract_between"]


class QueryResult:
    """The reply: `content` and the accounting fields evaluators read (`cost` is 0 here:
    the endpoint's price is not known)."""

    def __init__(self, content: str, msg: str, system_msg: str, model_name: str, kwargs: dict,
                 input_tokens: int = 0, output_tokens: int = 0, cost: float = 0.0):  # fmt: skip
        self.content = content
        self.msg = msg
        self.system_msg = system_msg
        self.new_msg_history = [{"role": "user", "content": msg},
                                {"role": "assistant", "content": content}]  # fmt: skip
        self.model_name = model_name
        self.kwargs = kwargs
        self.input_tokens = input_tokens
        self.output_tokens = output_tokens
        self.thinking_tokens = 0
        self.cost = cost
        self.input_cost = 0.0
        self.output_cost = 0.0
        self.thought = ""


def _pick(value, default=None):
    """ShinkaEvolve samples a setting given as a list once per query."""
    if isinstance(value, list | tuple):
        return random.choice(value) if value else default
    return default if value is None else value


class LLMClient:
    """ShinkaEvolve's LLMClient(model_names, temperatures, max_tokens, ...)."""

    def __init__(self, model_names="gpt-5.1", temperatures=0.75, max_tokens=4096,
                 reasoning_efforts="auto", model_sample_probs=None, output_model=None,
                 verbose=True, **_ignored):  # fmt: skip
        self.model_names = [model_names] if isinstance(model_names, str) else list(model_names)
        self.temperatures = temperatures
        self.max_tokens = max_tokens
        self.reasoning_efforts = reasoning_efforts
        self.model_sample_probs = model_sample_probs
        self.verbose = verbose

    def get_kwargs(self) -> dict:
        """One draw of the sampling settings, as ShinkaEvolve's get_kwargs() returns them."""
        names, probs = self.model_names, self.model_sample_probs
        name = random.choices(names, weights=probs)[0] if probs else random.choice(names)
        return {"model_name": name, "temperature": _pick(self.temperatures, 0.75),
                "max_tokens": _pick(self.max_tokens, 4096)}  # fmt: skip

    def query(self, msg: str, system_msg: str = "", msg_history=None, llm_kwargs=None,
              **_ignored) -> QueryResult:  # fmt: skip
        kwargs = dict(llm_kwargs or self.get_kwargs())
        base = os.environ.get("SHINKA_JUDGE_BASE_URL") or os.environ.get("OPENAI_BASE_URL")
        if not base:
            raise RuntimeError(
                "shinka.llm (evolve's stand-in): no judge endpoint: pass the evaluator "
                "--env SHINKA_JUDGE_BASE_URL=http://host:port/v1 (an OpenAI-compatible server)"
            )
        model = os.environ.get("SHINKA_JUDGE_MODEL") or kwargs.get("model_name") or "default"
        messages = [{"role": "system", "content": system_msg}] if system_msg else []
        messages += list(msg_history or []) + [{"role": "user", "content": msg}]
        body = {"model": model, "messages": messages,
                "temperature": float(kwargs.get("temperature", 0.0)),
                "max_tokens": int(kwargs.get("max_tokens", 4096))}  # fmt: skip
        key = os.environ.get("SHINKA_JUDGE_API_KEY") or os.environ.get("OPENAI_API_KEY") or "none"
        req = urllib.request.Request(
            base.rstrip("/") + "/chat/completions", data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(req, timeout=600) as r:
                reply = json.loads(r.read().decode("utf-8"))
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise RuntimeError(
                f"shinka.llm (evolve's stand-in): judge at {base} unreachable ({e}); "
                "evolve's sandboxes have no network"
            ) from None
        content = reply["choices"][0]["message"].get("content") or ""
        usage = reply.get("usage") or {}
        return QueryResult(content, msg, system_msg, model, kwargs,
                           usage.get("prompt_tokens", 0), usage.get("completion_tokens", 0))  # fmt: skip


def extract_between(content: str, start: str = "<json>", end: str = "</json>",
                    return_dict: bool = True, fallback: bool = False):  # fmt: skip
    """The text between `start` and `end` (parsed as JSON when return_dict), else, with
    `fallback`, the first fenced block; None when neither is there."""
    found = re.search(start + r"\s*(.*?)\s*" + end, content, re.DOTALL)
    if found is None and fallback:
        found = re.search(r"```\s*(.*?)\s*```", content, re.DOTALL)
    if found is None:
        return None
    text = found.group(1).strip()
    return json.loads(text) if return_dict else text
