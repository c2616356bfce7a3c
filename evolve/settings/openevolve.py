"""The schema of an OpenEvolve-format folder's config.yaml.

Every key OpenEvolve 0.4.1's Config knows (openevolve/config.py) is accepted, so a real
config runs unchanged: the ones evolve honours are typed and range-checked here (how
each is used: `uses`), the others are listed in `ignored` with the reason (both from
evolve/settings/openevolve_keys.py). The schema itself rejects anything else; the loader
(evolve/settings/unknown.py) first takes out the keys no OpenEvolve version knows and
warns about each, with a did-you-mean, as OpenEvolve's non-strict dacite drops them
silently (which is how `max_iteration: 500` runs for 10000 iterations); --strict-config
makes them errors. The top-level `evolve:` section is evolve's own, which OpenEvolve
drops: extra environment variables, the seed's path and the tools its evaluator runs; it
stays strict.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import AfterValidator, Field, field_validator

from evolve.settings import openevolve_keys as keys
from evolve.settings import skydiscover_keys as sky
from evolve.settings.environ import EnvEntry
from evolve.settings.errors import Section
from evolve.settings.search import SearchTable
from evolve.settings.tools import Tool
from evolve.settings.urls import check_url

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
Count = Annotated[int, Field(ge=0)]
Suffix = Annotated[str, Field(pattern=r"^\.[A-Za-z0-9_+-]+$")]  # ".rs"
Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class OESection(Section):
    """A section of config.yaml: `uses` says how each of its fields is used."""

    uses: ClassVar[Mapping[str, str]] = {}


def _url(value: str) -> str:
    problem = check_url(value)
    if problem:
        raise ValueError(problem)
    return value


Url = Annotated[str, AfterValidator(_url)]


class ModelEntry(OESection):
    uses = keys.MODEL_USES
    ignored = keys.MODEL_IGNORED
    name: str
    weight: PositiveFloat = 1.0
    api_base: Url | None = None
    api_key: str | None = None  # null: $OPENAI_API_KEY; "${VAR}": that variable
    provider: str | None = None  # `run` speaks openai only (evolve.pipeline.launch.check_provider)


class LLMSection(OESection):
    uses = keys.LLM_USES
    ignored = keys.LLM_IGNORED
    models: list[ModelEntry] | None = None
    api_base: Url | None = None
    api_key: str | None = None
    provider: str | None = None
    temperature: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] | None = None
    max_tokens: PositiveInt | None = None
    timeout: PositiveFloat | None = None
    retries: Count | None = None
    retry_delay: Seconds | None = None
    primary_model: str | None = None
    primary_model_weight: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    secondary_model: str | None = None
    secondary_model_weight: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None

    @field_validator("models", mode="before")
    @classmethod
    def _models_are_a_list(cls, value: Any) -> Any:
        if isinstance(value, str):  # `models: gpt-4`: never dropped for a default model
            raise ValueError(f"expected a list of models like [{{name: {value}, weight: 1.0}}]")
        return value

    def model_list(self) -> list[ModelEntry]:
        """`models`, else OpenEvolve's older primary/secondary_model keys (same weights as
        OpenEvolve: primary 1.0, secondary 0.2, a secondary of weight 0 left out)."""
        if self.models:
            return list(self.models)
        out = []
        if self.primary_model:
            out.append(ModelEntry(name=self.primary_model, weight=self.primary_model_weight or 1.0))
        w = self.secondary_model_weight
        if self.secondary_model and (w is None or w > 0):
            out.append(ModelEntry(name=self.secondary_model, weight=0.2 if w is None else w))
        return out


class PromptSection(OESection):
    uses = keys.PROMPT_USES
    ignored = keys.PROMPT_IGNORED
    system_message: str | None = None


class DatabaseSection(OESection):
    uses = keys.DATABASE_USES
    ignored = keys.DATABASE_IGNORED
    num_islands: PositiveInt | None = None
    feature_dimensions: list[str] | None = None
    feature_bins: Any = None  # an integer, or a mapping dimension -> integer
    migration_interval: PositiveInt | None = None
    random_seed: int | None = None

    @field_validator("feature_bins")
    @classmethod
    def _bins(cls, value: Any) -> Any:
        def count(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool) and v > 0

        if value is None or count(value):
            return value
        if isinstance(value, dict) and value and all(count(v) for v in value.values()):
            return value
        raise ValueError("expected an integer > 0, or a mapping of dimension to an integer > 0")

    def bins(self) -> int | None:
        """One bin count for every dimension: a per-dimension mapping gives its largest."""
        if isinstance(self.feature_bins, dict):
            return max(self.feature_bins.values())
        return self.feature_bins


class EvaluatorSection(OESection):
    uses = keys.EVALUATOR_USES
    ignored = {**keys.EVALUATOR_IGNORED, **sky.EVALUATOR_IGNORED}
    timeout: PositiveFloat | None = None
    max_retries: Count | None = None
    memory_limit_mb: PositiveInt | None = None
    cascade_evaluation: bool = True
    cascade_thresholds: list[Annotated[float, Field(allow_inf_nan=False)]] | None = None
    parallel_evaluations: PositiveInt | None = None
    evaluator_args: dict[str, Any] | None = None

    @field_validator("evaluator_args")
    @classmethod
    def _json_args(cls, value: Any) -> Any:
        try:  # they reach evaluate() in the sandbox as JSON
            json.dumps(value, allow_nan=False)
        except (TypeError, ValueError):
            raise ValueError("expected plain values (strings, numbers, lists, mappings)") from None
        return value


class EvolutionTraceSection(OESection):
    ignored = keys.TRACE_IGNORED


class EvolveSection(OESection):
    """evolve's own settings for an OpenEvolve folder (OpenEvolve drops this section)."""

    uses = keys.EVOLVE_USES
    env: list[EnvEntry] = []
    initial_program: str | None = None
    search: SearchTable = SearchTable()
    tools: list[Tool] | None = None


