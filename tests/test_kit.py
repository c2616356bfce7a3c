"""The problem kit (evaluators/kit.py) in both sandboxes and on its own command line.

The fixture problem reads its data through kit.data_path, imports a module of
another folder through kit.include (problem.toml `include`), rejects bad
returns with kit.Invalid and scores in the trusted score().
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from evaluators.backends import make_sandbox
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import ProblemError, load_problem
from evolve.testing.cli_helpers import ROOT, env
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

PROBLEM = ROOT / "tests" / "fixtures" / "kit_problem" / "main"
GOOD = "def double(x):\n    return 2 * x\n"
BAD = "def double(x):\n    return str(2 * x)\n"


@pytest.fixture(params=["local", "docker"])
def evaluator(request):
    if request.param == "docker":
        request.getfixturevalue("docker_image")
    sandbox = make_sandbox(request.param, 1)
    yield CandidateEvaluator(load_problem(PROBLEM), sandbox)
    sandbox.close()


def test_kit_problem_scores_with_data_and_include(evaluator):
    ok = evaluator.run_split(GOOD, "train")
    assert (ok.status, ok.score, ok.metrics) == ("ok", 36.0, {"n": 3.0}), ok.artifacts
    assert ok.artifacts["split"] == "train" and ok.artifacts["values"] == "3"
    assert evaluator.run_split(GOOD, "test").score == 180.0


def test_kit_invalid_names_the_rule_and_keeps_metrics(evaluator):
    bad = evaluator.run_split(BAD, "train")
    assert bad.status == "invalid" and bad.score is None
    assert bad.artifacts["error"].startswith("double() must return ints, got ['2', '4', '6']")
    assert bad.metrics == {"returned": 3.0}
    missing = evaluator.run_split("def triple(x):\n    return 3 * x\n", "train")
    assert missing.status == "invalid"
    assert missing.artifacts["error"] == "the program defines no callable double()"


def test_include_must_name_an_existing_python_file(tmp_path):
    (tmp_path / "seed.py").write_text((PROBLEM / "seed.py").read_text())
    (tmp_path / "evaluator.py").write_text("def evaluate(p, s):\n    return {}\n")
    toml = (PROBLEM / "problem.toml").read_text()
    (tmp_path / "problem.toml").write_text(toml.replace("../common/scorer.py", "../nowhere.py"))
    with pytest.raises(
        ProblemError, match="'include' entry '../nowhere.py' must name an existing .py file"
    ):
        load_problem(tmp_path)


def test_evaluator_command_line(tmp_path):
    program = tmp_path / "p.py"
    program.write_text(GOOD)
    r = subprocess.run(
        [sys.executable, str(PROBLEM / "evaluator.py"), str(program)],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    lines = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["split"], x["score"], x["valid"]) for x in lines] == [
        ("train", 36.0, True),
        ("test", 180.0, True),
    ]
    blocks_only = tmp_path / "b.py"  # a baseline holding only its block is completed from the seed
    blocks_only.write_text(
        '"""Triple."""\n# EVOLVE-BLOCK-START\ndef double(x):\n    return 3 * x\n# EVOLVE-BLOCK-END\n'
    )
    r = subprocess.run(
        [sys.executable, str(PROBLEM / "evaluator.py"), str(blocks_only), "train"],
        capture_output=True,
        text=True,
        env=env(),
        timeout=60,
    )
    assert json.loads(r.stdout)["error"] == "wrong doubles"


def test_a_worker_imports_its_libraries_when_pytest_runs_as_main():
    """`python -m pytest` makes site-packages hold a private folder (pytest's, __main__'s):
    the worker gets its entries one by one and its listing, which the import system needs
    to find numpy there (without it: "No module named 'numpy'")."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_problem_conformance.py", "-k", "dag_modular and bad_processor"],
        capture_output=True, text=True, cwd=ROOT, env=env(), timeout=600,
    )  # fmt: skip
    assert r.returncode == 0 and "2 passed" in r.stdout, r.stdout[-3000:]
