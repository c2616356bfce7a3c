"""Which models a run samples, at which endpoints, with which keys.

--model and --api-base (the settings `model` and `api_base`, evolve/settings/flags.py) win
over config.yaml's llm section. A model config.yaml names
may have its own api_base and api_key (OpenEvolve's llm.models[*]); its requests go
there. Keys are never stored with the run: they are read from config.yaml (a key, or
"${VAR}" for a variable) and the environment ($OPENAI_API_KEY) each time a run starts,
and a key goes only to the endpoint config.yaml names it with, never to an endpoint
given by --api-base.
"""

from __future__ import annotations

import os
from dataclasses import replace

from evolve.agent.command_spec import command_argv, describe
from evolve.llm import LLMConfig, ModelSpec
from evolve.llm.probe import Endpoint, EndpointRefused, probe
from evolve.llm.profiles import is_local
from evolve.pipeline.config import RunConfig
from evolve.problem.load import Problem
from evolve.problem.model import ModelDefault
from evolve.settings import SettingsError, check_url
from evolve.settings.environ import resolve_key
from evolve.settings.errors import UsageError
from evolve.settings.flags import Settings


def models_for(settings: Settings, problem: Problem) -> tuple[ModelSpec, ...]:
    """--model, else the problem's models (at their own endpoints, unless --api-base
    sends every model to one), else the default (see default_models)."""
    if settings.model:
        try:
            return tuple(ModelSpec.parse(m) for m in settings.model)
        except ValueError as e:
            raise UsageError(str(e)) from None
    if problem.llm.models:
        own = not settings.api_base
        models = tuple(
            ModelSpec(m.name, m.weight, m.api_base if own else None) for m in problem.llm.models
        )
        _distinct(models)
        return models
    return default_models(settings, problem)[0] or RunConfig.models


def _distinct(models: tuple[ModelSpec, ...]) -> None:
    """A request names its model only: one name must mean one endpoint."""
    seen: dict[str, str | None] = {}
    for m in models:
        if m.name in seen and seen[m.name] != m.api_base:
            raise UsageError(
                f"config.yaml: llm.models: '{m.name}' is listed with two endpoints "
                f"({seen[m.name] or 'llm.api_base'}, {m.api_base or 'llm.api_base'}); "
                "evolve sends a model's requests to one endpoint"
            )
        seen[m.name] = m.api_base


def check_endpoint(api_base: str | None, problem: Problem) -> None:
    """The endpoint the run will call must be an http(s) URL: one line now, not a connection
    error per request. config.yaml's api_base values were checked when the problem loaded."""
    if api_base is not None:
        source, url = "--api-base", api_base
    elif problem.llm.api_base is None and os.environ.get("OPENAI_BASE_URL") is not None:
        source, url = "$OPENAI_BASE_URL", os.environ["OPENAI_BASE_URL"]
    else:
        return
    wrong = check_url(url)
    if wrong:
        raise UsageError(f"{source} {url!r}: {wrong}")


def default_models(
    settings: Settings, problem: Problem
) -> tuple[tuple[ModelSpec, ...] | None, str]:
    """The models a run uses when neither --model nor the problem names one, and why.

    None means RunConfig's default (a hosted model): OPENAI_API_KEY is set or an
    endpoint is configured. Otherwise the local model that comes with the install."""
    if settings.model:
        return None, "from --model"
    if problem.llm.models:
        return None, "from the problem's config"
    if os.environ.get("OPENAI_API_KEY"):
        return None, "the default hosted model: no --model given and OPENAI_API_KEY is set"
    if problem.llm.api_key:
        return None, "the default hosted model: no --model given, config.yaml sets llm.api_key"
    if settings.api_base or problem.llm.api_base or os.environ.get("OPENAI_BASE_URL"):
        return None, "the default model name: no --model given, an endpoint is configured"
    return (ModelSpec("local"),), "the local model: no --model given and OPENAI_API_KEY is unset"


