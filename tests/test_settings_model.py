"""One settings model (evolve/settings/flags.py's Settings), and everything that restates a
setting held to it: the flags of `evolve run`, problem.toml's keys, the OpenEvolve keys evolve
honours, the models' profiles and RunConfig. A knob that one of them names, types or bounds
otherwise fails here, naming the knob."""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
from typing import Any, get_args

import pytest
from pydantic import BaseModel, ValidationError

from evolve.agent.protocol import PROTOCOLS
from evolve.cli.parser import build_parser
from evolve.llm import profiles
from evolve.pipeline.config import RunConfig
from evolve.search.prompts import EDIT_FORMATS, PROMPT_STYLES
from evolve.settings import openevolve_keys
from evolve.settings.flags import FIELD_OF, GROUPS, SEARCH_TABLE, Settings, default
from evolve.settings.native import SETTING_OF as TOML_SETTING_OF
from evolve.settings.native import ProblemToml
from evolve.settings.openevolve import OpenEvolveConfig
from evolve.settings.search import SearchTable

# values a key or a flag may be given: each is accepted by both or refused by both
PROBES: list[Any] = [-1, 0, 1, 2, 3, 64, 0.5, 1.5, 2.5, 1e9, math.inf, math.nan, "x", "diff"]
PROBES += ["block", "full", "short", True, [0.5], [3.0], []]


def _accepts(model: type[BaseModel], key: str, value: Any) -> bool:
    try:
        model.model_validate({key: value})
    except ValidationError:
        return False
    return True


def _table(schema: type[BaseModel], dotted: str) -> tuple[type[BaseModel], str]:
    """The model of the table holding `dotted` (`llm.timeout` -> LLMSection) and its key."""
    *tables, key = dotted.split(".")
    model = schema
    for name in tables:
        model = model.model_fields[name].default.__class__
    return model, key


def _disagreements(model: type[BaseModel], key: str, setting: str) -> list[str]:
    out = []
    for value in PROBES:
        flag_value = tuple(value) if isinstance(value, list) else value
        if _accepts(model, key, value) != _accepts(Settings, setting, flag_value):
            out.append(f"{model.__name__}.{key} and --{setting} differ on {value!r}")
    return out


def _run_parser() -> argparse.ArgumentParser:
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices["run"]


def test_every_setting_is_a_flag_of_run_and_each_flag_of_eval_and_check_is_one_too():
    run = {a.dest for a in _run_parser()._actions} - {"help", "problem_dir", "no_progress"}
    assert run == set(Settings.model_fields)
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for command in ("eval", "check"):
        for action in sub.choices[command]._actions:
            if action.option_strings and action.dest in Settings.model_fields:
                assert action.option_strings == ["--" + action.dest.replace("_", "-")]


def test_every_setting_is_in_one_group_and_run_help_shows_the_groups():
    grouped = [name for names in GROUPS.values() for name in names]
    assert sorted(grouped) == sorted(Settings.model_fields)  # each once
    shown = {g.title: [a.dest for a in g._group_actions] for g in _run_parser()._action_groups}
    for title, names in GROUPS.items():
        assert [d for d in shown[title] if d != "no_progress"] == list(names)


def test_the_search_table_is_the_search_flags():
    assert tuple(SearchTable.model_fields) == SEARCH_TABLE
    bad = [d for name in SEARCH_TABLE for d in _disagreements(SearchTable, name, name)]
    # a key given a list gives one item at least (the flag's empty tuple is its default)
    assert bad == ["SearchTable.temperatures and --temperatures differ on []"]
    assert SearchTable.model_validate({"temperatures": [0.5, 1.0]}).settings() == {
        "temperatures": (0.5, 1.0)
    }


@pytest.mark.parametrize(
    ("schema", "dotted", "setting"),
    [(ProblemToml, k, s) for k, s in TOML_SETTING_OF.items()]
    + [(OpenEvolveConfig, k, s) for k, s in openevolve_keys.SETTING_OF.items()],
)
def test_a_folders_key_takes_what_its_flag_takes(schema, dotted, setting):
    model, key = _table(schema, dotted)
    assert key in model.model_fields, f"{dotted}: no such key"
    assert setting in Settings.model_fields, f"{dotted}: no setting {setting}"
    assert _disagreements(model, key, setting) == []


def test_each_honoured_openevolve_key_names_its_flag_and_every_flag_named_exists():
    flags = {o for a in _run_parser()._actions for o in a.option_strings}
    tables = {
        "": {**openevolve_keys.TOP_USES},
        "llm": openevolve_keys.LLM_USES,
        "database": openevolve_keys.DATABASE_USES,
        "evaluator": openevolve_keys.EVALUATOR_USES,
        "evolve": openevolve_keys.EVOLVE_USES,
        "prompt": openevolve_keys.PROMPT_USES,
        "model": openevolve_keys.MODEL_USES,
    }
    for table, uses in tables.items():
        for key, text in uses.items():
            for named in re.findall(r"--[a-z][a-z-]*", text):
                assert named in flags, f"{table}.{key}: {named} is no flag of evolve run"
    for dotted, setting in openevolve_keys.SETTING_OF.items():
        table, _, key = dotted.rpartition(".")
        assert "--" + setting.replace("_", "-") in tables[table][key], dotted
    assert all(name in openevolve_keys.EVOLVE_USES["search"] for name in SEARCH_TABLE)


def test_profiles_advise_run_config_fields_within_the_settings_ranges():
    stored = {FIELD_OF.get(s, s): s for s in Settings.model_fields}
    fields = {f.name: f for f in dataclasses.fields(profiles.ModelProfile)}
    for name, field in fields.items():
        if name in stored and field.default not in (dataclasses.MISSING, None):  # None: no advice
            assert field.default == default(stored[name]), name  # the setting's default
    run_fields = {f.name for f in dataclasses.fields(RunConfig)}
    found = [p for p in vars(profiles).values() if isinstance(p, profiles.ModelProfile)]
    assert len(found) >= 6
    for prof in found:
        assert set(prof.advice()) <= run_fields, prof.name
        RunConfig("x", **prof.advice())  # within every setting's range


def test_run_config_checks_a_setting_as_its_flag_does_naming_the_flag():
    for field, value, flag in [
        ("meta_interval", -1, "--meta-interval"),
        ("crossover_rate", 1.5, "--crossover-rate"),
        ("llm_timeout_s", 0, "--llm-timeout"),
        ("temperatures", (0.5, 3.0), "--temperatures[1]"),
        ("eval_timeout_s", -1.0, "--timeout"),
        ("proposer", "nope", "--proposer"),
    ]:
        with pytest.raises(ValueError, match=re.escape(flag)) as e:
            RunConfig("x", **{field: value})
        assert "\n" not in str(e.value)
    RunConfig("x", llm_backoff_s=0.0)  # as OpenEvolve's llm.retry_delay: 0


def test_the_choices_of_a_setting_are_the_loops():
    choices = {
        name: get_args(Settings.model_fields[name].annotation) for name in Settings.model_fields
    }
    assert choices["edit_format"] == EDIT_FORMATS
    assert choices["prompt_style"] == PROMPT_STYLES
    assert choices["agent_protocol"] == PROTOCOLS
