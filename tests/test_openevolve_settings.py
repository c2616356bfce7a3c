"""OpenEvolve 0.4's config.yaml: every key honoured or ignored with a reason, the
honoured ones changing what they should, the ignored ones reported once; per-model
endpoints and keys (keys never archived); per-run evaluation settings (--env,
--timeout, --memory-mb, --initial-program) and what `resume` keeps of them."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from evolve.cli.common import UsageError
from evolve.cli.parser import build_parser
from evolve.cli.run import config_from_args
from evolve.llm import LLMClient, LLMConfig, ModelSpec
from evolve.llm.pricing import PriceTable
from evolve.pipeline.endpoints import llm_config
from evolve.problem.load import Overrides, load_problem
from evolve.settings.errors import _inner_model
from evolve.settings.openevolve import OESection, OpenEvolveConfig
from evolve.settings.report import key_report
from evolve.testing.cli_helpers import OPENEVOLVE_FIXTURE, ROOT, archive_json, evolve
from evolve.testing.scripted_llm import ScriptedLLM
from tests.test_settings import REAL_OPENEVOLVE_CONFIG, assert_one_line

KEYS = ROOT / "tests" / "fixtures" / "openevolve_0_4_keys.txt"
UNREACHABLE = "http://127.0.0.1:9/v1"
SEED = (OPENEVOLVE_FIXTURE / "initial_program.py").read_text()


def folder(root: Path, config: str, seed: bool = True) -> Path:
    """The OpenEvolve fixture with `config` as its config.yaml (without its seed: seed=False)."""
    shutil.copytree(OPENEVOLVE_FIXTURE, root)
    (root / "config.yaml").write_text(config)
    if not seed:
        (root / "initial_program.py").unlink()
    return root


def run_config(problem: Path, *flags: str, overrides: Overrides | None = None):
    args = build_parser().parse_args(["run", str(problem), *flags])
    return config_from_args(args, load_problem(problem, overrides or Overrides.from_args(args)))


# ---- every OpenEvolve 0.4 key: honoured, or ignored with a reason -------------------------


def treatment(key: str) -> tuple[str, str]:
    """("honoured", how) or ("ignored", why) for a dotted key of the fixture list."""
    model: type = OpenEvolveConfig
    parts = key.replace("[*]", "").split(".")
    for i, part in enumerate(parts):
        if part in model.ignored:  # a key under an ignored key is ignored with it
            return "ignored", model.ignored[part]
        assert part in model.model_fields, f"{key}: unknown to evolve's schema"
        if i == len(parts) - 1:
            return "honoured", model.uses.get(part, "")
        model = _inner_model(model.model_fields[part].annotation)
        assert model is not None, key
    raise AssertionError(key)


def test_every_openevolve_0_4_key_is_honoured_or_ignored_with_a_reason():
    keys = [k for k in KEYS.read_text().splitlines() if k and not k.startswith("#")]
    assert len(keys) > 140 and "llm.models[*].api_key" in keys  # the whole 0.4 schema
    for key in keys:
        how, text = treatment(key)
        assert len(text) > 10, f"{key}: {how} without saying how or why"
    honoured = {k for k in keys if treatment(k)[0] == "honoured"}
    for key in [
        "llm.primary_model", "llm.secondary_model_weight", "llm.models[*].api_base",
        "llm.models[*].api_key", "llm.api_key", "llm.timeout", "llm.retries", "llm.retry_delay",
        "evaluator.parallel_evaluations", "evaluator.max_retries", "random_seed",
        "database.random_seed", "database.migration_interval", "database.num_islands",
        "max_code_length", "evaluator.timeout", "evaluator.memory_limit_mb",
        "evaluator.cascade_evaluation", "evaluator.cascade_thresholds", "llm.temperature",
        "llm.max_tokens", "llm.api_base",
    ]:  # fmt: skip
        assert key in honoured, key


def test_each_field_says_how_it_is_used_and_no_key_is_both():
    todo: list[type] = [OpenEvolveConfig]
    while todo:
        model = todo.pop()
        assert issubclass(model, OESection)
        for name, f in model.model_fields.items():
            inner = _inner_model(f.annotation)
            if inner is not None and name not in model.uses:  # a section
                todo.append(inner)
            else:
                assert model.uses.get(name), f"{model.__name__}.{name} has no `uses` entry"
        assert not set(model.ignored) & set(model.model_fields), model.__name__
        assert set(model.uses) <= set(model.model_fields), model.__name__


# ---- the report of a file's keys ----------------------------------------------------------


def test_report_lists_the_keys_a_file_sets_once_each():
    import yaml

    raw = yaml.safe_load(REAL_OPENEVOLVE_CONFIG)
    raw["llm"]["models"] = [{"name": "a", "top_p": 0.9}, {"name": "b", "top_p": 0.8}]
    report = key_report(raw)
    honoured, ignored = dict(report.honoured), dict(report.ignored)
    assert "reasoning_effort" not in json.dumps(report.honoured)
    assert (
        ignored["database.db_path"] == "evolve keeps every run in its SQLite archive (--runs-dir)"
    )
    assert "--parallel" in honoured["evaluator.parallel_evaluations"]
    assert "--seed" in honoured["random_seed"] and "--llm-timeout" in honoured["llm.timeout"]
    assert [k for k, _ in report.ignored].count("llm.models[*].top_p") == 1
    assert "llm.evaluator_models" in ignored and "llm.evaluator_models[*].name" not in ignored
    assert "llm" not in honoured and "evolution_trace.enabled" in ignored  # keys, not sections
    assert set(honoured).isdisjoint(ignored)


# ---- honoured keys change what they should; a flag still wins -----------------------------

HONOURED = [
    ("evaluator:\n  parallel_evaluations: 3\n", "parallel", 3, ["--parallel", "1"], 1),
    ("random_seed: 7\n", "seed", 7, ["--seed", "2"], 2),
    ("database:\n  random_seed: 5\n", "seed", 5, ["--seed", "0"], 0),
    ("random_seed: 7\ndatabase:\n  random_seed: 5\n", "seed", 7, [], 7),
    ("database:\n  migration_interval: 4\n", "migration_interval", 4, ["--migration-interval", "9"], 9),
    ("database:\n  num_islands: 4\n", "num_islands", 4, ["--islands", "1"], 1),
    ("llm:\n  timeout: 11\n", "llm_timeout_s", 11, ["--llm-timeout", "3"], 3),
    ("llm:\n  retries: 2\n", "llm_retries", 2, ["--llm-retries", "0"], 0),
    ("llm:\n  retry_delay: 0.5\n", "llm_backoff_s", 0.5, ["--llm-backoff", "2"], 2),
    ("llm:\n  temperature: 0.3\n", "temperature", 0.3, ["--temperature", "0.8"], 0.8),
    ("llm:\n  max_tokens: 512\n", "max_tokens", 512, ["--max-tokens", "100"], 100),
    ("max_iterations: 4\n", "iterations", 4, ["--iterations", "2"], 2),
    ("diff_based_evolution: true\n", "edit_format", "diff", ["--edit-format", "full"], "full"),
]  # fmt: skip


@pytest.mark.parametrize(
    "config, field, value, flags, flagged", HONOURED, ids=[h[1] + str(h[2]) for h in HONOURED]
)
def test_honoured_key_reaches_the_run_config(tmp_path, config, field, value, flags, flagged):
    problem = folder(tmp_path / "oe", config)
    model = ["--model", "scripted", "--api-base", UNREACHABLE]
    assert getattr(run_config(problem, *model), field) == value
    assert getattr(run_config(problem, *model, *flags), field) == flagged


def test_evaluation_keys_reach_the_problem(tmp_path):
    p = load_problem(folder(tmp_path / "a", "max_iterations: 3\n"))
    assert (p.timeout_s, p.memory_mb, p.eval_retries, p.cascade_evaluation) == (300, 4096, 3, True)
    config = "evaluator:\n  timeout: 20\n  memory_limit_mb: 900\n  max_retries: 0\n  cascade_evaluation: false\n"
    p = load_problem(folder(tmp_path / "b", config))
    assert (p.timeout_s, p.memory_mb, p.eval_retries, p.cascade_evaluation) == (20, 900, 0, False)
    p = load_problem(
        folder(tmp_path / "c", "database:\n  feature_bins: {complexity: 4, diversity: 6}\n")
    )
    assert p.feature_bins == 6
    native = load_problem(ROOT / "problems" / "binpack")
    assert native.eval_retries == 0 and native.env == {}


# ---- per-model endpoints and keys ---------------------------------------------------------


def test_each_model_goes_to_its_own_endpoint_with_its_own_key():
    """One SDK client per endpoint and key: a model without its own goes to the run's."""
    with ScriptedLLM.from_list(["a"]) as one, ScriptedLLM.from_list(["b"]) as two:
        cfg = LLMConfig(
            models=(
                ModelSpec("a", api_base=one.base_url, api_key="key-a"),
                ModelSpec("b", api_base=two.base_url, api_key="key-b"),
                ModelSpec("c"),
            ),
            api_base=one.base_url,
            api_key="key-run",
            backoff_s=0.01,
        )
        client = LLMClient(cfg, PriceTable.load())

        async def ask() -> None:
            try:
                for model in ("a", "b", "c", "b"):
                    await client.complete([{"role": "user", "content": "hi"}], model)
            finally:
                await client.close()

        asyncio.run(ask())
        seen_one = [(r["model"], r["_authorization"]) for r in one.requests]
        seen_two = [(r["model"], r["_authorization"]) for r in two.requests]
    assert seen_one == [("a", "Bearer key-a"), ("c", "Bearer key-run")]
    assert seen_two == [("b", "Bearer key-b"), ("b", "Bearer key-b")]


