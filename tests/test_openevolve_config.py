"""OpenEvolve config files as their users write them: keys no OpenEvolve knows are ignored
with a warning each (--strict-config refuses them), OpenEvolve 0.4.1's new keys are read
(evaluator.evaluator_args reaches evaluate()), another llm.provider stops only `run`, and
--config picks a folder's other config file (config_phase_1.yaml)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evolve.cli.parser import build_parser
from evolve.cli.run import config_from_args
from evolve.pipeline import api
from evolve.problem.check import describe
from evolve.problem.config import config_line
from evolve.problem.load import Overrides, ProblemError, load_problem
from evolve.settings.errors import UsageError
from evolve.settings.openevolve import OpenEvolveConfig
from evolve.settings.unknown import unknown_keys
from evolve.testing.cli_helpers import OPENEVOLVE_FIXTURE, ROOT, evolve

FIXTURES = ROOT / "tests" / "fixtures" / "openevolve"
KEYS = ROOT / "tests" / "fixtures" / "openevolve_0_4_keys.txt"
UNREACHABLE = "http://127.0.0.1:9/v1"
# as in OpenEvolve's examples: alphaevolve_math_problems/*/config.yaml, and
# circle_packing_with_artifacts's novelty section
UNKNOWN = """
max_iterations: 4
parallel_evaluations: 1
novelty:
  enabled: true
  threshold: 0.9
llm:
  temprature: 0.5
evaluator:
  timeout: 60
"""


def folder(root: Path, config: str | None, name: str = "config.yaml") -> Path:
    shutil.copytree(OPENEVOLVE_FIXTURE, root)
    (root / "config.yaml").unlink()
    if config is not None:
        (root / name).write_text(config)
    return root


def settings_of(problem: Path, *flags: str):
    args = build_parser().parse_args(["run", str(problem), *flags])
    return config_from_args(args, load_problem(problem, Overrides.from_args(args)))


# ---- unknown keys: a warning each, with the key meant; --strict-config refuses them -------


def test_unknown_keys_are_found_with_the_key_meant_at_any_level():
    import yaml

    found = {u.dotted: u.meant for u in unknown_keys(OpenEvolveConfig, yaml.safe_load(UNKNOWN))}
    assert found == {
        "parallel_evaluations": "evaluator.parallel_evaluations",  # the wrong level
        "novelty": None,  # a section: one key, and no leaf key is offered for it
        "llm.temprature": "llm.temperature",
    }
    nested = {"llm": {"models": [{"name": "a", "temprature": 1}], "max_iterations": 3}}
    found = {u.dotted: u.meant for u in unknown_keys(OpenEvolveConfig, nested)}
    assert found == {
        "llm.models[0].temprature": "llm.models[0].temperature",
        "llm.max_iterations": "max_iterations",
    }
    assert unknown_keys(OpenEvolveConfig, {"evolve": {"evn": []}}) == []  # evolve's: strict


def test_unknown_keys_are_ignored_with_one_warning_each_and_the_folder_loads(tmp_path):
    problem = load_problem(folder(tmp_path / "oe", UNKNOWN))
    assert problem.iterations == 4 and problem.timeout_s == 60  # the known keys still count
    assert problem.parallel is None  # a top-level parallel_evaluations is not OpenEvolve's
    assert len(problem.notices) == 3
    first = problem.notices[0]
    assert first.startswith(f"warning: {tmp_path / 'oe' / 'config.yaml'}: unknown key ")
    assert (
        "'parallel_evaluations' ignored (did you mean 'evaluator.parallel_evaluations'?)" in first
    )
    assert "--strict-config" in first
    assert "unknown key 'novelty' ignored" in problem.notices[1]


def test_eval_warns_on_stderr_once_per_key_and_scores(tmp_path):
    oe = folder(tmp_path / "oe", UNKNOWN)
    r = evolve("eval", oe, oe / "initial_program.py", "--json", "--sandbox", "local")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["status"] == "ok"
    warnings = [line for line in r.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 3, r.stderr
    assert sum("'parallel_evaluations'" in w for w in warnings) == 1
    assert f"evolve: config: {oe / 'config.yaml'}" in r.stderr  # which file it read


def test_strict_config_refuses_each_unknown_key_in_one_line(tmp_path):
    oe = folder(tmp_path / "oe", UNKNOWN)
    r = evolve("check", oe, "--sandbox", "local", "--strict-config")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 3, r.stderr
    assert lines[0] == (
        f"evolve check: error: {oe / 'config.yaml'}: unknown key 'parallel_evaluations' "
        "(did you mean 'evaluator.parallel_evaluations'?)"
    )
    assert "unknown key 'llm.temprature' (did you mean 'llm.temperature'?)" in lines[2]
    with pytest.raises(UsageError, match="unknown key 'novelty'"):  # the Python API too
        api.check(oe, strict_config=True)
    with pytest.raises(ProblemError, match="unknown key 'novelty'"):
        load_problem(oe, Overrides(strict_config=True))


def test_a_dropped_key_that_leaves_an_error_is_named_as_the_typo(tmp_path):
    oe = folder(tmp_path / "oe", "llm:\n  models:\n    - nmae: gpt-4\n")
    with pytest.raises(ProblemError, match=r"unknown key 'nmae' \(did you mean 'name'\?\)"):
        load_problem(oe)


def test_native_problem_toml_stays_strict(tmp_path):
    from tests.test_settings import BASE, native

    p = native(tmp_path / "p", BASE + "[evaluation]\nparallel_evaluations = 1\n")
    with pytest.raises(ProblemError, match="unknown key 'parallel_evaluations'"):
        load_problem(p)


# ---- OpenEvolve 0.4.1's keys --------------------------------------------------------------


def test_the_key_list_is_openevolve_0_4_1s():
    keys = KEYS.read_text().splitlines()
    assert keys[0].startswith("# OpenEvolve 0.4.1 ")
    for key in (
        "full_rewrite_probability",
        "evaluator.evaluator_args",
        "checkpoint_on_improvement",
        "database.island_initial_programs",
        "prompt.island_system_messages",
        "evolution_trace.include_failures",
        "logger_prefix",
    ):
        assert key in keys, key


def test_new_keys_load_and_are_reported_once(tmp_path):
    from evolve.settings.report import config_report

    config = """
