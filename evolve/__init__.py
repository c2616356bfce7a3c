"""evolve: the ADRS controller.

Its Python API (evolve/api.py) is here: evolve.run, evolve.resume, evolve.evaluate and
evolve.check, with Settings, RunSummary and UsageError. They are imported on first use,
so `import evolve` (and every command line start) stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "CheckReport",
    "Evaluation",
    "RunHooks",
    "RunSummary",
    "Settings",
    "UsageError",
    "__version__",
    "check",
    "evaluate",
    "resume",
    "run",
]
_API = frozenset(__all__) - {"__version__"}

if TYPE_CHECKING:
    from evolve.api import (
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
    from evolve.controller import RunSummary


def __getattr__(name: str) -> Any:
    if name == "RunSummary":  # the controller's, imported with it
        from evolve.controller import RunSummary

        return RunSummary
    if name in _API:
        from evolve import api

        return getattr(api, name)
    raise AttributeError(f"module 'evolve' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})