KEYED = """
llm:
  api_base: http://127.0.0.1:9/v1
  api_key: ${SECTION_KEY_X}
  models:
    - name: a
    - name: b
      api_base: http://127.0.0.2:9/v1
      api_key: key-b
    - name: c
      api_key: prefix-${NOT_A_VAR}
"""


def test_keys_are_read_as_openevolve_reads_them(tmp_path, monkeypatch):
    """null: $OPENAI_API_KEY (no key of config.yaml's); "${VAR}", the whole string: VAR;
    a model without api_key takes llm.api_key; a key never goes to --api-base's endpoint."""
    problem = folder(tmp_path / "oe", KEYED)
    monkeypatch.setenv("SECTION_KEY_X", "sk-section")
    cfg = run_config(problem)
    assert "sk-section" not in json.dumps(cfg.to_json()) and "key-b" not in json.dumps(
        cfg.to_json()
    )
    keyed = llm_config(cfg, load_problem(problem))
    assert [(m.name, m.api_base, m.api_key) for m in keyed.models] == [
        ("a", None, "sk-section"),
        ("b", "http://127.0.0.2:9/v1", "key-b"),
        ("c", None, "prefix-${NOT_A_VAR}"),
    ]
    assert keyed.api_base == "http://127.0.0.1:9/v1" and keyed.api_key == "sk-section"
    moved = run_config(problem, "--api-base", "http://127.0.0.3:9/v1")
    keyed = llm_config(moved, load_problem(problem))
    assert {m.api_base for m in keyed.models} == {None} and keyed.api_base.startswith(
        "http://127.0.0.3"
    )
    assert {m.api_key for m in keyed.models} == {None} and keyed.api_key is None
    flagged = llm_config(run_config(problem, "--model", "z"), load_problem(problem))
    assert [(m.name, m.api_key) for m in flagged.models] == [("z", "sk-section")]
    monkeypatch.delenv("SECTION_KEY_X")
    with pytest.raises(
        UsageError,
        match=r"^config.yaml: llm.api_key: environment variable SECTION_KEY_X is not set$",
    ):
        llm_config(cfg, load_problem(problem))


