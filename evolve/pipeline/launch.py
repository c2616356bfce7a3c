"""A run's settings merged into one RunConfig and checked, before anything is written.

A setting given (a flag, a keyword argument of evolve.run; even one equal to its default)
> the problem folder's settings > the model's profile > the defaults (Settings'). Everything
that can be checked before the seed is evaluated is checked here: the seed's EVOLVE-BLOCK
markers and size, the endpoint URL, the price table, the prompt's fit, the local model.
"""

from __future__ import annotations

import os
from pathlib import Path

from evolve.agent.command_spec import COMMAND_MODEL, command_argv
from evolve.agent.confine import Unconfinable
from evolve.agent.confine import check as confine_check
from evolve.agent.window import session_window
from evolve.llm import ModelSpec
from evolve.llm.local_server import LocalServer
from evolve.llm.local_weights import LocalModelError
from evolve.llm.pricing import PriceTable, require_prices
from evolve.llm.profiles import ModelProfile, is_local, profile_for_models
from evolve.pipeline.config import RunConfig
from evolve.pipeline.endpoints import check_endpoint, models_for
from evolve.pipeline.parts import load_prices
from evolve.problem.load import Overrides, Problem, ProblemError, require_blocks
from evolve.problem.size_cap import too_large
from evolve.problem.skydiscover import held_out_note
from evolve.search.prompts import PromptBuilder, PromptContext, PromptTooLong, ShownProgram
from evolve.settings.errors import UsageError
from evolve.settings.flags import FIELD_OF, NOT_STORED, Settings

SPOKEN = ("openai",)  # llm.provider values `run` calls: the openai SDK's API


def resolve(problem: Problem, settings: Settings) -> RunConfig:
    """The run's RunConfig: the layers merged once, then checked (UsageError, one line)."""
    return prepare(problem, settings)[0]


def prepare(problem: Problem, settings: Settings) -> tuple[RunConfig, PriceTable, PromptBuilder]:
    """The run's RunConfig, price table and prompt builder, each made once as it is checked
    (UsageError, one line); evolve.pipeline.parts hands them to the run."""
    try:
        require_blocks(problem)
    except ProblemError as e:
        raise UsageError(str(e)) from None
    too_big = too_large(problem, problem.seed_code)
    if too_big:
        raise UsageError(f"{problem.seed_file}: {too_big}")
    flags = {
        FIELD_OF.get(k, k): v
        for k, v in settings.given().items()
        if k not in NOT_STORED and k != "model"
    }
    command = command_argv(settings.proposer) is not None
    if command:  # no model is called: the command's own agent is the run's one "model"
        check_confinable()
        models: tuple[ModelSpec, ...] = (ModelSpec(COMMAND_MODEL),)
    else:
        models = models_for(settings, problem)
        check_provider(problem, settings, [m.name for m in models])
    names = [m.name for m in models]
    local = any(is_local(n) for n in names)
    if local and (len(names) > 1 or settings.api_base):
        raise UsageError(
            f"--model {', '.join(names)}: a local model is served by evolve itself; "
            "it cannot be combined with other models or --api-base"
        )
    if not local:
        check_endpoint(settings.api_base, problem)
    prof = profile_for_models(names)
    kw: dict = {"problem_dir": str(problem.root)}
    for layer in (prof.advice(), _from_problem(problem, prof), flags):  # lowest first
        kw.update(layer)
    kw["models"] = models
    kw["agent_env"] = tuple(kw.get("agent_env", ()))
    kw.update(_stored_overrides(Overrides.from_args(settings), problem))
    if "context_window" not in flags and not local:
        # an unknown endpoint's window is a guess: never let it squeeze a reply the user asked for
        kw["context_window"] = max(kw["context_window"], 2 * kw["max_tokens"])
    if settings.prices and not Path(settings.prices).is_file():
        raise UsageError(f"--prices {settings.prices}: no such file")
    try:
        cfg = RunConfig(**kw)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None
    prices = load_prices(cfg)  # a bad file: one line, before anything runs
    try:
        burst = [cfg.escalation_model] if cfg.escalation_model else []
        if not command:  # a command reports its own cost
            require_prices([m.name for m in cfg.models] + burst, cfg.budget_usd, prices)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None
    prompts = PromptBuilder.for_config(problem, cfg)
    try:  # the smallest prompt (the seed's EVOLVE-BLOCK and the task) must fit the window
        prompts.build(
            PromptContext(parent=ShownProgram(problem.seed_code, None), edit_format=cfg.edit_format)
        )
    except PromptTooLong as e:
        raise UsageError(f"--model {', '.join(names)}: {e}") from None
    return cfg, prices, prompts


