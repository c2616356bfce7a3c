"""evolve: the ADRS controller.

Its Python API is here: evolve.run, evolve.resume, evolve.evaluate and evolve.check
(evolve/pipeline/api.py), with Settings, RunOutcome and UsageError; evolve.optimize_anything,
GEPA's entry point (evolve/pipeline/api_gepa.py); and the archive's reads, evolve.runs,
evolve.best and evolve.program (evolve/reading.py). They are imported on first
use, so `import evolve` (and every command line start) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "Evaluation",
    "RunHooks",
    "RunOutcome",
    "Settings",
    "UsageError",
    "__version__",
    "best",
    "check",
    "evaluate",
    "optimize_anything",
    "program",
    "resume",
    "run",
    "runs",
]
_READS = frozenset({"best", "program", "runs"})
_API = frozenset(__all__) - {"__version__", "optimize_anything"} - _READS

if TYPE_CHECKING:
    from evolve.pipeline.api import (
        CheckReport,
        Evaluation,
        RunHooks,
        Settings,
        UsageError,
        check,
        evaluate,
        resume,
        run,
    )
    from evolve.pipeline.api_gepa import optimize_anything
    from evolve.pipeline.controller import RunOutcome
    from evolve.reading import best, program, runs


def __getattr__(name: str) -> Any:
    if name == "RunOutcome":  # the controller's, imported with it
        from evolve.pipeline.controller import RunOutcome

        return RunOutcome
    if name == "optimize_anything":
        from evolve.pipeline.api_gepa import optimize_anything

        return optimize_anything
    if name in _API:
        from evolve.pipeline import api

        return getattr(api, name)
    if name in _READS:
        from evolve import reading

        return getattr(reading, name)
    raise AttributeError(f"module 'evolve' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API, *_READS, "optimize_anything"})
