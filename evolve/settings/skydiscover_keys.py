"""What evolve does with the keys SkyDiscover's config.yaml adds to OpenEvolve's.

SkyDiscover (its skydiscover/config.py, March 2026) reads an OpenEvolve-like config.yaml
with keys of its own. The schema (evolve/settings/openevolve.py) accepts them in every
config.yaml, so a SkyDiscover folder and an OpenEvolve folder carrying them run
unchanged; evolve/problem/skydiscover_keys.py applies the honoured ones.
"""

from __future__ import annotations

DASHBOARD = "SkyDiscover's live dashboard: evolve has `evolve ui` and its archive"
HUMAN = "evolve takes no human feedback file during a run"
AGENT_LIMITS = "the agent proposer's limits are --agent-* flags"

TOP_USES = {
    "diff_based_generation": "edit format: true asks for diffs, false for whole programs "
    "(--edit-format); SkyDiscover's default is true",
    "max_solution_length": "largest candidate in bytes (UTF-8), SkyDiscover's 60000 by "
    "default in a SkyDiscover folder; a larger one is recorded invalid",
}
TOP_IGNORED = {
    "monitor": DASHBOARD,
    "human_feedback_enabled": HUMAN,
    "human_feedback_file": HUMAN,
    "human_feedback_mode": HUMAN,
    "context_builder": "evolve builds its prompts itself (--prompt-style)",
    "benchmark": "evolve loads a problem from its folder, never from a benchmark resolver",
    "max_parallel_iterations": "evaluations in flight are --parallel",
    "alphaevolve": "evolve has no AlphaEvolve backend",
    "system_prompt_override": "the domain notes are prompt.system_message",
}
SEARCH_USES = {
    "type": "mapped to evolve's nearest search (its MAP-Elites islands), or warned about",
}
SEARCH_IGNORED = dict.fromkeys(
    ("database", "num_context_programs", "output_dir", "switch_interval", "share_llm"),
    "settings of SkyDiscover's own search algorithms",
)
AGENTIC_USES = {"enabled": "true: the agent proposer (--proposer agent)"}
AGENTIC_IGNORED = dict.fromkeys(
    (
        "codebase_root",
        "max_steps",
        "per_step_timeout",
        "overall_timeout",
        "max_context_chars",
        "max_file_chars",
        "max_search_results",
        "max_files_read",
        "regex_timeout",
        "max_regex_length",
        "repo_map_max_depth",
        "allowed_extensions",
        "excluded_dirs",
    ),
    AGENT_LIMITS,
)
EVALUATOR_IGNORED = {
    "evaluation_file": "the evaluator is the folder's evaluator.py or evaluator/",
    "is_image_mode": "candidates are programs, never images",
    "inject_evaluator_context": "evolve never shows the evaluator's code to the model",
    "llm_as_judge": "evolve has no LLM judge: the evaluator alone scores",
}

# `evolve check`'s words for evaluator keys whose defaults are SkyDiscover's in its folders
# (skydiscover/config.py EvaluatorConfig @59643ef: timeout 360, max_retries 3, no memory limit)
EVALUATOR_USES_IN_FOLDERS = {
    "evaluator.timeout": "wall-clock limit of one evaluation, seconds "
    "(--timeout; default 360 as SkyDiscover)",
    "evaluator.max_retries": "retries of an evaluation that fails (default 3 as SkyDiscover)",
    "evaluator.memory_limit_mb": "memory limit of one evaluation (--memory-mb); SkyDiscover "
    "sets none, evolve's default for SkyDiscover folders is 4096 MB",
}
