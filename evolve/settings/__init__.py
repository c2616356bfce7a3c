"""Validated settings files: problem.toml, OpenEvolve's config.yaml, `--prices` tables.

The schemas are an input layer: evolve.problem and evolve.llm.pricing turn what they
return into the project's own dataclasses, so no pydantic type travels further. A bad
file fails with one line naming the file, the key and what was expected.
"""

from evolve.settings.errors import SettingsError, validate
from evolve.settings.native import ProblemToml
from evolve.settings.openevolve import OpenEvolveConfig
from evolve.settings.prices import PriceFile
from evolve.settings.urls import check_url

__all__ = [
    "OpenEvolveConfig",
    "PriceFile",
    "ProblemToml",
    "SettingsError",
    "check_url",
    "validate",
]
