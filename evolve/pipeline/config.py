"""Run configuration: flags and problem defaults merged into one record.

The merged record is stored with the run, so `resume` needs nothing but the
run id to continue exactly as the run started. API keys are never part of it: a run
reads them from the problem's config.yaml and the environment each time it starts.
A field that is a setting (a flag) takes its default from evolve.settings.flags.Settings,
so each default is written once; evolve.pipeline.launch merges the layers.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace

from evolve.llm import LLMConfig, ModelSpec
from evolve.pipeline.env import names
from evolve.settings.flags import check_stored
from evolve.settings.flags import default as _d
from evolve.settings.overrides import Overrides


@dataclass(frozen=True)
class RunConfig:
    problem_dir: str
    iterations: int = _d("iterations")
    models: tuple[ModelSpec, ...] = (ModelSpec("gpt-4.1-mini"),)
    api_base: str | None = _d("api_base")
    parallel: int = _d("parallel")  # evaluations in flight
    llm_parallel: int = _d("llm_parallel")  # LLM requests in flight
    seed: int = _d("seed")
    budget_usd: float | None = _d("budget_usd")
    time_limit_s: float | None = _d("time_limit")
    sandbox: str = _d("sandbox")  # auto: docker if its engine and image are there, else local
    require_isolation: bool = _d("require_isolation")  # refuse a local sandbox less isolated
    ray_address: str | None = _d("ray_address")  # --sandbox ray: the cluster (None: private)
    ray_node_sandbox: str = _d("ray_node_sandbox")  # --sandbox ray: each node's own sandbox
    allow_unisolated_ray_nodes: bool = _d("allow_unisolated_ray_nodes")
    num_islands: int = _d("islands")
    migration_interval: int = _d("migration_interval")  # finished iterations between migrations
    edit_format: str = _d("edit_format")
    crossover_rate: float = _d("crossover_rate")
    temperature: float = _d("temperature")
    max_tokens: int = _d("max_tokens")
    llm_timeout_s: float = _d("llm_timeout")
    llm_retries: int = _d("llm_retries")
    llm_backoff_s: float = _d("llm_backoff")
    llm_max_reply_kb: int = _d("llm_max_reply_kb")  # a longer answer is a failed call
    prices_file: str | None = _d("prices")
    data_dir: str | None = None
    # From the model's profile (evolve/llm/profiles.py): prompts are packed to fit the window.
    context_window: int | None = None  # tokens; None: no packing
    prompt_style: str = _d("prompt_style")  # full | short | funsearch
    num_inspirations: int = 3  # shown per prompt, at most
    max_attempts: int = 5  # recent attempts shown per prompt, at most
    # The search (evolve/search/): what a call may cost and how clones and failures are met.
    max_calls: int | None = _d("max_calls")  # answered LLM calls after which the run stops
    max_resamples: int = _d("max_resamples")  # a reply repeating a program is asked again
    repair_attempts: int = _d("repair_attempts")  # calls to fix a child that failed
    temperatures: tuple[float, ...] = _d("temperatures")  # drawn per call; () = (temperature,)
    meta_interval: int = _d("meta_interval")  # calls between meta-notes; 0: none
    stagnation: int = _d("stagnation")  # iterations without a new best that start a burst
    burst_calls: int = _d("burst_calls")  # calls of a stagnation burst
    escalation_model: str | None = _d("escalation_model")  # None: the bandit's other pick
    tune_evals: int = _d("tune_evals")  # tuned children per model-written program; 0: none
    # How a candidate is proposed: one call, or an agent's turns (evolve/agent/)
    proposer: str = _d("proposer")  # single | agent
    agent_turns: int = _d("agent_turns")  # model turns per agent iteration
    agent_evals: int = _d("agent_evals")  # train evaluations per agent iteration
    agent_tokens: int | None = _d("agent_tokens")  # tokens per agent iteration; None: no cap
    agent_protocol: str = _d("agent_protocol")  # auto | text | native
    agent_timeout_s: float = _d("agent_timeout")  # --proposer command: seconds per run
    agent_memory_mb: int = _d("agent_memory_mb")  # --proposer command: its cgroup's memory
    agent_procs: int = _d("agent_procs")  # --proposer command: its processes at once
    agent_network: bool = _d("agent_network")  # --proposer command may reach the network
    agent_env: tuple[str, ...] = _d("agent_env")  # --proposer command: variables passed (names)
    # The evaluation's per-run settings (--env, --initial-program, --timeout, --memory-mb),
    # applied over the problem folder's at every start: see evolve.settings.overrides
    eval_env: tuple[str, ...] = ()  # as given: NAME or NAME=VALUE (stored: NAME; env.py)
    initial_program: str | None = None  # absolute path
    eval_timeout_s: float | None = None
    eval_memory_mb: int | None = None
    config_file: str | None = None  # --config, as the absolute path it named
    strict_config: bool = False  # --strict-config
    # why held-out scores are not independent of train (a SkyDiscover evaluate.sh that
    # ignores its mode), for the run page; None: they are
    held_out_note: str | None = None
    extra: dict = field(default_factory=dict)

    def __post_init__(self):
        """The ranges of the settings are Settings' (checked there once, for flags, keyword
        arguments and stored configs alike); what is RunConfig's own is checked here."""
        check_stored({f.name: getattr(self, f.name) for f in fields(self)}, "RunConfig")
        checks = [
            (bool(self.models), "--model: at least one model is needed"),
            (
                self.context_window is None or self.context_window >= 256,
                "--context-window must be >= 256",
            ),
            (
                self.num_inspirations >= 0 and self.max_attempts >= 0,
                "prompt item counts must be >= 0",
            ),
        ]
        for ok, msg in checks:
            if not ok:
                raise ValueError(msg)

    def llm_config(self) -> LLMConfig:
        return LLMConfig(
            models=self.models,
            api_base=self.api_base,
            timeout_s=self.llm_timeout_s,
            max_retries=self.llm_retries,
            backoff_s=self.llm_backoff_s,
            temperature=self.temperature,
            max_reply_bytes=self.llm_max_reply_kb * 1024,
            max_tokens=self.max_tokens,
        )

    def overrides(self) -> Overrides:
        """What load_problem applies over the folder's settings for this run."""
        return Overrides(
            self.eval_env,
            self.initial_program,
            self.eval_timeout_s,
            self.eval_memory_mb,
            self.config_file,
            self.strict_config,
        )

    def to_json(self) -> dict:
        """The stored form: a model as [name, weight] or [name, weight, api_base]; no key, and
        no --env value, only its name (evolve/pipeline/env.py keeps the values)."""
        d = asdict(self)
        d["eval_env"] = names(self.eval_env)
        d["models"] = [
            [m.name, m.weight, *([m.api_base] if m.api_base else [])] for m in self.models
        ]
        return d

    @classmethod
    def from_json(cls, d: dict) -> RunConfig:
        d = dict(d)
        d["models"] = tuple(ModelSpec(*m[:3]) for m in d["models"])
        d["eval_env"] = tuple(d.get("eval_env", ()))
        d["temperatures"] = tuple(d.get("temperatures", ()))
        d["agent_env"] = tuple(d.get("agent_env", ()))
        return cls(**d)

    def with_(self, **changes) -> RunConfig:
        return replace(self, **changes)
