"""What evolve does with each key of OpenEvolve 0.4.1's config.yaml: how an honoured key
is used, or why an ignored one is not.

The schema (evolve/settings/openevolve.py) takes these tables as its `uses` and
`ignored`; `evolve check` and `evolve run` show them for the keys a file sets, so a
user of OpenEvolve learns what changes here instead of finding out from the results.
tests/fixtures/openevolve_0_4_keys.txt lists OpenEvolve 0.4.1's keys; a test holds every
one of them to a line here.
"""

from __future__ import annotations

from evolve.settings.flags import SEARCH_TABLE

# The setting (evolve/settings/flags.py, a flag of `evolve run`) each honoured key sets, by
# its dotted path: the key's type and range are the flag's (tests/test_settings_model.py),
# and its line in *_USES names the flag.
SETTING_OF = {
    "max_iterations": "iterations",
    "random_seed": "seed",
    "llm.temperature": "temperature",
    "llm.max_tokens": "max_tokens",
    "llm.timeout": "llm_timeout",
    "llm.retries": "llm_retries",
    "llm.retry_delay": "llm_backoff",
    "database.num_islands": "islands",
    "database.migration_interval": "migration_interval",
    "database.random_seed": "seed",
    "evaluator.timeout": "timeout",
    "evaluator.memory_limit_mb": "memory_mb",
    "evaluator.parallel_evaluations": "parallel",
}

NO_EARLY_STOP = "no early stopping: bound a run with --iterations, --time-limit or --budget-usd"
ONE_VALUE = "evolve uses one value for every model: set llm.{key} instead"
NO_LLM_FEEDBACK = "LLM feedback on programs (evaluator.use_llm_feedback) is not supported"
NO_CLI_PROVIDER = "for OpenEvolve's {tool} provider; evolve calls OpenAI-compatible endpoints"
ARCHIVE = "evolve keeps every run in its SQLite archive (--runs-dir)"
ARTIFACTS = "an evaluation's artifacts are stored with its program in the archive"
PROGRAM_LABELS = "OpenEvolve's length labels in prompts; evolve's prompts do not label programs"
CHANGES = "evolve shows programs as their code, never as change descriptions"
SELECTION = "evolve's parent selection is fixed: best, random or fitness-weighted elites"
NO_EMBEDDINGS = "evolve has no embedding-based novelty filter"
TRACE = "evolve's archive (--runs-dir) holds every program, prompt and reply; see `evolve archive`"

TOP_USES = {
    "language": "the seed's language: its comment syntax for EVOLVE-BLOCK markers, the tools "
    "the sandbox must offer (rust: cargo, rustc; cpp: g++); Python checks only for Python",
    "file_suffix": "the seed's default name (initial_program + file_suffix) and its language",
    "max_iterations": "total iterations (--iterations)",
    "random_seed": "seed for parent selection and sampling (--seed); wins over database.random_seed",
    "diff_based_evolution": "edit format: true asks for diffs, false for whole programs (--edit-format)",
    "max_code_length": "largest candidate in bytes (UTF-8); a larger one is recorded invalid",
    "enforce_evolve_blocks": "true is what evolve always does: the code outside a seed's "
    "EVOLVE-BLOCKs stays fixed (false, OpenEvolve's default, is not followed there); a seed "
    "without markers evolves as a whole file either way, as in OpenEvolve 0.4.1",
}
TOP_IGNORED = {
    "checkpoint_interval": "every candidate is archived as it finishes; `evolve resume` continues a run",
    "checkpoint_on_improvement": "every candidate, a new best too, is archived as it finishes",
    "logger_prefix": "evolve prints one line per iteration (--no-progress) or a live display",
    "full_rewrite_probability": "one edit format per run (--edit-format; diff_based_evolution "
    "sets it): no random mix of diffs and full rewrites",
    "log_level": "evolve prints one line per iteration (--no-progress) or a live display",
    "log_dir": "a run's record lives in its archive (--runs-dir)",
    "diff_pattern": "evolve reads its own SEARCH/REPLACE diff format",
    "early_stopping_patience": NO_EARLY_STOP,
    "convergence_threshold": NO_EARLY_STOP,
    "early_stopping_metric": NO_EARLY_STOP,
    "max_tasks_per_child": "every evaluation runs in a fresh sandboxed process",
    # not OpenEvolve 0.4's (it drops unknown keys), but in configs written for other versions
    "allow_full_rewrites": "not an OpenEvolve 0.4 key; diff_based_evolution sets the edit format",
    "hierarchical": "not an OpenEvolve 0.4 section; evolve has no hierarchical model tiers",
}

