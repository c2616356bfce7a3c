"""The settings a user gives `evolve run`, `eval` and `check`: one model, two front ends.

A field is a flag of the same name (`max_calls` is `--max-calls`) and a keyword argument of
evolve.run / evaluate / check (evolve/pipeline/api.py). Its default, its range and its help text
live here only: evolve/cli/parser.py builds the flags from these fields (in GROUPS), RunConfig
(evolve/pipeline/config.py) takes its defaults and its range checks from them, problem.toml's
[search] table is made of those in SEARCH_TABLE (evolve/settings/search.py), and the profiles'
defaults are theirs. A new knob is a field here (its name in GROUPS, and in SEARCH_TABLE if a
folder may set it) and a RunConfig field; tests/test_settings_model.py fails where a flag, a
folder's key, a profile and this model disagree. A setting given, even with its default
value, wins over the problem folder's settings and the model's profile (`model_fields_set`).
"""

from __future__ import annotations

import datetime as dt
import difflib
import os
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field

from evolve.settings.errors import Section, UsageError, validate
from evolve.settings.flag_types import (
    DataSeed,
    EnvList,
    EnvNames,
    Models,
    NodeSandbox,
    PathText,
    Proposer,
    Sandbox,
    Seconds,
    Temperature,
    Temperatures,
)


def _flag(default: Any, help: str, metavar: str | None = None, **constraints: Any) -> Any:
    """A field that is also a flag: `help` may show the default as {default}."""
    extra: Any = {"metavar": metavar} if metavar else None
    return Field(default, description=help, json_schema_extra=extra, **constraints)


