"""The local sandbox without namespaces (EVOLVE_LOCAL_ISOLATION=off, or no bubblewrap).

As root the candidate runs as a slot uid with no capability at all: a root-only file and
/etc/shadow are out of its reach, native and OpenEvolve-format alike, while the
interpreter (here under /root, mode 0700) and a problem in a 0700 folder still run. An
OpenEvolve-format candidate is also Landlocked: even a file every uid may read is not
its to read.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.backends import ISOLATION_ENV, make_sandbox
from evaluators.inside import landlock
from evaluators.local import reachable
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Sandbox, Status

FIXTURES = Path(__file__).parent / "fixtures" / "sandbox_native"
LIMITS = Limits(timeout_s=30.0, memory_mb=1024, max_procs=24, max_file_mb=8, max_output_kb=16)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the slot uids need root")

OPENEVOLVE_EVALUATOR = """
import importlib.util
from dataclasses import dataclass, field


@dataclass
class EvaluationResult:
    metrics: dict
    artifacts: dict = field(default_factory=dict)


def evaluate(program_path):
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return EvaluationResult({"combined_score": float(module.run())}, {"info": module.INFO})
"""


@pytest.fixture
def fallback(monkeypatch) -> Iterator[Sandbox]:
    monkeypatch.setenv(ISOLATION_ENV, "off")
    sandbox = make_sandbox("local", 1)
    yield sandbox
    sandbox.close()


@pytest.fixture
def outside() -> Iterator[Path]:
    """A folder outside every sandbox folder that every uid may walk into."""
    folder = Path(tempfile.mkdtemp(prefix="evolve-fallback-test-", dir="/var/tmp"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def _secret(folder: Path, mode: int) -> Path:
    path = folder / f"secret-{mode:o}"
    path.write_text("canary-secret")
    os.chown(path, 0, 0)
    path.chmod(mode)
    return path


def _reader(paths: list[str], entry: str) -> str:
    """A candidate that tries to read each path and reports what it got as INFO."""
    return textwrap.dedent(f"""
        import json
        seen = {{}}
        for p in {paths!r}:
            try:
                with open(p) as f:
                    seen[p] = 'read ' + f.read()[:40]
            except OSError as e:
                seen[p] = 'error ' + str(e.errno)
        INFO = json.dumps(seen)
        def {entry}():
            return 0.5
    """)


def _evaluate(sandbox: Sandbox, problem: Path, code: str, fmt: str) -> EvalResult:
    return sandbox.evaluate(
        EvalRequest(
            problem_dir=str(problem),
            program_code=code,
            program_name="cand.py",
            split="train",
            limits=LIMITS,
            fmt=fmt,
        )
    )


def _problem(tmp_path: Path, fmt: str) -> Path:
    """The problem in pytest's 0700 temp folder: the slot uid reaches it only through a view."""
    problem = tmp_path / fmt
    if fmt == "native":
        shutil.copytree(FIXTURES / "direct", problem)
    else:
        problem.mkdir()
        (problem / "evaluator.py").write_text(OPENEVOLVE_EVALUATOR)
    return problem


@pytest.mark.parametrize("fmt", ["native", "openevolve"])
def test_root_only_files_are_out_of_reach(fallback, outside, tmp_path, fmt) -> None:
    assert not reachable.searchable(str(tmp_path / "x"))  # what the view is for
    secret = _secret(outside, 0o600)
    paths = [str(secret), "/etc/shadow"]
    code = _reader(paths, "solve" if fmt == "native" else "run")
    res = _evaluate(fallback, _problem(tmp_path, fmt), code, fmt)
    assert res.status == Status.OK, res.artifacts
    seen = json.loads(res.artifacts["info"])
    assert "canary-secret" not in res.artifacts["info"]
    for p in paths:
        assert seen[p].startswith("error "), (p, seen[p])


@pytest.mark.skipif(landlock.abi_version() < 1, reason="no Landlock in this kernel")
def test_an_openevolve_candidate_reads_no_file_outside_its_grants(fallback, outside, tmp_path):
    readable = _secret(outside, 0o644)  # any uid may read it: only Landlock stops the read
    res = _evaluate(
        fallback, _problem(tmp_path, "openevolve"), _reader([str(readable)], "run"), "openevolve"
    )
    assert res.status == Status.OK, res.artifacts
    assert json.loads(res.artifacts["info"])[str(readable)].startswith("error ")


@pytest.mark.skipif(landlock.abi_version() < 1, reason="no Landlock in this kernel")
def test_an_openevolve_candidate_lists_its_temporary_folder_but_reads_no_other_file_there(
    fallback, tmp_path
):
    """Its program copy lies in /tmp (the host's, without bubblewrap): the folder may be listed
    (evaluators import the copy by name) and nothing else in it read."""
    folder = Path(tempfile.mkdtemp(prefix="evolve-fallback-test-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        readable = _secret(folder, 0o644)
        res = _evaluate(
            fallback,
            _problem(tmp_path, "openevolve"),
            _reader([str(readable)], "run"),
            "openevolve",
        )
        assert res.status == Status.OK, res.artifacts
        assert json.loads(res.artifacts["info"])[str(readable)].startswith("error ")
    finally:
        shutil.rmtree(folder)