checkpoint_on_improvement: true
full_rewrite_probability: 0.2
logger_prefix: run1
prompt:
  island_system_messages: [null, "be bold"]
database:
  island_initial_programs: [null, other.py]
evolution_trace:
  include_failures: true
evaluator:
  evaluator_args: {scale: 2}
"""
    oe = folder(tmp_path / "oe", config)
    problem = load_problem(oe)
    assert problem.notices == () and problem.evaluator_args == {"scale": 2}
    report = config_report(oe, problem.config_file)
    ignored = dict(report.ignored)
    for key in (
        "checkpoint_on_improvement",
        "full_rewrite_probability",
        "prompt.island_system_messages",
        "database.island_initial_programs",
        "evolution_trace.include_failures",
    ):
        assert len(ignored[key]) > 10, key
    assert "evaluate()" in dict(report.honoured)["evaluator.evaluator_args"]


def test_evaluator_args_reach_evaluate_as_openevolve_0_4_1_passes_them(tmp_path):
    """OpenEvolve 0.4.1 scores the seed 2.0 (evaluate(path, scale=3, cases=[1, 2, 5]));
    without the arguments it would be 1.0."""
    src = FIXTURES / "evaluator_args"
    r = evolve("eval", src, src / "initial_program.py", "--json", "--sandbox", "local")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["score"] == pytest.approx(2.0)
    assert out["metrics"]["scale"] == 3 and out["metrics"]["cases"] == 3


def test_evaluator_args_evaluate_cannot_take_fail_in_one_line(tmp_path):
    oe = shutil.copytree(FIXTURES / "evaluator_args", tmp_path / "ea")
    (oe / "config.yaml").write_text("evaluator:\n  evaluator_args: {speed: 2}\n")
    r = evolve("eval", oe, oe / "initial_program.py", "--json", "--sandbox", "local")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["status"] == "sandbox_error", r.stdout
    assert "evaluator_args ['speed'] cannot be passed to evaluate" in json.dumps(out["artifacts"])


# ---- llm.provider other than openai -------------------------------------------------------


def test_another_provider_stops_run_only(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)  # not the offline model unasked either
    oe = folder(tmp_path / "oe", "llm:\n  provider: claude_code\n  models:\n    - name: sonnet\n")
    problem = load_problem(oe)  # eval and check load it
    assert problem.llm.provider == "claude_code"
    with pytest.raises(UsageError) as e:
        settings_of(oe)
    line = str(e.value)
    assert "\n" not in line and "llm.provider 'claude_code'" in line
    assert "speaks openai only" in line and "--api-base URL" in line
    bare = folder(tmp_path / "bare", "llm:\n  provider: claude_code\n")  # no model named
    with pytest.raises(UsageError, match="llm.provider 'claude_code'"):
        settings_of(bare)
    cfg = settings_of(oe, "--api-base", UNREACHABLE)  # an OpenAI-compatible endpoint instead
    assert cfg.api_base == UNREACHABLE
    r = evolve("eval", oe, oe / "initial_program.py", "--json", "--sandbox", "local")
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "ok", r.stderr


# ---- --config -------------------------------------------------------------------------------


def test_config_picks_another_file_of_the_folder(tmp_path):
    oe = folder(tmp_path / "oe", "max_iterations: 7\n", name="config_phase_1.yaml")
    (oe / "config_phase_2.yaml").write_text("max_iterations: 9\n")
    plain = load_problem(oe)  # no config.yaml: OpenEvolve's defaults, and said so
    assert plain.iterations is None and plain.config_file is None
    line = config_line(plain) or ""
    assert "config_phase_1.yaml, config_phase_2.yaml" in line and "--config FILE" in line
    assert any("not read: config_phase_1.yaml, config_phase_2.yaml" in x for x in describe(plain))
    picked = load_problem(oe, Overrides(config="config_phase_1.yaml"))
    assert picked.iterations == 7 and picked.config_file == oe / "config_phase_1.yaml"
    assert "config_phase_2.yaml" in (config_line(picked) or "")
    assert "not read: config_phase_2.yaml" in "\n".join(describe(picked))
    # resume reads the same file from anywhere: the run keeps its absolute path
    cfg = settings_of(oe, "--config", "config_phase_2.yaml", "--api-base", UNREACHABLE)
    assert cfg.config_file == str(oe / "config_phase_2.yaml")
    assert load_problem(oe, cfg.overrides()).iterations == 9


def test_eval_says_which_config_it_read(tmp_path):
    oe = folder(tmp_path / "oe", "max_iterations: 7\n", name="config_phase_1.yaml")
    seed = oe / "initial_program.py"
    r = evolve("eval", oe, seed, "--json", "--sandbox", "local", "--config", "config_phase_1.yaml")
    assert r.returncode == 0, r.stderr
    assert f"evolve: config: {oe / 'config_phase_1.yaml'}" in r.stderr


@pytest.mark.parametrize(
    "given, text, fragment",
    [
        ("missing.yaml", None, "--config missing.yaml: no such file in"),
        ("bad.yaml", "llm: {\n", "bad.yaml: invalid YAML: line 2"),
        ("notes.txt", "just words", "notes.txt: expected a mapping at the top level"),
        ("blob.yaml", b"\xff\xfe\x00", "blob.yaml: not a YAML file"),
    ],
)
def test_a_bad_config_flag_is_one_line(tmp_path, given, text, fragment):
    oe = folder(tmp_path / "oe", None)
    if isinstance(text, bytes):
        (oe / given).write_bytes(text)
    elif text is not None:
        (oe / given).write_text(text)
    with pytest.raises(ProblemError) as e:
        load_problem(oe, Overrides(config=given))
    assert fragment in str(e.value) and "\n" not in str(e.value)


def test_config_is_refused_for_a_native_folder(tmp_path):
    from tests.test_settings import BASE, native

    p = native(tmp_path / "p", BASE)
    with pytest.raises(ProblemError, match="--config c.yaml: .*problem.toml"):
        load_problem(p, Overrides(config="c.yaml"))


STRICT = [
    ("llm-typo", "llm:\n  max_token: 100\n", "llm.max_token", "llm.max_tokens"),
    ("top-typo", "max_iteration: 500\n", "max_iteration", "max_iterations"),
    ("section-typo", "databse:\n  num_islands: 2\n", "databse", "database"),
]


@pytest.mark.parametrize("config, key, meant", [c[1:] for c in STRICT], ids=[c[0] for c in STRICT])
def test_strict_config_typos(tmp_path, config, key, meant):
    """Typos OpenEvolve would drop silently (`max_iteration: 500` runs 10000 iterations):
    a warning naming the key meant, an error with --strict-config."""
    oe = folder(tmp_path / "oe", config)
    (notice,) = load_problem(oe).notices
    assert f"unknown key '{key}' ignored (did you mean '{meant}'?)" in notice
    with pytest.raises(ProblemError) as e:
        load_problem(oe, Overrides(strict_config=True))
    assert str(e.value) == f"{oe / 'config.yaml'}: unknown key '{key}' (did you mean '{meant}'?)"
