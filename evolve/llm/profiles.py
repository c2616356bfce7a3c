"""Model profiles: what a model can take and how it is best asked.

The evolution loop names no model. A profile says, for a model name, its
context window, how many tokens it may answer with, the edit format it copes
with, the sampling temperature, and how much a prompt shows (small models get
whole-block rewrites and short prompts). `evolve.cli.run` applies the profile under
the command-line flags and the problem folder's settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any

from evolve.settings.flags import default


@dataclass(frozen=True)
class ModelProfile:
    """Advice for RunConfig: every field but `name` is a RunConfig field of the same name
    (evolve.pipeline.launch copies them); None is no advice, so the setting's default stands.
    A default here is the setting's own (Settings')."""

    name: str
    context_window: int  # tokens, prompt and reply together
    max_tokens: int  # reply tokens
    edit_format: str  # diff | block | full
    temperature: float
    prompt_style: str = default("prompt_style")  # full | short | funsearch
    num_inspirations: int = 3
    max_attempts: int = 5
    llm_parallel: int | None = None  # requests in flight the endpoint handles well
    llm_timeout_s: float | None = None
    # The search (evolve/search/): temperatures drawn per call, meta-notes every N calls,
    # stagnation bursts after K iterations (0: off), repair calls per failed child.
    temperatures: tuple[float, ...] = default("temperatures")
    meta_interval: int = default("meta_interval")
    stagnation: int = default("stagnation")
    repair_attempts: int = default("repair_attempts")
    agent_protocol: str | None = None  # --proposer agent's protocol (None: no advice)

    def advice(self) -> dict[str, Any]:
        """The RunConfig fields this profile sets (None: no advice)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "name" and getattr(self, f.name) is not None
        }


# The bundled local models: llama-cpp-python serves one request at a time on
# the CPU, tens of tokens per second, with the window it was started with.
LOCAL_SMALL = ModelProfile(
    "local-small",
    context_window=4096,
    max_tokens=1024,
    edit_format="block",
    temperature=0.7,
    prompt_style="short",
    num_inspirations=1,
    max_attempts=3,
    llm_parallel=1,
    llm_timeout_s=600.0,
    # Measured on binpack (bench/prompt_probe.py, 108 replies of the 0.5B model): clones fall and
    # valid programs rise with the temperature up to 1.2 (0.4: 29% clones, 4% valid; 0.7: 31%,
    # 17%; 1.0: 14%, 33%; 1.2: 8%, 42%).
    temperatures=(0.7, 1.0, 1.2),
    stagnation=8,
    # Measured on binpack (bench/README.md): the 0.5B model answers a repair prompt with the
    # failed code unchanged or a new failure; none of its repairs scored, so none are asked.
    repair_attempts=0,
    # llama.cpp's server takes `tools`, but the local models never called one (no tool call
    # in a race's agent turns on llm_serving); the tools in their prompt only confused them,
    # and `auto` waited for a verdict that never came (bench/README.md, 2026-12-05)
    agent_protocol="text",
)
# Open-weights models served by the user (Ollama, llama.cpp, vLLM), by size in the name.
OPEN_SMALL = ModelProfile(  # <= 8B: Ollama's default window is small
    "open-small",
    context_window=4096,
    max_tokens=1024,
    edit_format="block",
    temperature=0.7,
    prompt_style="short",
    num_inspirations=1,
    max_attempts=3,
    temperatures=(0.4, 0.7, 1.0),
    stagnation=8,
)
OPEN_MEDIUM = ModelProfile(  # 9B .. 40B
    "open-medium",
    context_window=8192,
    max_tokens=2048,
    edit_format="block",
    temperature=0.7,
    num_inspirations=2,
    temperatures=(0.5, 0.8, 1.0),
    meta_interval=10,
    stagnation=10,
)
OPEN_LARGE = ModelProfile(  # > 40B
    "open-large",
    context_window=32768,
    max_tokens=4096,
    edit_format="block",
    temperature=0.8,
    temperatures=(0.6, 0.8, 1.0),
    meta_interval=10,
    stagnation=10,
)
# Hosted frontier models: large windows; the defaults the loop always had.
HOSTED = ModelProfile(
    "hosted",
    context_window=128000,
    max_tokens=4096,
    edit_format="block",
    temperature=0.8,
    temperatures=(0.6, 0.8, 1.0),
    meta_interval=10,
    stagnation=10,
)
# Anything we do not recognise: the loop's old defaults (one temperature, no meta-notes, no
# stagnation bursts), with a window most servers give.
DEFAULT = ModelProfile(
    "default",
    context_window=32768,
    max_tokens=4096,
    edit_format="block",
    temperature=0.8,
)

_HOSTED_RE = re.compile(
    r"^(openai/|anthropic/|google/)?(gpt-|o[1-9]\b|o[1-9]-|chatgpt|claude|gemini|grok|deepseek-(chat|reasoner)|mistral-large)",
    re.IGNORECASE,
)
_SIZE_RE = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?)\s*[bB](?![a-zA-Z])")


def is_local(name: str) -> bool:
    """`local`, `local:NAME` and `local:/path/to/model.gguf` are served by evolve itself."""
    return name == "local" or name.startswith("local:")


def profile_for(name: str) -> ModelProfile:
    """The profile of one model name."""
    if is_local(name):
        return LOCAL_SMALL
    if _HOSTED_RE.match(name):
        return HOSTED
    m = _SIZE_RE.search(name)
    if m:
        billions = float(m.group(1))
        if billions <= 8:
            return OPEN_SMALL
        if billions <= 40:
            return OPEN_MEDIUM
        return OPEN_LARGE
    return DEFAULT


def profile_for_models(names: list[str]) -> ModelProfile:
    """One profile for an ensemble: the most constrained member's (every prompt must suit every model)."""
    profiles = [profile_for(n) for n in names] or [DEFAULT]
    return min(profiles, key=lambda p: (p.context_window, p.max_tokens))
