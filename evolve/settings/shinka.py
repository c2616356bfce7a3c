"""A ShinkaEvolve folder's config (shinka_small.yaml and the like), read as a report.

ShinkaEvolve builds its runner from a YAML file the example's run_evo.py reads:
`evo_config:` (EvolutionConfig), `db_config:` (DatabaseConfig) and three job counts at the
top level. A few keys have an evolve counterpart and are honoured; every other key is
reported once as ignored, with why, and a key ShinkaEvolve 0.0.7 does not know either gets
a did-you-mean where one is close (at its level, or the same name at another level).
The key lists are the dataclass fields of ShinkaEvolve 0.0.7 (shinka/core/config.py,
shinka/database/dbase.py, shinka/core/async_runner.py)."""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any

EVO_KEYS = (
    "task_sys_msg patch_types patch_type_probs num_generations max_patch_resamples "
    "max_patch_attempts job_type language llm_models llm_dynamic_selection "
    "llm_dynamic_selection_kwargs llm_kwargs meta_rec_interval meta_llm_models "
    "meta_llm_kwargs meta_max_recommendations sample_single_meta_rec embedding_model "
    "init_program_path results_dir max_novelty_attempts code_embed_sim_threshold "
    "novelty_llm_models novelty_llm_kwargs use_text_feedback max_api_costs "
    "inspiration_sort_order enable_controlled_oversubscription proposal_target_mode "
    "proposal_target_min_samples proposal_target_ratio_cap proposal_buffer_max "
    "proposal_target_hard_cap proposal_target_ewma_alpha evolve_prompts prompt_patch_types "
    "prompt_patch_type_probs prompt_evolution_interval prompt_archive_size prompt_llm_models "
    "prompt_llm_kwargs prompt_ucb_exploration_constant prompt_epsilon "
    "prompt_evo_top_k_programs prompt_percentile_recompute_interval"
).split()
DB_KEYS = (
    "db_path num_islands archive_size elite_selection_ratio num_archive_inspirations "
    "num_top_k_inspirations migration_interval migration_rate island_elitism "
    "enforce_island_separation island_selection_strategy enable_dynamic_islands "
    "stagnation_threshold island_spawn_strategy island_spawn_subtree_size "
    "parent_selection_strategy exploitation_alpha exploitation_ratio parent_selection_lambda "
    "num_beams archive_selection_strategy archive_criteria"
).split()
TOP_KEYS = ("max_evaluation_jobs", "max_proposal_jobs", "max_db_workers", "evo_config", "db_config")
SECTIONS = {"evo_config": EVO_KEYS, "db_config": DB_KEYS}

HONOURED = {
    "evo_config.init_program_path": "the seed program",
    "evo_config.num_generations": "iterations (--iterations overrides)",
    "evo_config.task_sys_msg": "domain notes in every prompt",
    "evo_config.language": "the seed's language (its comment markers, the evaluator's tools)",
    "db_config.num_islands": "islands",
    "db_config.migration_interval": "iterations between migrations",
    "max_evaluation_jobs": "evaluations in flight",
}
WHY = {
    "evo_config.llm_models": "models come from --model / --api-base (any OpenAI-compatible endpoint)",
    "evo_config.results_dir": "runs live in the archive under --runs-dir",
    "evo_config.max_api_costs": "use --budget (dollars)",
    "evo_config.use_text_feedback": "text_feedback is always shown to the model, as an artifact",
    "evo_config.patch_types": "evolve's edit-format policy picks diff, full or crossover",
    "evo_config.job_type": "evaluations run in evolve's sandbox (--sandbox)",
}
OTHER = "a ShinkaEvolve setting with no evolve counterpart"


@dataclass(frozen=True)
class ShinkaSettings:
    """What evolve takes from the file, and the lines that report every key it set."""

    seed: str | None = None
    iterations: int | None = None
    domain_notes: str | None = None
    language: str | None = None
    num_islands: int | None = None
    migration_interval: int | None = None
    parallel: int | None = None
    edit_format: str | None = None
    honoured: tuple[tuple[str, str], ...] = ()
    ignored: tuple[tuple[str, str], ...] = ()


def read_settings(raw: Any, name: str) -> ShinkaSettings:
    """The settings of a parsed file named `name`; ValueError: one line naming the key."""
    if not isinstance(raw, dict):
        raise ValueError(f"{name}: expected a mapping of ShinkaEvolve settings at the top")
    evo = _section(raw, "evo_config", name)
    db = _section(raw, "db_config", name)
    honoured: dict[str, str] = {}
    ignored: dict[str, str] = {}
    for key in raw:
        if key not in SECTIONS:
            _classify(str(key), raw, "", honoured, ignored)
    for section, data in (("evo_config", evo), ("db_config", db)):
        for key in data:
            _classify(str(key), data, section + ".", honoured, ignored)
    types = evo.get("patch_types")
    edit = None
    if isinstance(types, list) and len(set(types)) == 1 and types[0] in ("diff", "full"):
        edit = types[0]
        honoured["evo_config.patch_types"] = f"edit format {edit}"
        ignored.pop("evo_config.patch_types", None)
    return ShinkaSettings(
        seed=_typed(evo, "init_program_path", str, name, "evo_config"),
        iterations=_typed(evo, "num_generations", int, name, "evo_config"),
        domain_notes=_typed(evo, "task_sys_msg", str, name, "evo_config"),
        language=_typed(evo, "language", str, name, "evo_config"),
        num_islands=_typed(db, "num_islands", int, name, "db_config"),
        migration_interval=_typed(db, "migration_interval", int, name, "db_config"),
        parallel=_typed(raw, "max_evaluation_jobs", int, name, ""),
        edit_format=edit,
        honoured=tuple(honoured.items()),
        ignored=tuple(ignored.items()),
    )


def _section(raw: dict, key: str, name: str) -> dict:
    value = raw.get(key) or {}
    if not isinstance(value, dict):
        raise ValueError(f"{name}: {key}: expected a mapping, got {type(value).__name__}")
    return value


def _typed(data: dict, key: str, kind: type, name: str, section: str) -> Any:
    value = data.get(key)
    if value is None:
        return None
    if not isinstance(value, kind) or isinstance(value, bool):
        where = f"{section}.{key}" if section else key
        raise ValueError(f"{name}: {where}: expected {kind.__name__}, got {value!r:.80}")
    return value


def _classify(key: str, data: dict, prefix: str, honoured: dict, ignored: dict) -> None:
    dotted = prefix + key
    known = SECTIONS[prefix[:-1]] if prefix else TOP_KEYS
    if dotted in HONOURED and data.get(key) is not None:
        honoured[dotted] = HONOURED[dotted]
    elif key in known:
        ignored[dotted] = WHY.get(dotted, OTHER)
    else:
        ignored[dotted] = "not a ShinkaEvolve 0.0.7 key" + _meant(key, prefix)


def _meant(key: str, prefix: str) -> str:
    """A did-you-mean: the same name in another section, else a close name at this level."""
    for section, keys in SECTIONS.items():
        if key in keys and prefix != section + ".":
            return f" (did you mean '{section}.{key}'?)"
    if key in TOP_KEYS and prefix:
        return f" (did you mean top-level '{key}'?)"
    known = SECTIONS[prefix[:-1]] if prefix else TOP_KEYS
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    return f" (did you mean '{prefix}{close[0]}'?)" if close else ""