class Settings(Section):
    # How the problem's programs are evaluated, over its folder's settings (run, eval, check;
    # `run` stores them with the run so `resume` evaluates the same way)
    env: EnvList = _flag(
        [],
        "environment variable for the evaluator (NAME alone: its value here); repeatable",
        "NAME[=VALUE]",
    )
    initial_program: PathText = _flag(
        None, "the seed program (default: the folder's entry, or initial_program.py)", "PATH"
    )
    timeout: Seconds | None = _flag(
        None, "wall-clock limit per evaluation (default: the problem's)", "SEC"
    )
    memory_mb: Annotated[int, Field(ge=1)] | None = _flag(
        None, "memory limit per evaluation (default: the problem's)", "MB"
    )
    config: PathText = _flag(
        None,
        "an OpenEvolve folder's config file to read instead of config.yaml (a file of the "
        "folder, such as config_phase_1.yaml, or any path)",
        "FILE",
    )
    strict_config: bool = _flag(
        False,
        "refuse an OpenEvolve config.yaml with keys OpenEvolve does not know (default: warn "
        "once per key and ignore it, as OpenEvolve does)",
    )
    # Where candidates run (run, eval, check)
    sandbox: Sandbox = _flag(
        "auto",
        "where candidates run (default {default}: docker if its engine and image are there, "
        "else local; ray: tasks on a Ray cluster)",
    )
    ray_address: str | None = _flag(
        None,
        "with --sandbox ray: the cluster's head (`ray start --head` prints it; "
        "default: a private Ray instance on this machine, for this command only)",
        "HOST:PORT",
    )
    ray_node_sandbox: NodeSandbox = _flag(
        "auto",
        "with --sandbox ray: how each node runs a candidate (default {default}: docker where "
        "the node has its engine and image, else local)",
    )
    allow_unisolated_ray_nodes: bool = _flag(
        False,
        "with --sandbox ray: evaluate on nodes whose local sandbox has no namespaces "
        "(no bubblewrap, or EVOLVE_LOCAL_ISOLATION=off), where a candidate reaches the node's "
        "network and Ray cluster (default: refuse)",
    )
    require_isolation: bool = _flag(
        False,
        "refuse to run if the local sandbox lost any isolation guarantee here (default: warn)",
    )
    data_seed: DataSeed = _flag(
        None,
        "the private seed of the generated workloads (default: a fresh secret one per "
        "run, kept in the archive; never shown to the model or the candidates)",
        "N",
    )
    # The run (run only)
    iterations: Annotated[int, Field(ge=0)] = _flag(
        50, "total iterations (default: problem's, else {default})"
    )
    model: Models = _flag(
        None,
        "model to sample from; repeat for an ensemble with weights (default: the problem's, "
        "else gpt-4.1-mini where OPENAI_API_KEY or an endpoint is set, else the local model "
        "that comes with the install)",
        "NAME[:WEIGHT]",
    )
    api_base: str | None = _flag(
        None, "OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)", "URL"
    )
    parallel: Annotated[int, Field(ge=1)] = _flag(2, "evaluations in flight (default {default})")
    llm_parallel: Annotated[int, Field(ge=1)] = _flag(
        4, "LLM requests in flight (default: the model's profile, else {default})"
    )
    seed: int = _flag(0, "seed for parent selection and sampling (default {default})")
    run_id: str | None = _flag(None, "name of the run (default: problem-date-random)", "ID")
    budget_usd: Seconds | None = _flag(None, "stop once LLM spend reaches X dollars", "X")
    time_limit: Seconds | None = _flag(None, "stop dispatching after SEC seconds", "SEC")
    islands: Annotated[int, Field(ge=1)] = _flag(
        3, "number of islands (default: problem's, else {default})"
    )
    migration_interval: Annotated[int, Field(ge=1)] = _flag(
        20, "iterations between migrations (default {default})"
    )
    edit_format: Literal["diff", "block", "full"] = _flag("block", "what the model is asked for")
    crossover_rate: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] = _flag(
        0.1, "share of crossover prompts, within [0, 1] (default {default})"
    )
    temperature: Temperature = _flag(
        0.8,
        "sampling temperature, within [0, 2] (default: problem's, else the model's, else {default})",
    )
    max_tokens: Annotated[int, Field(ge=1)] = _flag(
        4096, "max tokens per reply (default: problem's, else the model's, else {default})"
    )
    llm_timeout: Seconds = _flag(
        120.0, "per-request timeout (default: the model's profile, else {default})", "SEC"
    )
    llm_retries: Annotated[int, Field(ge=0)] = _flag(
        4, "retries on 429/5xx/timeouts/malformed answers (default {default})"
    )
    llm_backoff: Annotated[float, Field(ge=0, allow_inf_nan=False)] = _flag(  # 0, as retry_delay
        1.0, "first retry delay; doubles per retry, with jitter (default {default})", "SEC"
    )
    llm_max_reply_kb: Annotated[int, Field(ge=1, le=1024 * 1024)] = _flag(
        256,
        "an answer longer than KB kilobytes is a failed call, retried and never stored "
        "(default {default})",
        "KB",
    )
    # How the search spends its calls (evolve/search/)
    max_calls: Annotated[int, Field(ge=1)] | None = _flag(
        None,
        "stop once N LLM calls have been answered (resamples, repairs and meta-notes count)",
        "N",
    )
    max_resamples: Annotated[int, Field(ge=0)] = _flag(
        2,
        "ask again, up to N times, when a reply repeats a program of the run (default {default})",
        "N",
    )
    repair_attempts: Annotated[int, Field(ge=0)] = _flag(
        1,
        "calls to fix a child that failed with a syntax, runtime or output error "
        "(default {default})",
        "N",
    )
    temperatures: Temperatures = _flag(
        (), "draw each call's temperature from these (default: --temperature alone)", "T,T,..."
    )
    prompt_style: Literal["full", "short", "funsearch"] = _flag(
        "full",
        "full prompts, short ones for small models, or FunSearch's (the two best "
        "versions as _v0, _v1; the model writes _v2) (default: the model's profile)",
    )
    meta_interval: Annotated[int, Field(ge=0)] = _flag(
        0,
        "every N calls, one call summarises what worked into notes for later prompts "
        "(0: off; default: the model's profile)",
        "N",
    )
    stagnation: Annotated[int, Field(ge=0)] = _flag(
        0,
        "after K iterations without a new best: a burst on the escalation model and the "
        "worst island restarted from the best (0: off; default: the model's profile)",
        "K",
    )
    burst_calls: Annotated[int, Field(ge=1)] = _flag(
        4, "calls of a stagnation burst (default {default})", "N"
    )
    escalation_model: str | None = _flag(
        None,
        "the model of a stagnation burst, on the run's endpoint (default: the lowest-weighted"
        " --model)",
        "NAME",
    )
    tune_evals: Annotated[int, Field(ge=0)] = _flag(
        12,
        "evaluate up to N copies of each valid model-written program that scores unlike its "
        "parent, one of its numbers halved or doubled, without an LLM call; a better copy is "
        "tuned in turn (0: off; default {default})",
        "N",
    )
    proposer: Proposer = _flag(
        "single",
        "how a candidate is proposed: one call (single), a multi-turn agent that reads, "
        "edits and evaluates a copy of the parent on train before it submits (agent), or a "
        "coding agent's command line run confined in a workspace of the parent's files "
        "(command:CMD, `{task}` in CMD: the task's text) (default {default})",
        "single|agent|command:CMD",
    )
    agent_turns: Annotated[int, Field(ge=1, le=100)] = _flag(
        6, "--proposer agent: model turns per iteration, at most (default {default})", "N"
    )
    agent_evals: Annotated[int, Field(ge=0, le=100)] = _flag(
        2,
        "--proposer agent: train evaluations an agent may run before it submits "
        "(default {default})",
        "N",
    )
    agent_tokens: Annotated[int, Field(ge=1)] | None = _flag(
        None,
        "--proposer agent: prompt + completion tokens per iteration, summed over its turns "
        "(the endpoint's usage, estimated where it gives none); a turn that would pass it is "
        "not asked and the working copy is handed in (default: no cap)",
        "N",
    )
    agent_protocol: Literal["auto", "text", "native"] = _flag(
        "auto",
        "--proposer agent: tools as a plain-text ACTION block in the reply (any endpoint, "
        "small models), as native tool calls (endpoints that take `tools`), or auto: native "
        "where the run's first answers show the endpoint takes them, else text "
        "(default {default})",
    )
    agent_timeout: Seconds = _flag(
        1800.0, "--proposer command: seconds a command may run per iteration (default {default})"
    )
    agent_memory_mb: Annotated[int, Field(ge=64)] = _flag(
        4096,
        "--proposer command: memory the command and its processes may use together, its "
        "/tmp included; past it the kernel kills it and the iteration says so (default {default})",
        "MB",
    )
    agent_procs: Annotated[int, Field(ge=4, le=100_000)] = _flag(
        512, "--proposer command: processes the command may run at once (default {default})", "N"
    )
    agent_network: bool = _flag(
        False, "--proposer command: let the command reach the network (a hosted agent's API)"
    )
    agent_env: EnvNames = _flag(
        (),
        "--proposer command: an environment variable passed to the command with its value "
        "here (an API key); repeatable; no other variable is passed",
        "NAME",
    )
    prices: PathText = _flag(
        None, "JSON/TOML price table: model -> {input, output} $/1M tokens", "FILE"
    )
    runs_dir: PathText = _flag(None, "archive location (default ./runs or $EVOLVE_RUNS_DIR)", "DIR")

    def given(self) -> dict[str, Any]:
        """The settings given (a flag on the command line, a keyword argument), None aside."""
        return {
            k: getattr(self, k)
            for k in sorted(self.model_fields_set)
            if getattr(self, k) is not None
        }


