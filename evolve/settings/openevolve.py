"""The schema of an OpenEvolve-format folder's config.yaml.

Every key OpenEvolve's own Config knows (openevolve/config.py, and its
configs/default_config.yaml) is accepted, so a real config runs unchanged; the ones
evolve uses are typed and range-checked, the others are listed in `ignored`. Anything
else is a typo and fails with a suggestion (OpenEvolve itself silently drops unknown
top-level keys, which is how `max_iteration: 500` runs for 10000 iterations).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, field_validator

from evolve.settings.errors import Section
from evolve.settings.urls import check_url

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]

# Per-model keys of OpenEvolve's LLMModelConfig; the llm section takes them as shared values.
_MODEL_KEYS = frozenset(
    {
        "api_base",
        "api_key",
        "api_type",
        "init_client",
        "max_tokens",
        "random_seed",
        "reasoning_effort",
        "retries",
        "retry_delay",
        "system_message",
        "temperature",
        "timeout",
        "top_p",
    }
)


class ModelEntry(Section):
    ignored = _MODEL_KEYS
    name: str
    weight: PositiveFloat = 1.0


class LLMSection(Section):
    ignored = (_MODEL_KEYS - {"api_base", "temperature", "max_tokens"}) | {
        "evaluator_models",
        "name",
        "weight",
    }
    models: list[ModelEntry] | None = None
    api_base: str | None = None
    temperature: Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)] | None = None
    max_tokens: PositiveInt | None = None
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

    @field_validator("api_base")
    @classmethod
    def _api_base_is_a_url(cls, value: str | None) -> str | None:
        problem = None if value is None else check_url(value)
        if problem:
            raise ValueError(problem)
        return value

    def model_list(self) -> tuple[tuple[str, float], ...]:
        """`models`, else OpenEvolve's older primary/secondary_model keys (same weights as
        OpenEvolve: primary 1.0, secondary 0.2, a secondary of weight 0 left out)."""
        if self.models:
            return tuple((m.name, m.weight) for m in self.models)
        out = []
        if self.primary_model:
            out.append((self.primary_model, self.primary_model_weight or 1.0))
        w = self.secondary_model_weight
        if self.secondary_model and (w is None or w > 0):
            out.append((self.secondary_model, 0.2 if w is None else w))
        return tuple(out)


class PromptSection(Section):
    ignored = frozenset(
        {
            "template_dir",
            "evaluator_system_message",
            "num_top_programs",
            "num_diverse_programs",
            "use_template_stochasticity",
            "template_variations",
            "use_meta_prompting",
            "meta_prompt_weight",
            "include_artifacts",
            "max_artifact_bytes",
            "artifact_security_filter",
            "suggest_simplification_after_chars",
            "include_changes_under_chars",
            "concise_implementation_max_lines",
            "comprehensive_implementation_min_lines",
            "code_length_threshold",
        }
    )
    system_message: str | None = None


class DatabaseSection(Section):
    ignored = frozenset(
        {
            "db_path",
            "in_memory",
            "log_prompts",
            "archive_size",
            "programs_per_island",
            "elite_selection_ratio",
            "exploration_ratio",
            "exploitation_ratio",
            "diversity_metric",
            "diversity_reference_size",
            "migration_interval",
            "migration_rate",
            "random_seed",
            "artifacts_base_path",
            "artifact_size_threshold",
            "cleanup_old_artifacts",
            "artifact_retention_days",
            "novelty_llm",
            "embedding_model",
            "similarity_threshold",
        }
    )
    num_islands: PositiveInt | None = None
    population_size: PositiveInt | None = None
    feature_dimensions: list[str] | None = None
    feature_bins: Any = None  # an integer, or a mapping dimension -> integer

    @field_validator("feature_bins")
    @classmethod
    def _bins(cls, value: Any) -> Any:
        def count(v: Any) -> bool:
            return isinstance(v, int) and not isinstance(v, bool) and v > 0

        if value is None or count(value):
            return value
        if isinstance(value, dict) and all(count(v) for v in value.values()):
            return value
        raise ValueError("expected an integer > 0, or a mapping of dimension to an integer > 0")


class EvaluatorSection(Section):
    ignored = frozenset(
        {
            "max_retries",
            "memory_limit_mb",
            "cpu_limit",
            "parallel_evaluations",
            "distributed",
            "use_llm_feedback",
            "llm_feedback_weight",
            "enable_artifacts",
            "max_artifact_storage",
        }
    )
    timeout: PositiveFloat | None = None
    cascade_evaluation: bool = True
    cascade_thresholds: list[Annotated[float, Field(allow_inf_nan=False)]] | None = None


class EvolutionTraceSection(Section):
    ignored = frozenset(
        {
            "enabled",
            "format",
            "include_code",
            "include_prompts",
            "output_path",
            "buffer_size",
            "compress",
        }
    )


class HierarchicalSection(Section):
    ignored = frozenset(
        {
            "enabled",
            "tier0_models",
            "tier1_models",
            "tier2_models",
            "tier3_models",
            "l2_plateau_iterations",
            "l3_plateau_iterations",
            "l4_plateau_iterations",
            "l5_plateau_iterations",
            "min_improvement_threshold",
            "enable_insight_extraction",
            "insight_extraction_interval",
            "use_llm_for_insights",
            "context_max_tokens",
            "recent_weight",
            "local_weight",
            "success_weight",
            "emg_enabled",
            "emg_save_path",
            "exploration_phase_threshold",
            "crisis_exhausted_layers",
        }
    )


class OpenEvolveConfig(Section):
    ignored = frozenset(
        {
            "checkpoint_interval",
            "log_level",
            "log_dir",
            "random_seed",
            "language",
            "file_suffix",
            "allow_full_rewrites",
            "early_stopping_patience",
            "convergence_threshold",
            "early_stopping_metric",
        }
    )
    max_iterations: Annotated[int, Field(ge=0)] | None = None
    diff_based_evolution: bool | None = None
    max_code_length: PositiveInt | None = None
    llm: LLMSection = LLMSection()
    prompt: PromptSection = PromptSection()
    database: DatabaseSection = DatabaseSection()
    evaluator: EvaluatorSection = EvaluatorSection()
    evolution_trace: EvolutionTraceSection = EvolutionTraceSection()
    hierarchical: HierarchicalSection = HierarchicalSection()