class SkySearchSection(OESection):
    """SkyDiscover's `search:` section (OpenEvolve has none)."""

    uses = sky.SEARCH_USES
    ignored = sky.SEARCH_IGNORED
    type: str | None = None


class AgenticSection(OESection):
    """SkyDiscover's `agentic:` section."""

    uses = sky.AGENTIC_USES
    ignored = sky.AGENTIC_IGNORED
    enabled: bool | None = None


class OpenEvolveConfig(OESection):
    uses = {**keys.TOP_USES, **sky.TOP_USES}
    ignored = {**keys.TOP_IGNORED, **sky.TOP_IGNORED}
    max_iterations: Annotated[int, Field(ge=0)] | None = None
    random_seed: int | None = None
    diff_based_evolution: bool | None = None
    max_code_length: PositiveInt | None = None
    enforce_evolve_blocks: bool | None = None
    language: str | None = None
    file_suffix: Suffix | None = None
    llm: LLMSection = LLMSection()
    prompt: PromptSection = PromptSection()
    database: DatabaseSection = DatabaseSection()
    evaluator: EvaluatorSection = EvaluatorSection()
    evolution_trace: EvolutionTraceSection = EvolutionTraceSection()
    evolve: EvolveSection = EvolveSection()
    # SkyDiscover's keys (evolve/settings/skydiscover_keys.py)
    diff_based_generation: bool | None = None
    max_solution_length: PositiveInt | None = None
    search: SkySearchSection = SkySearchSection()
    agentic: AgenticSection = AgenticSection()

    def skydiscover_keys(self) -> list[str]:
        """The SkyDiscover keys this file sets (its cascade defaults then apply)."""
        named = [
            k
            for k in ("diff_based_generation", "max_solution_length")
            if getattr(self, k) is not None
        ]
        named += [k for k in ("search", "agentic") if getattr(self, k).model_fields_set]
        return named


SECTIONS = (
    "llm",
    "prompt",
    "database",
    "evaluator",
    "evolution_trace",
    "evolve",
    "search",
    "agentic",
)
