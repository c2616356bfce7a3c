"""The stand-in `gepa.optimize_anything` module (GEPA v0.1.4's names), used where the real
`gepa` package is not installed in the sandbox.

evolve's scorer (../../gepa_score.py) replaces `optimize_anything` here, as in the real
package, with its interception before the script runs. The config classes keep their keyword
arguments as attributes, so a script builds GEPAConfig(engine=EngineConfig(max_metric_calls=...))
as it does with GEPA and the scorer reads the budget back. Names this module lacks resolve to
such a class too. log() is GEPA's: written per evaluator call into the LogContext the scorer sets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SideInfo = dict
Candidate = dict


class _Settings:
    """A config object: its keyword arguments, kept as attributes."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.__dict__.update(kwargs)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        return None


class GEPAConfig(_Settings):
    pass


class EngineConfig(_Settings):
    pass


class OptimizeAnythingConfig(_Settings):
    pass


class ReflectionConfig(_Settings):
    pass


class RefinerConfig(_Settings):
    pass


class TrackingConfig(_Settings):
    pass


class MergeConfig(_Settings):
    pass


@dataclass
class OptimizationState:
    """What GEPA hands an evaluator that names `opt_state`: the best evaluations so far of
    the current example, best first, each {"score": float, "side_info": dict}."""

    best_example_evals: list[dict] = field(default_factory=list)


class LogContext:
    """What oa.log() wrote during one evaluator call (GEPA's LogContext, one thread)."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, text: str) -> None:
        self.parts.append(text)

    def drain(self) -> str:
        text, self.parts = "".join(self.parts), []
        return text


_CONTEXT: list[LogContext] = []  # the current evaluator call's (the scorer sets it)


def _set_log_context(ctx: LogContext | None) -> None:
    _CONTEXT[:] = [ctx] if ctx is not None else []


def log(*args: Any, sep: str = " ", end: str = "\n") -> None:
    """GEPA's oa.log: kept for the candidate's side_info["log"]; outside a call, dropped."""
    if _CONTEXT:
        _CONTEXT[0].write(sep.join(str(a) for a in args) + end)


def optimize_anything(*args: Any, **kwargs: Any) -> Any:
    """Replaced by the scorer's interception before any script runs."""
    raise RuntimeError("the stand-in gepa runs only under evolve's GEPA scorer")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Settings,), {})  # make_litellm_lm, Image, ...: accepted, unused
