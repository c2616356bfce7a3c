"""The schema of a native problem's problem.toml.

Types and ranges only; what needs the folder (the entry file exists, a split named by a
stage is listed in `splits`) is checked by evolve.problem.load after this.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from evolve.settings.environ import EnvEntry
from evolve.settings.errors import Section
from evolve.settings.search import SearchTable
from evolve.settings.tools import Tool

PositiveInt = Annotated[int, Field(gt=0)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


# The setting (a flag of `evolve run`, which wins) each key sets, by table and key: the key's
# type and range are the flag's (tests/test_settings_model.py); [search] is the flags' own.
SETTING_OF = {
    "evolution.num_islands": "islands",
    "evolution.iterations": "iterations",
    "evolution.edit_format": "edit_format",
    "evaluation.timeout_s": "timeout",
    "evaluation.memory_mb": "memory_mb",
}


class ProblemTable(Section):
    name: str
    entry: str
    description: str = ""
    metric: str = "score"
    direction: Literal["maximize", "minimize"] = "maximize"
    domain_notes: str = ""
    hints: list[str] = []  # known ideas; each prompt shows one, drawn per call
    include: list[str] = []  # files of other folders the evaluator imports (kit.include)


class CascadeStage(Section):
    split: str
    threshold: FiniteFloat | None = None


class ResourcesTable(Section):
    """What one evaluation asks of a Ray node (--sandbox ray)."""

    cpus: PositiveFloat = 1.0
    gpus: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 0.0
    memory_mb: PositiveInt | None = None


class EvaluationTable(Section):
    timeout_s: PositiveFloat = 60.0
    memory_mb: PositiveInt = 2048
    splits: Annotated[list[str], Field(min_length=1)] = ["train"]
    train_split: str = "train"
    test_split: str | None = None
    cascade: list[CascadeStage] = []
    max_code_kb: PositiveInt = 64  # larger candidates are recorded invalid, never evaluated
    env: list[EnvEntry] = []  # NAME=VALUE, or NAME: the value the controller has at load time
    resources: ResourcesTable = ResourcesTable()
    tools: list[Tool] = []  # programs the evaluator runs (cargo, g++): the sandbox offers them


class FeaturesTable(Section):
    dimensions: list[str] = ["code_length", "diversity"]
    bins: PositiveInt = 8


class EvolutionTable(Section):
    num_islands: PositiveInt | None = None
    population_size: PositiveInt | None = None
    iterations: Annotated[int, Field(ge=0)] | None = None
    edit_format: Literal["diff", "block", "full"] | None = None


class ProgramTable(Section):
    """A program of several files: `files` (paths relative to the problem folder, which are
    the tree's paths too) or `folder` (every file under it, paths relative to it); `fixed`
    names tree files laid out beside the evolving ones and never edited."""

    files: list[str] = []
    folder: str | None = None
    fixed: list[str] = []


class DataEntry(Section):
    path: str
    url: str | None = None
    sha256: str | None = None
    splits: list[str] = []  # the splits whose evaluations may read the file (none listed: all)


class ProblemToml(Section):
    problem: ProblemTable
    evaluation: EvaluationTable = EvaluationTable()
    features: FeaturesTable = FeaturesTable()
    evolution: EvolutionTable = EvolutionTable()
    search: SearchTable = SearchTable()
    program: ProgramTable | None = None
    data: list[DataEntry] = []
