"""Validated settings: problem.toml, OpenEvolve's config.yaml, `--prices` tables, and what
a user gives a command (flags.py: `evolve run`'s flags, evolve.run's keyword arguments).

The schemas are an input layer: evolve.problem.load, evolve.llm.pricing and evolve.pipeline.launch turn
what they return into the project's own dataclasses (a RunConfig, a Problem), so no pydantic
type reaches the loop. A bad file or setting fails with one line naming the file (or the
function), the key and what was expected.
"""

from evolve.settings.errors import SettingsError, UsageError, validate
from evolve.settings.native import ProblemToml
from evolve.settings.openevolve import OpenEvolveConfig
from evolve.settings.prices import PriceFile
from evolve.settings.urls import check_url

__all__ = [
    "OpenEvolveConfig",
    "PriceFile",
    "ProblemToml",
    "SettingsError",
    "UsageError",
    "check_url",
    "validate",
]
