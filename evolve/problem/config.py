"""Which config file an OpenEvolve-format folder runs with, read as OpenEvolve reads it.

OpenEvolve is told its config file (`--config config_phase_1.yaml`); evolve reads the
folder's config.yaml unless --config names another, a file of the folder first. A folder
whose configs are all phase files (config_phase_1.yaml, ...) would otherwise run on
OpenEvolve's defaults unnoticed: `check` lists the YAML files it did not read, and `run`
and `eval` say which file they read. Keys no OpenEvolve version knows are dropped with a
warning each, as OpenEvolve's dacite drops them silently (evolve/settings/unknown.py);
--strict-config refuses them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from evolve.problem.model import LLMDefaults, ModelDefault, Problem, ProblemError
from evolve.settings import OpenEvolveConfig, SettingsError, validate
from evolve.settings.overrides import Overrides
from evolve.settings.unknown import unknown_keys, without

DEFAULT = "config.yaml"


@dataclass(frozen=True)
class ConfigRead:
    """The validated config, the file it came from (None: no file, OpenEvolve's defaults),
    that file as the user names it, and the warnings to tell the user once."""

    config: OpenEvolveConfig
    path: Path | None
    shown: str
    notices: tuple[str, ...] = ()


def config_path(root: Path, shown: Path, ov: Overrides) -> tuple[Path | None, str]:
    """The file to read and how to name it: --config's (the folder's file of that name,
    else the path as given), else the folder's config.yaml if it has one."""
    if ov.config is None:
        path = root / DEFAULT
        return (path, str(shown / DEFAULT)) if path.is_file() else (None, str(shown / DEFAULT))
    given = Path(ov.config).expanduser()
    for path, name in ((root / given, shown / given), (given, given)):
        if path.is_file():
            return path.resolve(), str(name)
    raise ProblemError(f"--config {ov.config}: no such file in {shown} nor here")


def read_config(root: Path, shown: Path, ov: Overrides) -> ConfigRead:
    """The folder's config (ProblemError: one line per problem, naming the file and key)."""
    path, name = config_path(root, shown, ov)
    raw: Any = {}
    if path is not None:
        try:
            raw = yaml.safe_load(path.read_text()) or {}
        except UnicodeDecodeError:
            raise ProblemError(f"{name}: not a YAML file (not text)") from None
        except yaml.YAMLError as e:
            raise ProblemError(f"{name}: invalid YAML: {yaml_problem(e)}") from None
    unknown = unknown_keys(OpenEvolveConfig, raw)
    if unknown and ov.strict_config:
        raise ProblemError("\n".join(u.line(name, strict=True) for u in unknown))
    try:
        cfg = validate(OpenEvolveConfig, without(raw, unknown), name, "yaml")
    except SettingsError as e:
        raise ProblemError(_as_written(raw, name, e)) from None
    return ConfigRead(cfg, path, name, tuple(u.line(name, strict=False) for u in unknown))


def _as_written(raw: Any, name: str, error: SettingsError) -> str:
    """The error of the file as written where a dropped key left one (`nmae` for `name`:
    the missing name is said as that typo), else `error`."""
    try:
        validate(OpenEvolveConfig, raw, name, "yaml")
    except SettingsError as strict:
        return str(strict)
    return str(error)


def yaml_problem(e: yaml.YAMLError) -> str:
    """PyYAML's error in one line: where, and what it found."""
    mark = getattr(e, "problem_mark", None)
    problem = getattr(e, "problem", None) or str(e)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return where + " ".join(str(problem).split())


def unread_configs(problem: Problem) -> list[str]:
    """The folder's YAML files other than the config read (phase configs and the like)."""
    read = problem.config_file.resolve() if problem.config_file else None
    files = [*problem.root.glob("*.yaml"), *problem.root.glob("*.yml")]
    return sorted(p.name for p in files if p.is_file() and p.resolve() != read)


def config_line(problem: Problem) -> str | None:
    """What `run` and `eval` say about the config they read (None: a native folder)."""
    if problem.fmt not in ("openevolve", "skydiscover"):
        return None
    others = unread_configs(problem)
    if problem.config_file is not None:
        return f"config: {problem.config_file}" + (
            f" (not read: {', '.join(others)})" if others else ""
        )
    if others:
        return (
            f"config: none (no {DEFAULT}): OpenEvolve's defaults; this folder has "
            f"{', '.join(others)}: pick one with --config FILE"
        )
    return f"config: none (no {DEFAULT}): OpenEvolve's defaults"


def llm_defaults(llm: Any) -> LLMDefaults:
    """An OpenEvolve-style config's `llm:` section (OpenEvolve's and SkyDiscover's alike) as
    the problem's model defaults."""
    return LLMDefaults(
        models=tuple(
            ModelDefault(m.name, m.weight, m.api_base, m.api_key, m.provider)
            for m in llm.model_list()
        ),
        api_base=llm.api_base,
        api_key=llm.api_key,
        provider=llm.provider,
        temperature=llm.temperature,
        max_tokens=llm.max_tokens,
        timeout_s=llm.timeout,
        retries=llm.retries,
        backoff_s=llm.retry_delay,
    )