def test_one_model_name_with_two_endpoints_is_refused(tmp_path):
    config = (
        "llm:\n  models:\n    - name: a\n      api_base: http://127.0.0.1:9/v1\n    - name: a\n"
    )
    with pytest.raises(UsageError, match="'a' is listed with two endpoints"):
        run_config(folder(tmp_path / "oe", config))


def _full_program() -> str:
    from evolve.testing.binpack_edits import BINPACK_VARIANTS

    code = dict((n, c) for n, _, c in BINPACK_VARIANTS)["best_fit"]
    start, end = SEED.index("# EVOLVE-BLOCK-START"), SEED.index("# EVOLVE-BLOCK-END")
    return f"```python\n{SEED[:start]}# EVOLVE-BLOCK-START\n{code}{SEED[end:]}```"


def test_a_run_sends_each_model_to_its_endpoint_and_archives_no_key(tmp_path):
    """Through the CLI: two endpoints, a key from a variable and a literal one; the
    ignored keys are said once; resume reads the keys again (an unset one: one line)."""
    runs = tmp_path / "runs"
    with (
        ScriptedLLM.from_list([_full_program()]) as one,
        ScriptedLLM.from_list([_full_program()]) as two,
    ):
        config = (
            "max_iterations: 4\nllm:\n  top_p: 0.5\n  models:\n"
            f"    - {{name: model-a, api_base: '{one.base_url}', api_key: '${{KEY_A_X}}', top_p: 0.9}}\n"
            f"    - {{name: model-b, api_base: '{two.base_url}', api_key: literal-key-b, top_p: 0.9}}\n"
        )
        problem = folder(tmp_path / "oe", config)
        base = ["--runs-dir", runs, "--no-progress", "--llm-backoff", "0.05"]
        r = evolve(
            "run", problem, "--sandbox", "local", *base, extra_env={"KEY_A_X": "secret-a-123"}
        )
        assert r.returncode == 0, r.stderr
        assert r.stderr.count("config.yaml: ignored key llm.models[*].top_p: not sent") == 1
        assert r.stderr.count("config.yaml: ignored key llm.top_p:") == 1
        assert f"model-a at {one.base_url}" in r.stderr and f"model-b at {two.base_url}" in r.stderr
        run_id = r.stdout.strip().splitlines()[-1]
        missing = evolve("resume", run_id, "--iterations", "6", *base[:2])
        assert_one_line(
            missing, "config.yaml: llm.models[0].api_key: environment variable KEY_A_X is not set"
        )
        r = evolve(
            "resume", run_id, "--iterations", "6", *base[:3], extra_env={"KEY_A_X": "secret-a-123"}
        )
        assert r.returncode == 0, r.stderr
        assert "ignored key" not in r.stderr  # said once, when the run started
        seen = {(q["model"], q["_authorization"]) for q in one.requests}
        seen |= {("two", q["model"], q["_authorization"]) for q in two.requests}
    assert seen <= {("model-a", "Bearer secret-a-123"), ("two", "model-b", "Bearer literal-key-b")}
    assert len(one.requests) + len(two.requests) >= 6
    assert archive_json(runs, "runs")[0]["iterations_done"] == 6
    for f in runs.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert b"secret-a-123" not in data and b"literal-key-b" not in data, f
    with sqlite3.connect(runs / "archive.db") as db:
        stored = db.execute("SELECT config_json FROM runs").fetchone()[0]
    assert json.loads(stored)["models"] == [
        ["model-a", 1.0, one.base_url],
        ["model-b", 1.0, two.base_url],
    ]


