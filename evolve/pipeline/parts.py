"""The pieces of a run that its settings make, each made once: checked when the run starts
(a bad price table, an unset key, a seed too long for the window: one line, before anything
is written) and then handed to the run as they are, never built again.
"""

from __future__ import annotations

from dataclasses import dataclass

from evolve.llm import LLMConfig
from evolve.llm.pricing import PriceTable
from evolve.pipeline.config import RunConfig
from evolve.pipeline.endpoints import llm_config
from evolve.problem.load import Problem
from evolve.search.prompts import PromptBuilder
from evolve.settings.errors import UsageError


@dataclass(frozen=True)
class RunParts:
    prices: PriceTable
    llm: LLMConfig  # with each model's key, read from config.yaml and the environment
    prompts: PromptBuilder  # the profile's window and style


def load_prices(cfg: RunConfig) -> PriceTable:
    """The run's price table (--prices over the built-in one); a bad file is one line."""
    try:
        return PriceTable.load(cfg.prices_file)
    except ValueError as e:
        raise UsageError(str(e)) from None


def parts_for(
    cfg: RunConfig,
    problem: Problem,
    prices: PriceTable | None = None,
    prompts: PromptBuilder | None = None,
) -> RunParts:
    """The run's parts; `prices` and `prompts` where the settings' check made them already."""
    return RunParts(
        prices if prices is not None else load_prices(cfg),
        llm_config(cfg, problem),
        prompts if prompts is not None else PromptBuilder.for_config(problem, cfg),
    )
