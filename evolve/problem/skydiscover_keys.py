"""SkyDiscover's config.yaml keys, applied to the Problem of a folder that carries them.

A SkyDiscover folder (evolve/problem/skydiscover.py), and an OpenEvolve folder whose
config.yaml sets any of SkyDiscover's keys, get SkyDiscover's meaning for them:
diff_based_generation (the edit format), max_solution_length (the size cap: 60,000 bytes
by default in a SkyDiscover folder), cascade thresholds [0.3, 0.6] where the file sets
none, search.type (evolve's nearest search, or a warning), agentic.enabled (the agent
proposer), and model names written `provider/model` (gemini/gemini-3-pro): the
provider's endpoint and its usual API-key variable.
"""

from __future__ import annotations

import os
from dataclasses import replace

from evolve.problem.model import LLMDefaults, ModelDefault, Problem, Stage
from evolve.settings import OpenEvolveConfig

MAX_SOLUTION_LENGTH = 60000  # SkyDiscover's Config.max_solution_length
CASCADE_THRESHOLDS = (0.3, 0.6)  # SkyDiscover's EvaluatorConfig.cascade_thresholds
# SkyDiscover's providers: (endpoint, the API-key variables it reads, first found wins)
PROVIDERS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "openai": ("https://api.openai.com/v1", ("OPENAI_API_KEY",)),
    "azure": ("https://api.openai.com/v1", ("AZURE_API_KEY", "OPENAI_API_KEY")),
    "gemini": (
        "https://generativelanguage.googleapis.com/v1beta/openai/",
        ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
    ),
    "anthropic": ("https://api.anthropic.com/v1/", ("ANTHROPIC_API_KEY",)),
    "deepseek": ("https://api.deepseek.com/v1", ("DEEPSEEK_API_KEY",)),
    "mistral": ("https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
    "cohere": ("https://api.cohere.com/v1", ("CO_API_KEY", "COHERE_API_KEY")),
    "huggingface": (None, ("HF_TOKEN", "HUGGINGFACE_API_KEY")),
    "ollama": (None, ()),
    "vllm": (None, ()),
}
# SkyDiscover's search types that are evolve's MAP-Elites islands, near enough
NEAREST = {"openevolve_native": "OpenEvolve's MAP-Elites islands", "topk": "top-k parents"}


def resolve_model(model: ModelDefault) -> ModelDefault:
    """`provider/name` as SkyDiscover resolves it: the bare name, the provider's endpoint
    (unless the model sets one) and its key variable (unless the model sets a key)."""
    provider, slash, bare = model.name.partition("/")
    if not slash or provider.lower() not in PROVIDERS:
        return model
    base, variables = PROVIDERS[provider.lower()]
    key = model.api_key
    if key is None and variables:
        found = next((v for v in variables if os.environ.get(v)), variables[0])
        key = "${" + found + "}"
    return replace(model, name=bare, api_base=model.api_base or base, api_key=key)


def apply(problem: Problem, cfg: OpenEvolveConfig, skydiscover: bool) -> Problem:
    """`problem` with the SkyDiscover keys `cfg` sets applied; `skydiscover`: the folder is
    SkyDiscover's own (its defaults apply even where the file is silent)."""
    keys = cfg.skydiscover_keys()
    if not skydiscover and not keys:
        return problem
    notices = list(problem.notices)
    search = dict(problem.search)
    diff = cfg.diff_based_generation
    if diff is None and cfg.diff_based_evolution is None and skydiscover:
        diff = True  # SkyDiscover's default
    edit_format = problem.edit_format if diff is None else ("diff" if diff else "full")
    cap = cfg.max_solution_length
    if cap is None and cfg.max_code_length is None and skydiscover:
        cap = MAX_SOLUTION_LENGTH
    kind = cfg.search.type
    if kind is not None and kind not in NEAREST:
        notices.append(
            f"config: search.type {kind!r}: SkyDiscover's own algorithm; evolve runs its "
            "MAP-Elites islands instead (see `evolve run --help` for its search settings)"
        )
    if cfg.agentic.enabled:
        search.setdefault("proposer", "agent")
    llm = problem.llm
    models = tuple(resolve_model(m) for m in llm.models)
    return replace(
        problem,
        edit_format=edit_format,
        max_code_bytes=cap or problem.max_code_bytes,
        cascade=_cascade(problem.cascade, cfg),
        search=search,
        notices=tuple(notices),
        llm=LLMDefaults(**{**llm.__dict__, "models": models}),
    )


def _cascade(stages: tuple[Stage, ...], cfg: OpenEvolveConfig) -> tuple[Stage, ...]:
    """SkyDiscover's default thresholds where the file sets none (the last stage gates
    nothing, as ever)."""
    if cfg.evaluator.cascade_thresholds is not None or len(stages) < 2:
        return stages
    out = [
        replace(s, threshold=CASCADE_THRESHOLDS[i] if i < len(CASCADE_THRESHOLDS) else None)
        for i, s in enumerate(stages[:-1])
    ]
    return (*out, stages[-1])


def search_line(cfg: OpenEvolveConfig) -> str | None:
    """`evolve check`'s line about search.type (None: the file sets none)."""
    kind = cfg.search.type
    if kind is None:
        return None
    if kind in NEAREST:
        return f"  search.type {kind}: evolve's MAP-Elites islands (nearest to {NEAREST[kind]})"
    return f"  search.type {kind}: not evolve's; its MAP-Elites islands run instead"