EVALUATION = ("env", "initial_program", "timeout", "memory_mb", "config", "strict_config")
SANDBOX = ("sandbox", "ray_address", "ray_node_sandbox", "allow_unisolated_ray_nodes")
CHECK = (*EVALUATION, *SANDBOX, "require_isolation")
EVALUATE = (*CHECK, "data_seed")
RUN = tuple(Settings.model_fields)  # every setting
# Every setting in one group, as `evolve run --help` shows them (evolve/cli/parser.py)
GROUPS: dict[str, tuple[str, ...]] = {
    "model": (
        *("model", "api_base", "temperature", "max_tokens", "llm_parallel", "llm_timeout"),
        *("llm_retries", "llm_backoff", "llm_max_reply_kb", "prices"),
    ),
    "budget (the run stops at the first reached)": (
        *("iterations", "max_calls", "budget_usd", "time_limit"),
    ),
    "search": (
        *("seed", "islands", "migration_interval", "edit_format", "crossover_rate"),
        *("max_resamples", "repair_attempts", "temperatures", "prompt_style", "meta_interval"),
        *("stagnation", "burst_calls", "escalation_model", "tune_evals"),
        *("proposer", "agent_turns", "agent_evals", "agent_tokens", "agent_protocol"),
        *("agent_timeout", "agent_memory_mb", "agent_procs", "agent_network", "agent_env"),
    ),
    "evaluation": (*EVALUATION, "parallel", "data_seed"),
    "sandbox": (*SANDBOX, "require_isolation"),
    "output": ("run_id", "runs_dir"),
}
# The settings a problem folder may set too: problem.toml's [search] table, config.yaml's
# `evolve: search:` (evolve/settings/search.py derives the table from these fields)
SEARCH_TABLE = (
    "max_calls",
    "max_resamples",
    "repair_attempts",
    "temperatures",
    "prompt_style",
    "meta_interval",
    "stagnation",
    "burst_calls",
    "tune_evals",
)
RESUME = ("iterations", "ray_address", "runs_dir")