API_KEY = (
    "API key; null: $OPENAI_API_KEY, '${VAR}': that variable; "
    "sent only to the endpoint it is configured with, never stored in the archive"
)
PROVIDER = (
    "'openai' or null for `evolve run`, which calls OpenAI-compatible endpoints; another "
    "(claude_code, ...) is refused by run (give --api-base) and unused by eval and check"
)

LLM_USES = {
    "api_base": "endpoint of every model without its own api_base (--api-base)",
    "api_key": API_KEY + " (for models without their own api_key)",
    "provider": PROVIDER,
    "temperature": "sampling temperature (--temperature)",
    "max_tokens": "max tokens per reply (--max-tokens)",
    "timeout": "per-request timeout in seconds (--llm-timeout)",
    "retries": "retries of a failed request (--llm-retries)",
    "retry_delay": "first retry delay in seconds, doubled per retry with jitter (--llm-backoff)",
    "models": "the models sampled, by weight (--model)",
    "primary_model": "a model when llm.models is absent (weight primary_model_weight, else 1.0)",
    "primary_model_weight": "the primary model's weight",
    "secondary_model": "a second model when llm.models is absent (weight secondary_model_weight, else 0.2)",
    "secondary_model_weight": "the secondary model's weight (0 leaves it out)",
}
_SHARED_IGNORED = {
    "init_client": "a Python callable, which YAML cannot give",
    "system_message": "the system prompt comes from prompt.system_message",
    "random_seed": "each request's seed derives from the run's seed (random_seed, --seed)",
    "reasoning_effort": "not sent: evolve's requests carry temperature, max_tokens and seed only",
    "max_budget_usd": NO_CLI_PROVIDER.format(tool="Claude Code CLI") + "; see --budget-usd",
    "max_ai_credits": NO_CLI_PROVIDER.format(tool="GitHub Copilot CLI"),
    "allow_all_tools": NO_CLI_PROVIDER.format(tool="GitHub Copilot CLI"),
    "manual_mode": "no human-in-the-loop mode: replies come from the endpoint",
    "_manual_queue_dir": "internal to OpenEvolve's manual mode",
    # not OpenEvolve 0.4's, but in configs written for other versions
    "api_type": "not an OpenEvolve 0.4 key; evolve calls OpenAI-compatible endpoints",
}
LLM_IGNORED = {
    **_SHARED_IGNORED,
    "name": "a model's name goes in llm.models[*].name",
    "weight": "a model's weight goes in llm.models[*].weight",
    "top_p": "not sent: the endpoint's default top_p applies",
    "evaluator_models": NO_LLM_FEEDBACK,
}
MODEL_USES = {
    "name": "the model's name in requests",
    "weight": "how often the model is sampled, relative to the others",
    "api_base": "this model's endpoint (else llm.api_base)",
    "api_key": API_KEY + " (else llm.api_key)",
    "provider": PROVIDER,
}
MODEL_IGNORED = {
    **_SHARED_IGNORED,
    **{
        k: ONE_VALUE.format(key=k)
        for k in ("temperature", "max_tokens", "timeout", "retries", "retry_delay")
    },
    "top_p": "not sent: the endpoint's default top_p applies",
}

PROMPT_USES = {"system_message": "the problem's domain notes in every prompt"}
PROMPT_IGNORED = {
    "island_system_messages": "every island's prompts share prompt.system_message",
    "template_dir": "OpenEvolve's templates do not fit evolve's; put evolve templates in prompts/",
    "evaluator_system_message": NO_LLM_FEEDBACK,
    "programs_as_changes_description": CHANGES,
    "system_message_changes_description": CHANGES,
    "initial_changes_description": CHANGES,
    "num_top_programs": "evolve shows up to 3 inspirations: the island's best and one diverse pick",
    "num_diverse_programs": "evolve shows up to 3 inspirations: the island's best and one diverse pick",
    "use_template_stochasticity": "evolve's prompts are fixed templates (a folder may override them in prompts/)",
    "template_variations": "evolve's prompts are fixed templates (a folder may override them in prompts/)",
    "use_meta_prompting": "not implemented in OpenEvolve either",
    "meta_prompt_weight": "not implemented in OpenEvolve either",
    "include_artifacts": "evolve always shows the parent's artifacts, cut to fit the prompt",
    "max_artifact_bytes": "artifacts are cut to fit the model's context window",
    "artifact_security_filter": "not applied: artifacts reach the prompt as the evaluator wrote them, cut to fit",
    "suggest_simplification_after_chars": PROGRAM_LABELS,
    "include_changes_under_chars": PROGRAM_LABELS,
    "concise_implementation_max_lines": PROGRAM_LABELS,
    "comprehensive_implementation_min_lines": PROGRAM_LABELS,
    "code_length_threshold": PROGRAM_LABELS,
    "diff_summary_max_line_len": "previous attempts are shown by their outcome, not as diffs",
    "diff_summary_max_lines": "previous attempts are shown by their outcome, not as diffs",
}

