"""Bad settings, as a user types them, through the real CLI: problem.toml, config.yaml,
--prices files, flags, seeds without EVOLVE-BLOCK markers and endpoint URLs.

Each ends with exit code 2 and one stderr line that names the file, key or flag (and for
a typo, the key meant); nothing is archived. Then the merge order of the settings:
a flag given > the problem's settings > the model's profile > RunConfig's defaults."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from evolve.cli.parser import build_parser
from evolve.cli.run import config_from_args
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import BINPACK, OPENEVOLVE_FIXTURE, evolve

UNREACHABLE = "http://127.0.0.1:9/v1"
BASE = '[problem]\nname = "x"\nentry = "seed.py"\n'
SEED = "import math\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"
EVALUATOR = "def evaluate(program_path, split):\n    return {'outputs': {}}\n"


def assert_one_line(r: subprocess.CompletedProcess, *fragments: str) -> str:
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].strip(), r.stderr
    for f in fragments:
        assert f in lines[0], (f, lines[0])
    return lines[0]


def native(root: Path, toml: str, seed: str = SEED) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "problem.toml").write_text(toml)
    (root / "seed.py").write_text(seed)
    (root / "evaluator.py").write_text(EVALUATOR)
    return root


def openevolve(root: Path, config: str, program: str | None = None) -> Path:
    shutil.copytree(OPENEVOLVE_FIXTURE, root)
    (root / "config.yaml").write_text(config)
    if program is not None:
        (root / "initial_program.py").write_text(program)
    return root


def run(*flags: str, runs: Path, problem: Path = BINPACK, extra_env: dict | None = None):
    args = ["run", problem, "--iterations", "1", "--runs-dir", runs, "--no-progress"]
    args += ["--sandbox", "local", *flags]
    r = evolve(*args, extra_env=extra_env)
    assert not (runs / "archive.db").exists(), "bad input must be refused before the archive"
    return r


# ---- problem.toml ---------------------------------------------------------------------

TOML = [
    (
        "typo-key",
        BASE + "[evaluation]\ntimout_s = 30\n",
        ["problem.toml: [evaluation] unknown key 'timout_s' (did you mean 'timeout_s'?)"],
    ),
    (
        "typo-table",
        BASE + "[evolutoin]\niterations = 5\n",
        ["problem.toml: unknown table [evolutoin] (did you mean [evolution]?)"],
    ),
    (
        "typo-problem-key",
        BASE + "metirc = 'x'\n",
        ["[problem] unknown key 'metirc' (did you mean 'metric'?)"],
    ),
    (
        "typo-cascade",
        BASE + '[evaluation]\nsplits = ["train"]\n[[evaluation.cascade]]\nsplit = "train"\nthreshhold = 1\n',
        ["[[evaluation.cascade]] #1 unknown key 'threshhold' (did you mean 'threshold'?)"],
    ),
    (
        "typo-data",
        BASE + '[[data]]\npath = "a.json"\n[[data]]\npath = "b.json"\nsha265 = "00"\n',
        ["[[data]] #2 unknown key 'sha265' (did you mean 'sha256'?)"],
    ),
    ("timeout-string", BASE + '[evaluation]\ntimeout_s = "60"\n', ["[evaluation] timeout_s: expected a number, got '60'"]),
    ("timeout-negative", BASE + "[evaluation]\ntimeout_s = -1\n", ["timeout_s: expected a number > 0, got -1"]),
    ("timeout-nan", BASE + "[evaluation]\ntimeout_s = nan\n", ["timeout_s: expected a finite number"]),
    ("memory-float", BASE + "[evaluation]\nmemory_mb = 1.5\n", ["[evaluation] memory_mb: expected an integer, got 1.5"]),
    ("max-code-kb-zero", BASE + "[evaluation]\nmax_code_kb = 0\n", ["[evaluation] max_code_kb: expected an integer > 0, got 0"]),
    ("direction", BASE + 'direction = "up"\n', ["[problem] direction: expected one of 'maximize' or 'minimize', got 'up'"]),
    ("edit-format", BASE + '[evolution]\nedit_format = "patch"\n', ["[evolution] edit_format: expected one of"]),
    ("islands-bool", BASE + "[evolution]\nnum_islands = true\n", ["[evolution] num_islands: expected an integer, got true"]),
    ("iterations-negative", BASE + "[evolution]\niterations = -3\n", ["[evolution] iterations: expected an integer >= 0"]),
    ("dimensions-string", BASE + '[features]\ndimensions = "code_length"\n', ["[features] dimensions: expected a list"]),
    ("bins-zero", BASE + "[features]\nbins = 0\n", ["[features] bins: expected an integer > 0"]),
    ("missing-name", '[problem]\nentry = "seed.py"\n', ["[problem] missing required key 'name'"]),
    ("missing-problem-table", "[evaluation]\ntimeout_s = 3\n", ["missing required table [problem]"]),
    ("key-outside-tables", 'name = "x"\n' + BASE, ["unknown key 'name'", "keys go in a table"]),
    ("data-split", BASE + '[[data]]\npath = "a.json"\nsplits = ["tset"]\n', ["[[data]] #1 splits: 'tset' is not a split"]),
    ("data-path", BASE + '[[data]]\npath = "../secret"\n', ["[[data]] #1 path: must be relative"]),
    ("cascade-split", BASE + '[[evaluation.cascade]]\nsplit = "quick"\n', ["[[evaluation.cascade]] #1 split: split 'quick' is not listed"]),
    ("not-toml", BASE + "[evaluation\n", ["problem.toml: invalid TOML"]),
]  # fmt: skip


@pytest.mark.parametrize("toml, fragments", [c[1:] for c in TOML], ids=[c[0] for c in TOML])
def test_bad_problem_toml(tmp_path, toml, fragments):
    problem = native(tmp_path / "p", toml)
    assert_one_line(evolve("check", problem, "--sandbox", "local"), str(problem), *fragments)


# ---- OpenEvolve config.yaml -----------------------------------------------------------

YAML = [
    ("temperature-word", "llm:\n  temperature: hot\n", ["config.yaml: llm.temperature: expected a number, got 'hot'"]),
    ("temperature-range", "llm:\n  temperature: 7\n", ["llm.temperature: expected a number <= 2, got 7"]),
    ("models-string", "llm:\n  models: gpt-4\n", ["llm.models: expected a list of models", "gpt-4"]),
    ("model-typo", "llm:\n  models:\n    - nmae: gpt-4\n", ["llm.models[0]: unknown key 'nmae' (did you mean 'name'?)"]),
    ("model-weight", "llm:\n  models:\n    - name: a\n      weight: -1\n", ["llm.models[0].weight: expected a number > 0"]),
    ("islands-zero", "database:\n  num_islands: 0\n", ["database.num_islands: expected an integer > 0, got 0"]),
    ("bins-word", "database:\n  feature_bins: many\n", ["database.feature_bins: expected an integer > 0"]),
    ("timeout-negative", "evaluator:\n  timeout: -5\n", ["evaluator.timeout: expected a number > 0"]),
    ("thresholds-scalar", "evaluator:\n  cascade_thresholds: 0.5\n", ["evaluator.cascade_thresholds: expected a list"]),
    ("diff-based-word", "diff_based_evolution: maybe\n", ["diff_based_evolution: expected true or false"]),
    ("llm-list", "llm:\n  - gpt-4\n", ["config.yaml: llm: expected a mapping"]),
    ("top-list", "- a\n- b\n", ["config.yaml: expected a mapping at the top level"]),
    ("api-base", "llm:\n  api_base: localhost:8000\n", ["llm.api_base: expected an http(s) URL", "localhost:8000"]),
    ("not-yaml", "llm: {\n", ["config.yaml: invalid YAML: line 2"]),
]  # fmt: skip


@pytest.mark.parametrize("config, fragments", [c[1:] for c in YAML], ids=[c[0] for c in YAML])
def test_bad_config_yaml(tmp_path, config, fragments):
    problem = openevolve(tmp_path / "oe", config)
    assert_one_line(evolve("check", problem, "--sandbox", "local"), *fragments)


# ---- seeds without EVOLVE-BLOCK markers ----------------------------------------------


def test_native_seed_without_markers_is_refused_by_check_and_run(tmp_path):
    problem = native(tmp_path / "p", BASE, seed="def f(x):\n    return x\n")
    want = ["seed.py: no EVOLVE-BLOCK-START ... EVOLVE-BLOCK-END markers", "mark the code"]
    assert_one_line(evolve("check", problem, "--sandbox", "local"), *want)
    r = run(
        "--model", "scripted", "--api-base", UNREACHABLE, runs=tmp_path / "runs", problem=problem
    )
    assert_one_line(r, *want)
    # An OpenEvolve seed without markers evolves whole, as in OpenEvolve
    # (tests/test_whole_file_seed.py): check says so and passes.
    oe = openevolve(tmp_path / "oe", "max_iterations: 3\n", program="def f(x):\n    return x\n")
    out = evolve("check", oe, "--sandbox", "local")
    assert "the whole file evolves" in out.stdout + out.stderr


def test_unbalanced_markers_name_the_line(tmp_path):
    problem = native(tmp_path / "p", BASE, seed="# EVOLVE-BLOCK-START\nx = 1\n")
    assert_one_line(evolve("check", problem, "--sandbox", "local"), "seed.py", "line 1")


# ---- flags -----------------------------------------------------------------------------

FLAGS = [
    (["--temperature", "-5"], ["argument --temperature", "within [0, 2]", "-5"]),
    (["--temperature", "hot"], ["argument --temperature", "'hot'"]),
    (["--max-tokens", "0"], ["argument --max-tokens", ">= 1"]),
    (["--model", "x:abc"], ["argument --model", "x:abc", "weight 'abc' must be a positive number"]),
    (["--model", "x:0"], ["argument --model", "weight '0' must be a positive number"]),
    (["--crossover-rate", "1.5"], ["argument --crossover-rate", "within [0, 1]"]),
    (["--parallel", "0"], ["argument --parallel", ">= 1"]),
    (["--llm-parallel", "-2"], ["argument --llm-parallel", ">= 1"]),
    (["--llm-timeout", "0"], ["argument --llm-timeout", "> 0"]),
    (["--llm-retries", "-1"], ["argument --llm-retries", ">= 0"]),
    (["--islands", "0"], ["argument --islands", ">= 1"]),
    (["--budget-usd", "nan"], ["argument --budget-usd", "> 0"]),
    (["--time-limit", "-1"], ["argument --time-limit", "> 0"]),
    (["--iterations", "many"], ["argument --iterations", "'many'"]),
    (["--temprature", "0.5"], ["--temprature", "did you mean --temperature?"]),
    (
        ["--api-base", "foo"],
        ["--api-base 'foo': expected an http(s) URL like http://127.0.0.1:8000/v1"],
    ),
    (["--api-base", "ftp://host/v1"], ["--api-base 'ftp://host/v1'", "http(s) URL"]),
]


@pytest.mark.parametrize("flags, fragments", FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_bad_flag(tmp_path, flags, fragments):
    model = [] if "--model" in flags else ["--model", "scripted"]
    endpoint = [] if "--api-base" in flags else ["--api-base", UNREACHABLE]
    assert_one_line(run(*model, *endpoint, *flags, runs=tmp_path / "runs"), *fragments)


def test_bad_endpoint_from_the_environment(tmp_path):
    r = run(
        "--model",
        "scripted",
        runs=tmp_path / "runs",
        extra_env={"OPENAI_BASE_URL": "127.0.0.1:8000"},
    )
    assert_one_line(r, "$OPENAI_BASE_URL '127.0.0.1:8000'", "http(s) URL")


# ---- --prices files --------------------------------------------------------------------

PRICES = [
    ("unknown-key.json", '{"scripted": {"inptu": 1, "output": 2}}', ["model 'scripted': unknown key 'inptu' (did you mean 'input'?)"]),
    ("negative.json", '{"scripted": {"input": -1, "output": 2}}', ["model 'scripted': input: expected a number >= 0, got -1"]),
    ("missing.toml", "[scripted]\ninput = 1\n", ["model 'scripted' must have 'input' and 'output'", "missing 'output'"]),
    ("word.toml", '[scripted]\ninput = 1\noutput = "cheap"\n', ["model 'scripted': output: expected a number"]),
    ("not-json.json", "scripted: 1\n", ["not a JSON price table"]),
    ("not-toml.toml", "[scripted\n", ["not a TOML price table"]),
    ("list.json", "[1, 2]", ["expected a mapping at the top level"]),
]  # fmt: skip


@pytest.mark.parametrize("name, text, fragments", PRICES, ids=[p[0] for p in PRICES])
def test_bad_prices_file(tmp_path, name, text, fragments):
    prices = tmp_path / name
    prices.write_text(text)
    r = run(
        "--model", "scripted", "--api-base", UNREACHABLE, "--prices", prices, runs=tmp_path / "runs"
    )
    assert_one_line(r, str(prices), *fragments)


def test_missing_prices_file(tmp_path):
    r = run(
        "--model",
        "scripted",
        "--api-base",
        UNREACHABLE,
        "--prices",
        tmp_path / "no.json",
        runs=tmp_path / "runs",
    )
    assert_one_line(r, "--prices", "no such file")


# ---- what is accepted, and the merge order ----------------------------------------------

REAL_OPENEVOLVE_CONFIG = """
max_iterations: 7
checkpoint_interval: 10
log_level: "INFO"
log_dir: null
random_seed: 42
language: python
file_suffix: .py
diff_based_evolution: true
allow_full_rewrites: false
max_code_length: 20000
early_stopping_patience: null
convergence_threshold: 0.001
early_stopping_metric: "combined_score"
llm:
  primary_model: "gemini-2.0-flash-lite"
  primary_model_weight: 0.8
  secondary_model: "gemini-2.0-flash"
  secondary_model_weight: 0.2
  evaluator_models:
    - name: "gemini-2.0-flash-lite"
      weight: 1.0
  api_base: "https://generativelanguage.googleapis.com/v1beta/openai/"
  api_key: null
  api_type: "auto"
  temperature: 0.7
  top_p: 0.95
  max_tokens: 4096
  reasoning_effort: "medium"
  timeout: 60
  retries: 3
  retry_delay: 5