def check_confinable() -> None:
    """--proposer command runs confined or not at all: one line where it cannot be."""
    try:
        confine_check()
    except Unconfinable as e:
        raise UsageError(str(e)) from None


def check_provider(problem: Problem, settings: Settings, names: list[str]) -> None:
    """UsageError unless the folder's llm.provider (OpenEvolve's: openai, claude_code, ...)
    is one `run` speaks, or an OpenAI-compatible endpoint replaces the folder's: --api-base
    ($OPENAI_BASE_URL), or `--model local`. Never the offline default model unasked.
    `eval` and `check` call no model: they never ask."""
    llm = problem.llm
    other = sorted({p for p in (llm.provider, *(m.provider for m in llm.models)) if p})
    other = [p for p in other if p not in SPOKEN]
    pointed = settings.api_base or os.environ.get("OPENAI_BASE_URL")
    if not other or pointed or (settings.model and all(is_local(n) for n in names)):
        return
    name = problem.config_file.name if problem.config_file else "config.yaml"
    raise UsageError(
        f"{name}: llm.provider '{other[0]}': evolve run speaks {', '.join(SPOKEN)} only "
        "(OpenAI-compatible endpoints: OpenAI, vLLM, Ollama, LiteLLM, OpenRouter); point it at "
        "one with --api-base URL (and --model NAME), or set llm.provider: openai and llm.api_base"
    )


def _from_problem(problem: Problem, prof: ModelProfile) -> dict:
    """problem.toml's [evolution] and config.yaml's settings, where the folder sets them."""
    max_tokens = problem.llm.max_tokens
    if max_tokens is not None and max_tokens > prof.context_window // 2:
        max_tokens = None  # may not crowd the prompt out of a small window: the profile's wins
    out = {
        "iterations": problem.iterations,
        "num_islands": problem.num_islands,
        "edit_format": problem.edit_format,
        "api_base": problem.llm.api_base,
        "temperature": problem.llm.temperature,
        "max_tokens": max_tokens,
        "llm_timeout_s": problem.llm.timeout_s,
        "llm_retries": problem.llm.retries,
        "llm_backoff_s": problem.llm.backoff_s,
        "parallel": problem.parallel,
        "seed": problem.seed,
        "migration_interval": problem.migration_interval,
        "held_out_note": held_out_note(problem),
        **problem.search,
    }
    return {k: v for k, v in out.items() if v is not None}


def _stored_overrides(ov: Overrides, problem: Problem) -> dict:
    """The evaluation settings as RunConfig stores them, for `resume` to apply again
    (--config as the file it found, so that resume reads it from any directory)."""
    ov = ov.absolute()
    return {
        "eval_env": ov.env,
        "initial_program": ov.initial_program,
        "eval_timeout_s": ov.timeout_s,
        "eval_memory_mb": ov.memory_mb,
        "config_file": str(problem.config_file) if ov.config and problem.config_file else None,
        "strict_config": ov.strict_config,
    }


def _local_model(cfg: RunConfig) -> str | None:
    return next((m.name for m in cfg.models if is_local(m.name)), None)


def prepare_local(cfg: RunConfig) -> None:
    """Check the `local` extra and fetch/assemble the weights before anything is written."""
    from evolve.llm.local_model import parse_local, prepare

    name = _local_model(cfg)
    if name is not None:
        try:
            prepare(parse_local(name))
        except LocalModelError as e:
            raise UsageError(str(e)) from None


def start_local(cfg: RunConfig) -> LocalServer | None:
    """Start (or join) the local model's server when the run uses one."""
    from evolve.llm.local_model import start_server

    name = _local_model(cfg)
    if name is None:
        return None
    try:
        names = [m.name for m in cfg.models]
        window = session_window(cfg.context_window or 4096, cfg.proposer, names)
        return start_server(name, window or 4096)
    except LocalModelError as e:
        raise UsageError(str(e)) from None