# ---- the fixture's own evaluator -----------------------------------------------------------


def test_openevolve_fixture_evaluator(tmp_path):
    """The fixture follows OpenEvolve's contract; best fit (binpack's baseline, completed with
    the fixture's first-fit seed) beats that seed, and stage 1 screens the seed through."""
    import importlib.util
    import re

    from evolve.edits.blocks import complete_from_seed

    spec = importlib.util.spec_from_file_location(
        "_oe_fixture_evaluator", OPENEVOLVE_FIXTURE / "evaluator.py"
    )
    fx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fx)
    first = fx.evaluate(str(OPENEVOLVE_FIXTURE / "initial_program.py"))
    best_fit = (ROOT / "problems" / "binpack" / "baselines" / "best_fit.py").read_text()
    (tmp_path / "best_fit.py").write_text(complete_from_seed(best_fit, SEED))
    best = fx.evaluate(str(tmp_path / "best_fit.py"))
    assert 0.5 < first["combined_score"] < best["combined_score"] < 1.0
    assert (
        fx.evaluate_stage1(str(OPENEVOLVE_FIXTURE / "initial_program.py"))["combined_score"] > 0.5
    )
    assert set(first) == {"combined_score", "excess_pct", "bins_used", "lower_bound"}
    assert re.search(r"EVOLVE-BLOCK-START\n.*\n# EVOLVE-BLOCK-END", SEED, re.S)
