"""Values a settings file or flag takes from the controller's environment.

`env` entries (problem.toml's [evaluation] env, config.yaml's evolve.env, --env) are
NAME=VALUE, or NAME alone for the value this process has; OpenEvolve's api_key is a
literal, or "${VAR}" (the whole string, as OpenEvolve 0.4 reads it) for a variable.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Annotated

from pydantic import AfterValidator

from evolve.settings.errors import SettingsError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR = re.compile(r"^\$\{([^}]+)\}$")  # OpenEvolve's: "${VAR}", nothing around it


def check_env_entry(entry: str) -> str | None:
    """None if `entry` is NAME or NAME=VALUE, else what is wrong, for one line."""
    name = entry.partition("=")[0]
    if not _NAME.fullmatch(name):
        return f"expected NAME or NAME=VALUE (NAME of letters, digits and _), got {entry!r}"
    return None


def _entry(value: str) -> str:
    problem = check_env_entry(value)
    if problem:
        raise ValueError(problem)
    return value


EnvEntry = Annotated[str, AfterValidator(_entry)]  # a schema's type for an `env` entry


def resolve_env(
    entries: Iterable[str], where: str, environ: Mapping[str, str] = os.environ
) -> dict[str, str]:
    """NAME -> value, later entries winning; SettingsError naming `where` for a NAME
    alone that `environ` lacks."""
    out = {}
    for entry in entries:
        problem = check_env_entry(entry)
        if problem:
            raise SettingsError(f"{where}: {problem}")
        name, sep, value = entry.partition("=")
        if not sep:
            if name not in environ:
                raise SettingsError(
                    f"{where}: {name} is not set in the environment (give {name}=VALUE)"
                )
            value = environ[name]
        out[name] = value
    return out


def resolve_key(
    spec: str | None, where: str, environ: Mapping[str, str] = os.environ
) -> str | None:
    """An api_key as OpenEvolve 0.4 reads it: "${VAR}" is VAR's value (unset: an error
    naming `where`), anything else is the key itself; None stays None ($OPENAI_API_KEY)."""
    if spec is None:
        return None
    m = _VAR.match(spec)
    if m is None:
        return spec
    if m.group(1) not in environ:
        raise SettingsError(f"{where}: environment variable {m.group(1)} is not set")
    return environ[m.group(1)]