DATABASE_USES = {
    "num_islands": "number of islands (--islands)",
    "feature_dimensions": "MAP-Elites dimensions (complexity is evolve's code_length)",
    "feature_bins": "bins per dimension (a mapping per dimension: its largest value for all)",
    "migration_interval": "iterations between ring migrations (--migration-interval)",
    "random_seed": "the run's seed when the top-level random_seed is absent (--seed)",
}
DATABASE_IGNORED = {
    "db_path": ARCHIVE,
    "island_initial_programs": "every island starts from the one seed program (--initial-program)",
    "in_memory": ARCHIVE,
    "log_prompts": "evolve always archives every prompt and reply",
    "population_size": "each island keeps one elite per MAP-Elites cell; there is no other cap",
    "archive_size": "each island keeps one elite per MAP-Elites cell; there is no other cap",
    "elite_selection_ratio": SELECTION,
    "exploration_ratio": SELECTION,
    "exploitation_ratio": SELECTION,
    "diversity_metric": "evolve's diversity is the edit distance to the seed program",
    "diversity_reference_size": "evolve's diversity is the edit distance to the seed program",
    "migration_rate": "each migration moves every island's best program to the next island",
    "artifacts_base_path": ARTIFACTS,
    "artifact_size_threshold": ARTIFACTS,
    "cleanup_old_artifacts": ARTIFACTS,
    "artifact_retention_days": ARTIFACTS,
    "max_snapshot_artifacts": ARTIFACTS,
    "novelty_llm": NO_EMBEDDINGS,
    "embedding_model": NO_EMBEDDINGS,
    "embedding_api_base": NO_EMBEDDINGS,
    "similarity_threshold": NO_EMBEDDINGS,
}

EVALUATOR_USES = {
    "timeout": "wall-clock limit of one evaluation, seconds (--timeout; default 300 as OpenEvolve)",
    "max_retries": "retries of an evaluation that fails (default 3 as OpenEvolve)",
    "memory_limit_mb": "memory limit of one evaluation (--memory-mb); OpenEvolve sets none, "
    "evolve's default for OpenEvolve folders is 4096 MB",
    "cascade_evaluation": "run evaluate_stage1/2/3 as a cascade when the evaluator defines them",
    "cascade_thresholds": "the score each stage must reach to go on",
    "parallel_evaluations": "evaluations in flight (--parallel)",
    "evaluator_args": "keyword arguments of every evaluate() call, as OpenEvolve 0.4.1 passes "
    "them (not the evaluate_stageN functions)",
}
EVALUATOR_IGNORED = {
    "cpu_limit": "not limited on its own: an evaluation's CPU time is bounded by its timeout",
    "distributed": "not implemented in OpenEvolve either",
    "use_llm_feedback": NO_LLM_FEEDBACK,
    "llm_feedback_weight": NO_LLM_FEEDBACK,
    "enable_artifacts": "evolve always keeps an evaluation's artifacts",
    "max_artifact_storage": "the sandbox cuts each artifact to a fixed size",
}

TRACE_IGNORED = dict.fromkeys(
    (
        "enabled",
        "format",
        "include_code",
        "include_prompts",
        "output_path",
        "buffer_size",
        "compress",
        "include_failures",
    ),
    TRACE,
)

# `evolve:` is evolve's own section (OpenEvolve drops unknown top-level keys)
EVOLVE_USES = {
    "tools": "programs the evaluator runs (cargo, g++), which the sandbox must offer; "
    "default: those of `language`",
    "env": "environment variables for the evaluator: NAME (from this environment) or NAME=VALUE (--env)",
    "initial_program": "the seed program, relative to the folder (--initial-program)",
    "search": f"how the search spends its calls: {', '.join(SEARCH_TABLE)} (the flags of those names)",
}