def model_line(settings: Settings, problem: Problem, cfg: RunConfig) -> str:
    """One line: which model and endpoint the run uses, and why (or which agent command)."""
    if command_argv(cfg.proposer) is not None:
        return describe(
            cfg.proposer, cfg.agent_network, cfg.agent_env, cfg.agent_evals, cfg.agent_timeout_s
        )
    why = default_models(settings, problem)[1]
    if any(is_local(m.name) for m in cfg.models):
        where = "a llama-cpp-python server on 127.0.0.1 started for this run"
    else:
        where = cfg.api_base or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    own = [f"{m.name} at {m.api_base}" for m in cfg.models if m.api_base]
    names = ", ".join(m.name for m in cfg.models if not m.api_base)
    at = ", ".join(([f"{names} at {where}"] if names else []) + own)
    window = f", {cfg.context_window}-token window" if cfg.context_window else ""
    return f"model {at} ({why}{window}, {cfg.edit_format} edits, max {cfg.max_tokens} tokens)"


def llm_config(cfg: RunConfig, problem: Problem) -> LLMConfig:
    """The run's LLM settings with each model's key, read now from config.yaml and the
    environment (UsageError for a "${VAR}" that is unset)."""
    llm = problem.llm
    try:
        models = tuple(_keyed(m, cfg, problem) for m in cfg.models)
        key = resolve_key(llm.api_key, "config.yaml: llm.api_key")
    except SettingsError as e:
        raise UsageError(str(e)) from None
    same_base = cfg.api_base == llm.api_base  # the endpoint config.yaml's llm.api_key is for
    return replace(cfg.llm_config(), models=models, api_key=key if same_base else None)


def _keyed(m: ModelSpec, cfg: RunConfig, problem: Problem) -> ModelSpec:
    """`m` with the key config.yaml gives it (its own api_key, else llm.api_key, as in
    OpenEvolve), if its endpoint is the one config.yaml names; else no key of config.yaml's."""
    llm = problem.llm
    if m.api_base is None and cfg.api_base != llm.api_base:
        return m  # --api-base: the endpoint is not config.yaml's, nor are its keys
    entry, index = _entry(problem.llm.models, m)
    spec: str | None
    if entry is not None and entry.api_key is not None:
        spec, where = entry.api_key, f"config.yaml: llm.models[{index}].api_key"
    else:
        spec, where = llm.api_key, "config.yaml: llm.api_key"
    return replace(m, api_key=resolve_key(spec, where))


def _entry(entries: tuple[ModelDefault, ...], m: ModelSpec) -> tuple[ModelDefault | None, int]:
    for i, e in enumerate(entries):
        if e.name == m.name and e.api_base == m.api_base:
            return e, i
    return None, -1


def probe_endpoints(cfg: RunConfig, llm: LLMConfig) -> list[str]:
    """Look once at every endpoint the run will call (evolve/llm/probe.py; `llm`: the run's
    llm_config): UsageError, one line, when one cannot serve it; else the lines worth
    telling. Not for the local model."""
    if cfg.iterations == 0 or cfg.proposer.startswith("command:"):
        return []  # no call to make: a command's agent calls its own endpoint
    if any(is_local(m.name) for m in cfg.models):
        return []  # no call to make, or an endpoint evolve starts itself
    env_key = os.environ.get("OPENAI_API_KEY")
    by_place: dict[tuple[str | None, str | None, str], list[str]] = {}
    for m in llm.models:
        key = m.api_key or llm.api_key or env_key
        source = "OPENAI_API_KEY" if key is env_key else "the key in config.yaml"
        by_place.setdefault((m.api_base or llm.api_base, key, source), []).append(m.name)
    lines: list[str] = []
    for (base, key, source), names in by_place.items():
        try:
            lines += probe(Endpoint(base, key, source, tuple(names)))
        except EndpointRefused as e:
            raise UsageError(str(e)) from None
    return lines