prompt:
  template_dir: null
  system_message: "You are an expert coder."
  evaluator_system_message: "You are an expert code reviewer."
  num_top_programs: 3
  num_diverse_programs: 2
  use_template_stochasticity: true
  template_variations:
    improvement_suggestion: ["Here's how we could improve this code:"]
  include_artifacts: true
  max_artifact_bytes: 20480
  artifact_security_filter: true
  suggest_simplification_after_chars: 500
  include_changes_under_chars: 100
  concise_implementation_max_lines: 10
  comprehensive_implementation_min_lines: 50
database:
  db_path: null
  in_memory: true
  log_prompts: true
  population_size: 1000
  archive_size: 100
  num_islands: 5
  migration_interval: 50
  migration_rate: 0.1
  elite_selection_ratio: 0.1
  exploration_ratio: 0.2
  exploitation_ratio: 0.7
  diversity_metric: "edit_distance"
  feature_dimensions: ["complexity", "diversity"]
  feature_bins: {complexity: 10, diversity: 15}
  diversity_reference_size: 20
evaluator:
  timeout: 300
  max_retries: 3
  memory_limit_mb: null
  cpu_limit: null
  cascade_evaluation: true
  cascade_thresholds: [0.5, 0.75, 0.9]
  parallel_evaluations: 4
  distributed: false
  use_llm_feedback: false
  llm_feedback_weight: 0.1
  enable_artifacts: true
  max_artifact_storage: 104857600
