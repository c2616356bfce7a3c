"""The typed description of a problem, whatever format its folder is in.

evolve.problem.load builds it from a native problem.toml or an OpenEvolve config.yaml, so
the loop, the archive and the sandboxes never branch on where a problem came from.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evaluators.inside.languages import PYTHON, Language
from evolve.problem.data import DataFile


class ProblemError(ValueError):
    """A problem folder is unusable; the message names the file and field."""


@dataclass(frozen=True)
class Stage:
    """One cascade stage: evaluate on `split` (native) or call `function`
    (OpenEvolve); continue only if the score reaches `threshold`."""

    split: str
    function: str | None = None
    threshold: float | None = None


@dataclass(frozen=True)
class ModelDefault:
    """A model a folder names (config.yaml's llm.models), with its own endpoint if any."""

    name: str
    weight: float = 1.0
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)  # as written: a key, "${VAR}" or None
    provider: str | None = None  # OpenEvolve's llm.models[*].provider; run speaks "openai"


@dataclass(frozen=True)
class LLMDefaults:
    """Model settings a problem folder may carry (OpenEvolve's config.yaml). An api_key is
    kept as written and resolved only when a run calls the endpoint: never stored."""

    models: tuple[ModelDefault, ...] = ()
    api_base: str | None = None
    api_key: str | None = field(default=None, repr=False)
    provider: str | None = None  # OpenEvolve's llm.provider; run speaks "openai" (or None)
    temperature: float | None = None
    max_tokens: int | None = None
    timeout_s: float | None = None
    retries: int | None = None
    backoff_s: float | None = None


@dataclass(frozen=True)
class Resources:
    """What one evaluation asks of a Ray node ([evaluation.resources]); the sandbox's own
    limits still apply on the node. memory_mb None: the evaluation's memory limit."""

    cpus: float = 1.0
    gpus: float = 0.0
    memory_mb: int | None = None


@dataclass(frozen=True)
class Problem:
    name: str
    description: str
    root: Path
    fmt: str  # "native" | "openevolve" | "shinka" | "levi" | "skydiscover"
    entry: str  # seed program file name
    seed_code: str
    metric: str
    direction: str  # of the headline metric; the score is always higher-is-better
    domain_notes: str
    timeout_s: float
    memory_mb: int
    splits: tuple[str, ...]
    train_split: str
    test_split: str | None
    cascade: tuple[Stage, ...]
    feature_dims: tuple[str, ...]  # the MAP-Elites grid's: code_length, diversity, metrics
    feature_bins: int
    num_islands: int | None = None
    population_size: int | None = None
    iterations: int | None = None
    edit_format: str | None = None  # "diff" | "block" | "full"
    llm: LLMDefaults = field(default_factory=LLMDefaults)
    data: tuple[DataFile, ...] = ()
    include: tuple[Path, ...] = ()  # files of other folders the evaluator imports (kit.include)
    max_code_bytes: int = 64 * 1024  # larger candidates are recorded invalid, never evaluated
    env: dict[str, str] = field(default_factory=dict)  # extra environment for the evaluator
    eval_retries: int = 0  # retries of an evaluation that fails (OpenEvolve's max_retries)
    cascade_evaluation: bool = True  # OpenEvolve's evaluator.cascade_evaluation
    # OpenEvolve's database.feature_dimensions as config.yaml names them (code length is its
    # `complexity`): the metrics its fitness leaves out of the average (EvalRequest.feature_dims)
    openevolve_feature_dims: tuple[str, ...] = ()
    parallel: int | None = None  # evaluations in flight (OpenEvolve's parallel_evaluations)
    seed: int | None = None  # the run's seed (OpenEvolve's random_seed)
    migration_interval: int | None = None
    hints: tuple[str, ...] = ()  # known ideas (problem.toml [problem] hints): one per prompt
    search: dict = field(default_factory=dict)  # [search] / evolve.search: RunConfig fields
    seed_path: Path | None = None  # where the seed was read, when not root / entry
    resources: Resources = field(default_factory=Resources)
    # OpenEvolve format: the config file read (None: none, OpenEvolve's defaults), what the
    # user is told once about it (unknown keys ignored), and evaluator.evaluator_args,
    # the keyword arguments of every evaluate() call
    config_file: Path | None = None
    notices: tuple[str, ...] = ()
    evaluator_args: dict = field(default_factory=dict)
    # the seed has no EVOLVE-BLOCK markers (an OpenEvolve folder may say so): the whole file
    # is the one evolving block, as OpenEvolve's default enforce_evolve_blocks: false has it
    whole_file: bool = False
    # the seed's language (its suffix, or OpenEvolve's `language`): only Python gets
    # Python's checks; `tools`: programs the evaluator runs, which the sandbox must offer
    language: Language = PYTHON
    tools: tuple[str, ...] = ()
    # a program of several files (problem.toml's [program]): every tree path in order, and
    # those that never evolve; () for a one-file program. seed_code is then the encoded tree
    # (evaluators/tree.py), entry the tree path of the file the evaluator loads, and
    # seed_path the folder the tree was read from
    files: tuple[str, ...] = ()
    fixed_files: tuple[str, ...] = ()
    # a SkyDiscover folder's evaluator folder (relative), shown read-only at /benchmark
    benchmark: str | None = None
    # held-out scores are the train scores again (a SkyDiscover evaluate.sh ignores its mode)
    test_is_train: bool = False

    @property
    def prompt_dir(self) -> Path:
        """Per-problem template overrides live here."""
        return self.root / "prompts"

    @property
    def evolving_files(self) -> tuple[str, ...]:
        """The tree paths an edit may change, in order (() for a one-file program)."""
        return tuple(f for f in self.files if f not in self.fixed_files)

    @property
    def seed_file(self) -> Path:
        """The seed program's file: in the folder, or where --initial-program points."""
        return self.seed_path or self.root / self.entry


# What a peer's folder with one evaluation and no held-out split gets where its own format
# says nothing (ShinkaEvolve's evaluate.py, LEVI's score_fn): one train stage, the usual
# features, a 64 KiB program and 4 GiB of memory.
ONE_SPLIT: dict[str, Any] = dict(
    memory_mb=4096,
    splits=("train",),
    train_split="train",
    test_split=None,
    cascade=(Stage(split="train"),),
    feature_dims=("code_length", "diversity"),
    feature_bins=8,
    max_code_bytes=64 * 1024,
)
