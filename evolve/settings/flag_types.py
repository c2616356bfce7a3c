"""The types of the settings' values (evolve/settings/flags.py): the ranges, the forms a
keyword argument may take (one value where a list is expected, a path object) and the checks
a value of one field needs, written once for the flags, the keyword arguments and the
stored configs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BeforeValidator, Field

from evolve.problem import data_seed
from evolve.settings.environ import EnvEntry

Sandbox = Literal["auto", "local", "docker", "ray"]  # evaluators.backends.CHOICES
NodeSandbox = Literal["auto", "docker", "local"]  # what make_sandbox builds on a Ray node
Temperature = Annotated[float, Field(ge=0, le=2, allow_inf_nan=False)]
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


def check_model(text: str) -> str:
    """`NAME[:WEIGHT]`: a weight must be a positive number. A name may carry a tag after a
    colon (Ollama's `qwen2.5-coder:7b`): a tag with a digit, or `latest`, is kept in the
    name; anything else after the last colon is read as a mistyped weight."""
    if text.startswith("local:") or text == "local":
        return text
    name, sep, tail = text.rpartition(":")
    if not text or (sep and not name) or (sep and not tail):
        raise ValueError(f"expected NAME or NAME:WEIGHT, got {text!r}")
    if not sep:
        return text
    try:
        weight: float | None = float(tail)
    except ValueError:
        weight = None
    if weight is None and (any(c.isdigit() for c in tail) or tail == "latest"):
        return text  # a model tag
    if weight is None or not (math.isfinite(weight) and weight > 0):
        hint = "" if weight is not None else f" (a name with a colon takes one too: {text}:1)"
        raise ValueError(f"{text}: weight {tail!r} must be a positive number{hint}")
    return text


def listed(value: Any) -> Any:
    """One value where a list is expected (`model="gpt-4o"`), a tuple, or a mapping of
    `env` ({"NAME": "VALUE"}): the list the field holds."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, Mapping):
        return [f"{k}={v}" for k, v in value.items()]
    return list(value) if isinstance(value, Iterable) else value


def tupled(value: Any) -> Any:
    as_list = listed(value)
    return tuple(as_list) if isinstance(as_list, list) else as_list


def proposer(text: str) -> str:
    """evolve.agent.command_spec.check_proposer, imported at first use: the evolve.agent
    package imports the LLM layer, which imports evolve.settings (whose tables use these
    fields)."""
    from evolve.agent.command_spec import check_proposer

    return check_proposer(text)


def tupled_list(value: Any) -> Any:
    """A list (a TOML array, a keyword argument) where a tuple is kept."""
    return tuple(value) if isinstance(value, list) else value


def _path(value: Any) -> Any:
    return os.fspath(value) if isinstance(value, os.PathLike) else value


ModelName = Annotated[str, AfterValidator(check_model)]
EnvName = Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Models = Annotated[list[ModelName] | None, BeforeValidator(listed)]
EnvList = Annotated[list[EnvEntry], BeforeValidator(listed)]
PathText = Annotated[str | None, BeforeValidator(_path)]
DataSeed = Annotated[int | None, AfterValidator(lambda v: v if v is None else data_seed.check(v))]
Proposer = Annotated[str, AfterValidator(proposer)]
Temperatures = Annotated[tuple[Temperature, ...], BeforeValidator(tupled_list)]
EnvNames = Annotated[tuple[EnvName, ...], BeforeValidator(tupled)]