evolution_trace:
  enabled: false
  format: 'jsonl'
  include_code: false
  include_prompts: true
  output_path: null
  buffer_size: 10
  compress: false
"""


def test_a_real_openevolve_config_loads(tmp_path):
    """Every key OpenEvolve's default config carries is accepted; the older
    primary/secondary_model keys become the models, with their weights."""
    p = load_problem(openevolve(tmp_path / "oe", REAL_OPENEVOLVE_CONFIG))
    models = [(m.name, m.weight) for m in p.llm.models]
    assert models == [("gemini-2.0-flash-lite", 0.8), ("gemini-2.0-flash", 0.2)]
    assert (p.iterations, p.num_islands, p.edit_format, p.max_code_bytes) == (7, 5, "diff", 20000)
    assert p.timeout_s == 300 and p.feature_dims == ("code_length", "diversity")
    assert p.llm.temperature == 0.7 and p.domain_notes == "You are an expert coder."


def test_native_settings_reach_the_problem(tmp_path):
    toml = (
        BASE
        + "[evaluation]\nmax_code_kb = 8\nsplits = ['train', 'test']\n[[data]]\npath = 'a.json'\nsplits = ['test']\n"
    )
    p = load_problem(native(tmp_path / "p", toml))
    assert p.max_code_bytes == 8 * 1024 and p.data[0].splits == ("test",)


def test_a_typo_counts_once():
    """`nmae` is both an unknown key and a missing `name`: one mistake, said once; other
    errors are counted so that fixing one does not hide the next."""
    from evolve.settings import OpenEvolveConfig, SettingsError, validate

    with pytest.raises(SettingsError) as e:
        validate(OpenEvolveConfig, {"llm": {"models": [{"nmae": "a"}]}}, "c.yaml", "yaml")
    assert str(e.value) == "c.yaml: llm.models[0]: unknown key 'nmae' (did you mean 'name'?)"
    with pytest.raises(SettingsError) as e:
        validate(OpenEvolveConfig, {"llm": {"temprature": 1, "max_tokens": 0}}, "c.yaml", "yaml")
    assert str(e.value).endswith("(did you mean 'temperature'?) (and 1 more error)")


def _cfg(*argv: str, problem: Path = BINPACK):
    args = build_parser().parse_args(["run", str(problem), *map(str, argv)])
    return config_from_args(args, load_problem(problem))


def test_a_flag_equal_to_its_default_still_wins():
    """`--model local` advises 1 request in flight and a 600 s timeout; flags given with the
    built-in defaults' values (4, 120) are what the user asked for."""
    assert (_cfg("--model", "local").llm_parallel, _cfg("--model", "local").llm_timeout_s) == (
        1,
        600,
    )
    cfg = _cfg("--model", "local", "--llm-parallel", "4", "--llm-timeout", "120")
    assert (cfg.llm_parallel, cfg.llm_timeout_s) == (4, 120)
    # over the problem's settings too: the fixture's config.yaml asks for temperature 0.7
    assert _cfg(problem=OPENEVOLVE_FIXTURE).temperature == 0.7
    assert _cfg("--temperature", "0.8", problem=OPENEVOLVE_FIXTURE).temperature == 0.8
    # and the profile's advice over RunConfig's defaults
    cfg = _cfg("--model", "scripted", "--api-base", UNREACHABLE)
    assert (cfg.llm_parallel, cfg.llm_timeout_s, cfg.sandbox, cfg.parallel) == (4, 120, "auto", 2)


def test_model_names_with_tags_are_kept():
    """Ollama's NAME:TAG stays a name; NAME:TAG:WEIGHT weighs it."""
    args = build_parser().parse_args(
        ["run", ".", "--model", "qwen2.5-coder:7b", "--model", "phi3:mini:2"]
    )
    assert args.model == ["qwen2.5-coder:7b", "phi3:mini:2"]
    cfg = _cfg("--model", "qwen2.5-coder:7b", "--model", "phi3:mini:2", "--api-base", UNREACHABLE)
    assert [(m.name, m.weight) for m in cfg.models] == [
        ("qwen2.5-coder:7b", 1.0),
        ("phi3:mini", 2.0),
    ]
