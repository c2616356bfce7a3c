"""The package a user installs with `pip install .` runs a problem on its own.

Builds the wheel as `python -m build` does, installs it (not editable) into a
fresh virtual environment, and runs `evolve check` and a one-iteration run from
a folder outside the checkout, so nothing can come from the source tree: the
prompt templates, the harness, the kit and the image inputs must all be in the
wheel. The dependencies come from this test's own environment (through a .pth
file) so the test needs no network.
"""

from __future__ import annotations

import json
import site
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from evolve.testing.cli_helpers import BINPACK, ROOT, env
from evolve.testing.scripted_llm import ScriptedLLM, binpack_reply

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--wheel",
            "--no-isolation",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    (path,) = out.glob("evolve-*.whl")
    return path


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv with the wheel installed, borrowing only third-party packages from ours."""
    root = tmp_path_factory.mktemp("venv")
    root.chmod(0o755)  # as root, the sandbox's uid must read the interpreter's environment
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120
    )
    target = next(root.glob("lib/python3*/site-packages"))
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(root / "bin" / "python"),
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    (target / "zz_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    return root


def test_wheel_carries_what_runs_need(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in (
        "evolve/prompt_templates/__init__.py",
        "evolve/prompt_templates/system.j2",
        "evolve/prompt_templates/diff.j2",
        "evaluators/inside/harness.py",
        "evaluators/kit.py",
        "evaluators/inside/kit.py",
        "evaluators/inside/worker.py",
        "evaluators/inside/openevolve_compat/openevolve/evaluation_result.py",
        "evaluators/inside/shinka_run.py",
        "evaluators/inside/shinka_compat/shinka/core/wrap_eval.py",
        "evaluators/docker/agent.py",
        "evaluators/docker/build-base.sh",
        "evaluators/docker/packages.txt",
        "evaluators/docker/Dockerfile.layer",
        "evaluators/docker/Dockerfile",
        "evolve/web/templates/run.html",
        "evolve/web/templates/base.html",
        "evolve/web/static/live.js",
        "evolve/web/static/app.css",
    ):
        assert needed in names, needed
    # no top-level `prompts` package: the templates are evolve.prompt_templates
    assert not any(n.startswith(("tests/", "problems/", "bench/", "prompts/")) for n in names)


def _evolve(venv: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    clean = env(PYTHONPATH="", HOME=str(cwd))
    clean.pop("PYTHONPATH")
    return subprocess.run(
        [str(venv / "bin" / "evolve"), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=clean,
    )


def test_installed_wheel_checks_and_runs_a_problem(venv, tmp_path):
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import evolve, evaluators; from evolve import prompt_templates as p; "
            "print(evolve.__file__); print(evaluators.__file__); print(p.__file__); "
            "print(sorted(x.name for x in p.TEMPLATES_DIR.glob('system*.j2')))",
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env(),
    )
    assert where.returncode == 0, where.stderr
    *files, templates = where.stdout.splitlines()
    assert all(line.startswith(str(venv)) for line in files), where.stdout
    assert templates == "['system.j2', 'system_short.j2']", where.stdout

    r = _evolve(venv, tmp_path, "check", str(BINPACK), "--sandbox", "local")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ok" in r.stdout.splitlines()[-1]

    with ScriptedLLM.from_list([binpack_reply("funsearch_weibull")]) as llm:
        r = _evolve(
            venv,
            tmp_path,
            "run",
            str(BINPACK),
            "--iterations",
            "1",
            "--api-base",
            llm.base_url,
            "--model",
            "scripted",
            "--runs-dir",
            str(tmp_path / "runs"),
            "--no-progress",
            "--sandbox",
            "local",
            "--tune-evals",
            "0",
        )
        assert r.returncode == 0, r.stdout + r.stderr
        prompt = llm.requests[0]["messages"]
    assert any("priority" in m["content"] for m in prompt)  # the packaged templates rendered
    best = _evolve(
        venv, tmp_path, "archive", "best", "--json", "--runs-dir", str(tmp_path / "runs")
    )
    assert best.returncode == 0, best.stderr
    # FunSearch's Weibull heuristic (-0.736) beat the best-fit seed (-3.884)
    assert json.loads(best.stdout)["score"] > -1.0

    # the web view's pages and scripts, and the report, come from the installed package
    run_id = json.loads(best.stdout)["run_id"]
    page = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sys; from starlette.testclient import TestClient; from evolve.web.app import make_app;"
            "c = TestClient(make_app(sys.argv[1])); r = c.get('/runs/' + sys.argv[2]);"
            "assert r.status_code == 200 and 'chart-score' in r.text, r.text[:300];"
            "assert c.get('/static/live.js').status_code == 200; print('ok')",
            str(tmp_path / "runs"),
            run_id,
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env(),
    )
    assert page.stdout.strip() == "ok", page.stderr
    r = _evolve(
        venv,
        tmp_path,
        "archive",
        "report",
        run_id,
        "--out",
        str(tmp_path / "r.html"),
        "--runs-dir",
        str(tmp_path / "runs"),
    )
    assert r.returncode == 0 and "<svg" in (tmp_path / "r.html").read_text(), r.stderr
