"""`evolve check` names the modules a folder's code imports that the sandbox running it
lacks, with the line that installs them: for the local sandbox, what this interpreter cannot
import; for Docker, what the image cannot (asked once). Never the standard library, the
folder's own modules, the kit, the stand-in `openevolve`, or an import guarded by
`except ImportError`."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.problem.imports import (
    MissingModule,
    candidates,
    docker_lines,
    imported_modules,
    missing_here,
    missing_in_image,
)
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import evolve
from tests.support.docker_support import docker_image  # noqa: F401  (a session fixture)

MISSING = "definitely_not_installed_xyz"
EVALUATOR = f'''"""Imports what a real evaluator might: the stdlib, numpy, a sibling, the stand-in."""

import importlib.util
import json

import numpy as np
from openevolve.evaluation_result import EvaluationResult

import helper

try:
    import optional_missing_qqq  # an optional speed-up: its absence is expected
except ImportError:
    optional_missing_qqq = None


def _plot():  # never called by evaluate(): the check still names what it imports
    import {MISSING}

    return {MISSING}


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    program = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(program)
    value = float(np.float64(program.value())) + helper.BONUS
    return EvaluationResult(metrics={{"combined_score": value}}, artifacts={{"j": json.dumps(1)}})
'''
HELPER = """BONUS = 0.5


def later():
    from another_missing_mod_abc.sub import thing

    return thing
"""
SEED = """import math


def value():
    return math.sqrt(0.25)
"""


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "imports"
    root.mkdir()
    (root / "evaluator.py").write_text(EVALUATOR)
    (root / "helper.py").write_text(HELPER)
    (root / "initial_program.py").write_text(SEED)
    return root


def test_imported_modules_are_top_level_names_less_guarded_ones():
    tree = ast.parse(EVALUATOR)
    assert imported_modules(tree) == {
        "importlib", "json", "numpy", "openevolve", "helper", MISSING,
    }  # fmt: skip


def test_only_what_this_interpreter_lacks_is_missing(folder):
    problem = load_problem(folder)
    assert set(candidates(problem)) == {"numpy", MISSING, "another_missing_mod_abc"}
    missing = missing_here(problem)
    assert [(m.module, m.files) for m in missing] == [
        ("another_missing_mod_abc", ("helper.py",)),
        (MISSING, ("evaluator.py",)),
    ]


def test_check_names_the_missing_module_with_its_install_line(folder):
    r = evolve("check", folder, "--sandbox", "local")
    assert r.returncode == 0, r.stderr  # a warning: the seed still evaluates cleanly
    warnings = [ln for ln in r.stdout.splitlines() if ln.startswith("  warning:")]
    assert (
        f"  warning: {MISSING} (imported by evaluator.py) is not installed for the local "
        in (warnings[1])
    )
    assert warnings[1].endswith(f": pip install {MISSING}")
    assert warnings[0].startswith("  warning: another_missing_mod_abc (imported by helper.py)")
    assert len(warnings) == 2 and "numpy" not in r.stdout and "optional_missing" not in r.stdout
    assert r.stdout.splitlines()[-1] == "ok"


def test_a_declared_requirement_is_said_once(folder):
    """requirements.txt's own warning already names a declared module this Python lacks."""
    (folder / "requirements.txt").write_text(f"{MISSING}==1.0\n")
    r = evolve("check", folder, "--sandbox", "local")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count(MISSING) == 1 and "requirements.txt: not installed here" in r.stdout


def test_the_docker_image_is_asked(folder, docker_image):  # noqa: F811
    """Against the sandbox image."""
    from tests.support.docker_support import engine

    missing = missing_in_image(load_problem(folder), engine(), docker_image)
    assert [m.module for m in missing] == ["another_missing_mod_abc", MISSING]  # numpy is there


class Engine:
    """Stands in for the Docker engine: runs the container's command with this Python, which
    has numpy as the image does (the real image: the test above, where one is built)."""

    def __init__(self) -> None:
        self.containers = self
        self.runs: list[dict] = []

    def run(self, image: str, command: list[str], **options) -> bytes:
        self.runs.append({"image": image, **options})
        assert command[0] == "python3"
        return subprocess.run(
            [sys.executable, *command[1:]], capture_output=True, check=True
        ).stdout


def test_the_image_is_asked_once_offline_for_every_name(folder):
    engine = Engine()
    missing = missing_in_image(load_problem(folder), engine, "evolve-sandbox:x")
    assert [m.module for m in missing] == ["another_missing_mod_abc", MISSING]
    [run] = engine.runs
    assert run["image"] == "evolve-sandbox:x" and run["network_mode"] == "none"


def test_docker_lines_name_the_requirements_line_and_what_stands_in_its_way(folder):
    problem = load_problem(folder)
    found = [
        MissingModule(MISSING, ("evaluator.py",), MISSING),
        MissingModule("torch", ("evaluator.py",), "torch"),
        MissingModule("pyspark", ("helper.py",), "pyspark"),
    ]
    plain, torch, spark = docker_lines(problem, found, "evolve-sandbox:x")
    assert plain == (
        f"  warning: {MISSING} (imported by evaluator.py) is not in the sandbox image "
        f"evolve-sandbox:x: add a line `{MISSING}` to {folder / 'requirements.txt'} "
        "(the Docker sandbox layers it on the image)"
    )
    assert "several GB of NVIDIA CUDA libraries" in torch
    assert "--extra-index-url https://download.pytorch.org/whl/cpu" in torch
    assert "sdist only" in spark and "Java runtime" in spark
