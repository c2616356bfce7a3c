"""Which of a config.yaml's keys evolve honours, and how, and which it ignores, and why.

`evolve check` prints the whole report; `evolve run` prints the ignored keys once as
it starts, so an OpenEvolve user learns what does not carry over before the results
say so. Keys are dotted as a user reads the file; list items are written
`llm.models[*].top_p`, each key once however many models set it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from evolve.settings.errors import _inner_model, validate
from evolve.settings.openevolve import OESection, OpenEvolveConfig
from evolve.settings.unknown import unknown_keys, without


@dataclass(frozen=True)
class KeyReport:
    honoured: tuple[tuple[str, str], ...] = ()  # (dotted key, how evolve uses it)
    ignored: tuple[tuple[str, str], ...] = ()  # (dotted key, why evolve does without it)


def config_report(problem_dir: str | Path, config_file: str | Path | None = None) -> KeyReport:
    """The report for the keys the folder's config file sets (`config_file`, else its
    config.yaml), unknown keys aside (evolve.problem.config warns about those); empty for a
    native folder or one without a config. A bad file raises SettingsError (load_problem
    first)."""
    root = Path(problem_dir)
    path = Path(config_file) if config_file is not None else root / "config.yaml"
    if (root / "problem.toml").is_file() or not path.is_file():
        return KeyReport()
    raw = yaml.safe_load(path.read_text()) or {}
    raw = without(raw, unknown_keys(OpenEvolveConfig, raw))
    validate(OpenEvolveConfig, raw, str(path), "yaml")
    return key_report(raw)


def key_report(raw: dict) -> KeyReport:
    """The report for a mapping that OpenEvolveConfig accepts."""
    honoured: dict[str, str] = {}
    ignored: dict[str, str] = {}
    _walk(OpenEvolveConfig, raw, "", honoured, ignored)
    return KeyReport(tuple(honoured.items()), tuple(ignored.items()))


def ignored_lines(problem_dir: str | Path, config_file: str | Path | None = None) -> list[str]:
    """One line per ignored key, as `evolve run` prints them."""
    name = Path(config_file).name if config_file is not None else "config.yaml"
    report = config_report(problem_dir, config_file)
    return [f"{name}: ignored key {key}: {why}" for key, why in report.ignored]


def _walk(model: type[BaseModel], data: Any, prefix: str, honoured: dict, ignored: dict) -> None:
    if not isinstance(data, dict):
        return
    uses = model.uses if issubclass(model, OESection) else {}
    skip = model.ignored if issubclass(model, OESection) else {}
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if key in skip:
            ignored.setdefault(dotted, skip[key])
            continue
        field = model.model_fields.get(key)
        inner = _inner_model(field.annotation) if field is not None else None
        if inner is not None and key in uses:  # a list of tables: `llm.models`
            honoured.setdefault(dotted, uses[key])
            for item in value if isinstance(value, list) else ():
                _walk(inner, item, f"{dotted}[*].", honoured, ignored)
        elif inner is not None:  # a section: its keys, not the section itself
            _walk(inner, value, f"{dotted}.", honoured, ignored)
        else:
            honoured.setdefault(dotted, uses.get(key, ""))
