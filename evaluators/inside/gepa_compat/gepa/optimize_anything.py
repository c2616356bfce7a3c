"""The stand-in `gepa.optimize_anything` module (GEPA v0.1.4's names, evolve's behaviour).

`optimize_anything(...)` raises Captured, carrying its arguments: the script's call is
intercepted, never run. The config classes keep their keyword arguments as attributes, so a
script builds GEPAConfig(engine=EngineConfig(max_metric_calls=...)) as it does with GEPA and
the scorer reads the budget back. Names this module lacks resolve to such a class too.
"""

from __future__ import annotations

import sys
import types
from dataclasses import dataclass, field
from typing import Any

SideInfo = dict
Candidate = dict
LOGGED: list[str] = []  # what log() was given during the current evaluator call


class Captured(BaseException):
    """The call's arguments, raised through the script so nothing after it runs."""

    def __init__(self, call: dict[str, Any]) -> None:
        super().__init__("optimize_anything was called")
        self.call = call


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


def log(*args: Any, **_: Any) -> None:
    """GEPA's oa.log: kept for the candidate's side_info["log"]."""
    LOGGED.append(" ".join(str(a) for a in args))


def optimize_anything(
    seed_candidate: Any = None,
    *,
    evaluator: Any = None,
    batch_evaluator: Any = None,
    dataset: Any = None,
    valset: Any = None,
    objective: Any = None,
    background: Any = None,
    test_set: Any = None,
    config: Any = None,
    **others: Any,
) -> Any:
    """Intercepted: raise Captured with everything the script passed."""
    raise Captured(
        {
            "seed_candidate": seed_candidate,
            "evaluator": evaluator,
            "batch_evaluator": batch_evaluator,
            "dataset": dataset,
            "valset": valset,
            "objective": objective,
            "background": background,
            "test_set": test_set,
            "config": config,
            "others": sorted(others),
        }
    )


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    return type(name, (_Settings,), {})  # make_litellm_lm, Image, ...: accepted, unused


class _CallableModule(types.ModuleType):
    """`gepa.optimize_anything(...)` calls the function, as the issue's scripts write it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return optimize_anything(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
