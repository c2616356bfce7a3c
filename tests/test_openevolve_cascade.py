"""OpenEvolve 0.4's evaluation semantics, on folders written here: its cascade (merged
stage metrics, failed later stages, thresholds), evaluate()'s retries, one stage alone,
the private copy of the folder, the `openevolve` stand-in and `evolve check`'s report."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from evaluators.local.sandbox import LocalSandbox
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import evolve

SEED = """\
# EVOLVE-BLOCK-START
def value():
    return 0.8
# EVOLVE-BLOCK-END
"""


def folder(tmp_path: Path, evaluator: str, config: str = "", seed: str = SEED) -> Path:
    root = tmp_path / "oe_problem"
    root.mkdir()
    (root / "initial_program.py").write_text(seed)
    (root / "evaluator.py").write_text(textwrap.dedent(evaluator))
    if config:
        (root / "config.yaml").write_text(textwrap.dedent(config))
    return root


LOAD = """\
import importlib.util, os, time

def load(path):
    spec = importlib.util.spec_from_file_location("candidate", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

def evaluate(path):  # OpenEvolve requires it, cascade or not
    return evaluate_stage1(path)
"""


@pytest.fixture(scope="module")
def sandbox():
    box = LocalSandbox(max_parallel=1)
    yield box
    box.close()


def evaluate(root: Path, sandbox, code: str | None = None):
    problem = load_problem(root)
    return CandidateEvaluator(problem, sandbox).evaluate(code or problem.seed_code)


def test_merged_stages_score_their_average_and_a_low_stage_keeps_its_score(tmp_path, sandbox):
    root = folder(
        tmp_path,
        LOAD
        + """
def evaluate_stage1(path):
    return {"a": load(path).value()}

def evaluate_stage2(path):
    return {"b": 0.2, "passed": True}
""",
        "evaluator:\n  cascade_thresholds: [0.5]\n",
    )
    out = evaluate(root, sandbox)
    assert out.status == "ok", out.artifacts
    # merged {a: 0.8, b: 0.2, passed: 1.0}: OpenEvolve's merge turns the bool into a float
    assert out.score == pytest.approx((0.8 + 0.2 + 1.0) / 3)
    assert out.scores == {"evaluate_stage1": pytest.approx(0.8), "evaluate_stage2": out.score}
    low = evaluate(root, sandbox, SEED.replace("0.8", "0.3"))
    assert low.status == "ok" and low.score == pytest.approx(0.3)
    assert "below the cascade threshold 0.5" in low.artifacts["cascade"]


def test_a_later_stage_that_fails_or_times_out_leaves_the_first_standing(tmp_path, sandbox):
    root = folder(
        tmp_path,
        LOAD
        + """
def evaluate_stage1(path):
    return {"a": load(path).value()}

def evaluate_stage2(path):
    if os.environ.get("HANG"):
        time.sleep(60)
    raise RuntimeError("stage two broke")
""",
        "evaluator:\n  timeout: 1\n  cascade_thresholds: [0.5]\n",
    )
    broke = evaluate(root, sandbox)
    assert broke.status == "ok" and broke.score == pytest.approx(0.4)  # mean(a, stage2_passed=0)
    assert broke.artifacts["failure_stage"] == "stage2"
    assert "stage two broke" in broke.artifacts["stage2_stderr"]
    problem = load_problem(root)
    hung = CandidateEvaluator(problem, sandbox)
    req = hung.request(problem.seed_code, "train")
    res = sandbox.evaluate(type(req)(**{**req.__dict__, "env": {"HANG": "1"}}))
    assert res.status == "ok" and res.score == pytest.approx(0.4), res.artifacts
    assert res.artifacts["stage2_timeout"] == "True"
    assert res.artifacts["timeout"] == "True"  # a flag: kept as text, never averaged


def test_a_first_stage_failure_is_a_failure_not_a_zero(tmp_path, sandbox):
    root = folder(
        tmp_path,
        """
def evaluate_stage1(path):
    return {"combined_score": 0.0, "error": "could not load the dataset"}

evaluate = evaluate_stage1
""",
    )
    out = evaluate(root, sandbox)
    assert out.status == "runtime_error" and out.score is None
    assert out.artifacts["error"] == "could not load the dataset"


def test_evaluate_is_retried_only_with_the_cascade_off(tmp_path, sandbox):
    flaky = """
calls = 0

def evaluate(path):
    global calls
    calls += 1
    if calls == 1:
        raise OSError("flaky first call")
    return {"combined_score": 0.5, "calls": calls}
"""
    root = folder(tmp_path, flaky, "evaluator:\n  cascade_evaluation: false\n  max_retries: 1\n")
    out = evaluate(root, sandbox)
    assert out.status == "ok" and out.score == 0.5 and out.metrics["calls"] == 2
    (root / "config.yaml").write_text("evaluator:\n  cascade_evaluation: true\n  max_retries: 1\n")
    assert evaluate(root, sandbox).status == "runtime_error"  # as OpenEvolve: no retry here


def test_the_private_copy_is_fresh_for_every_evaluation(tmp_path, sandbox):
    root = folder(
        tmp_path,
        """
import os
from openevolve.evaluation_result import EvaluationResult
from openevolve.utils.metrics_utils import get_fitness_score

def evaluate(path):
    os.makedirs("exp", exist_ok=True)
    with open("exp/log.txt", "a") as f:
        f.write("seen\\n")
    with open(os.path.join(os.path.dirname(__file__), "cache.txt"), "a") as f:
        f.write("x")
    lines = open("exp/log.txt").read().count("seen")
    metrics = {"runs_seen": float(lines), "cwd_is_copy": float(os.getcwd() != ORIGINAL)}
    return EvaluationResult(metrics=metrics, artifacts={"note": "fine"})
""".replace("ORIGINAL", repr(str(tmp_path / "oe_problem"))),
    )
    before = sorted(p.name for p in root.iterdir())
    for _ in range(2):
        out = evaluate(root, sandbox)
        assert out.status == "ok", out.artifacts
        assert out.metrics == {"runs_seen": 1.0, "cwd_is_copy": 1.0}
        assert out.artifacts["note"] == "fine"
    assert sorted(p.name for p in root.iterdir()) == before


def test_an_evaluator_that_imports_the_program_by_its_name_finds_it(tmp_path, sandbox):
    """OpenEvolve's alphaevolve_math_problems put the program's folder on sys.path and
    __import__ its file name; under Landlock that folder could not be listed, so the import
    found nothing ("No module named 'tmpXXXX'") where OpenEvolve scores the seed."""
    root = folder(
        tmp_path,
        """
import os, sys

def evaluate(program_path):
    sys.path.insert(0, os.path.dirname(os.path.abspath(program_path)))
    program = __import__(os.path.splitext(os.path.basename(program_path))[0])
    return {"combined_score": program.value()}
""",
    )
    out = evaluate(root, sandbox)
    assert (out.status, out.score) == ("ok", 0.8), out.artifacts


def test_eval_runs_the_cascade_and_stage_runs_one_function(tmp_path):
    root = folder(
        tmp_path,
        LOAD
        + """
def evaluate_stage1(path):
    return {"a": load(path).value()}

def evaluate_stage2(path):
    return {"b": 0.4}

def evaluate(path):  # noqa: F811
    return {"combined_score": 0.123}
""",
    )
    seed = str(root / "initial_program.py")
    full = json.loads(evolve("eval", root, seed, "--json", "--sandbox", "local").stdout)
    assert full["score"] == pytest.approx(0.6) and list(full["stages"]) == [
        "evaluate_stage1",
        "evaluate_stage2",
    ]
    train = json.loads(
        evolve("eval", root, seed, "--json", "--split", "train", "--sandbox", "local").stdout
    )
    assert train["score"] == full["score"]
    one = json.loads(
        evolve("eval", root, seed, "--json", "--stage", "evaluate", "--sandbox", "local").stdout
    )
    assert one["score"] == pytest.approx(0.123)
    bad = evolve("eval", root, seed, "--stage", "evaluate_stage9", "--sandbox", "local")
    assert bad.returncode == 2 and "--stage evaluate_stage9: not a stage" in bad.stderr


def test_check_reports_what_it_found(tmp_path):
    root = folder(
        tmp_path,
        LOAD
        + """
HERE = os.path.dirname(__file__)

def evaluate_stage1(path):
    with open(os.path.join(HERE, "datasets", "small.csv")) as f:
        rows = f.read().split()
    return {"a": load(path).value() * len(rows) / 2}

def evaluate_stage2(path):
    return {"b": 1.0}
""",
        """\
        max_iterations: 5
        database:
          db_path: ./somewhere.db
        evaluator:
          cascade_thresholds: [0.9, 0.95]
        """,
    )
    (root / "datasets").mkdir()
    (root / "datasets" / "small.csv").write_text("1\n2\n")
    r = evolve("check", root, "--sandbox", "local")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert f"initial program: {root / 'initial_program.py'}" in out
    assert "evaluate_stage1 (>= 0.9) -> evaluate_stage2" in out
    assert "timeout 300 s per stage" in out
    assert "config.yaml: ignored database.db_path" in out
    assert "config.yaml: max_iterations" in out
    assert "datasets/small.csv" in out
    assert "warning: evaluate_stage1: score 0.8 is below the cascade threshold 0.9" in out
    assert "seed on train: ok, score 0.8" in out