# The RunConfig field each setting sets, where the names differ (the stored form keeps its
# names, so that every archive resumes); the evaluation flags are stored by Overrides.
FIELD_OF = {
    "time_limit": "time_limit_s",
    "islands": "num_islands",
    "llm_timeout": "llm_timeout_s",
    "llm_backoff": "llm_backoff_s",
    "prices": "prices_file",
    "model": "models",
    "agent_timeout": "agent_timeout_s",
    "timeout": "eval_timeout_s",
    "memory_mb": "eval_memory_mb",
    "config": "config_file",
}
NOT_STORED = (*EVALUATION, "data_seed", "run_id", "runs_dir")  # the run's row, Overrides


def default(name: str) -> Any:
    """A setting's default (RunConfig's defaults are these)."""
    return Settings.model_fields[name].default


def settings_for(caller: str, names: tuple[str, ...], given: Mapping[str, Any]) -> Settings:
    """`given` as Settings, or UsageError in one line naming the setting: one that `caller`
    does not take (with the closest it does), or a value out of its range."""
    for key in given:
        if key not in names:
            close = difflib.get_close_matches(key, names, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            elsewhere = " (a setting of evolve.run only)" if key in RUN and not close else ""
            raise UsageError(f"{caller}: unknown setting '{key}'{hint}{elsewhere}")
    return validate(Settings, dict(given), caller, "settings")


def check_stored(fields: Mapping[str, Any], who: str) -> None:
    """SettingsError, one line naming the flag (`--meta-interval: expected an integer >= 0`),
    unless every setting among `fields` (a RunConfig's, by its field names) is within the
    Settings field's type and range: a config built in code or read back from an archive
    meets the checks the flags meet, written once, here."""
    values = {s: fields[f] for s, f in _STORED.items() if f in fields}
    validate(Settings, values, who, "flags")


# Each setting by the RunConfig field that holds it; --model and --env are held in other
# forms (ModelSpec, names only), checked where they are made.
_STORED = {s: FIELD_OF.get(s, s) for s in Settings.model_fields if s not in ("model", "env")}


def runs_dir(value: str | os.PathLike | None) -> Path:
    """Where runs live: `value`, else $EVOLVE_RUNS_DIR, else ./runs."""
    return Path(value or os.environ.get("EVOLVE_RUNS_DIR") or "runs")


def new_run_id(problem: str) -> str:
    """A fresh run id: problem-date-random."""
    return f"{problem}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
