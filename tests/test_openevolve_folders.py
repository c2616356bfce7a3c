"""OpenEvolve-format folders run unchanged under `evolve eval`.

Each folder in tests/fixtures/openevolve/ does one thing real OpenEvolve examples do
(data opened relative to the cwd, sibling imports, files written beside the evaluator,
EvaluationResult, a cascade, its own stdout/stderr artifacts, an environment
variable). `evolve eval --json` must score each program as its evaluator does when a
user calls evaluate() from the folder (OpenEvolve's rule: combined_score, else the
average of the numeric, non-bool metrics), and must leave the folder as it was.

The folders are evaluated in copies under tmp_path, so the repository's own stay
clean whatever the harness does. bench/openevolve_compat.py compares the same
programs with OpenEvolve 0.4.0 itself.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from evolve.testing.cli_helpers import ROOT, evolve
from evolve.testing.cli_helpers import env as cli_env
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)
from tests.support.openevolve_reference import DIRECT_CHILD, openevolve_score

FIXTURES = ROOT / "tests" / "fixtures" / "openevolve"
STAND_IN = (
    ROOT / "evaluators" / "inside" / "openevolve_compat"
)  # where the stand-in `openevolve` lives
SEED = "initial_program.py"
FIXTURE_ENV = ("FIXTURE_MODE",)  # never inherited: only --env passes it

# The fixtures the host venv can evaluate: id -> (folder, program, the evaluator's environment).
HOST_CASES = {
    "relative_data": ("relative_data", SEED, {}),
    "relative_data-better": ("relative_data", "better_program.py", {}),
    "sibling_import": ("sibling_import", SEED, {}),
    "writes_beside": ("writes_beside", SEED, {}),
    "evaluation_result": ("evaluation_result", SEED, {}),
    "cascade_low_seed-better": ("cascade_low_seed", "better_program.py", {}),
    "stdout_artifact": ("stdout_artifact", SEED, {}),
    "needs_env": ("needs_env", SEED, {"FIXTURE_MODE": "fast"}),
}
# The fixtures that need the Docker image's packages (or a requirements.txt layered on it),
# with the seed's score, computed with pandas 2 / scipy 1.1x / networkx 3 and tabulate 0.9.0
# (bench/openevolve_compat.py computes it with OpenEvolve too); used when this interpreter
# cannot call the evaluator itself.
DOCKER_CASES = {
    "scientific": (("pandas", "scipy", "networkx"), 0.6835578785607814),
    "requirements_txt": (("tabulate",), 0.6000000000000001),
}
PRINTED_OUT = "stdout_artifact: progress line printed to the real stdout"
PRINTED_ERR = "stdout_artifact: warning printed to the real stderr"


def copy_fixture(name: str, dest: Path) -> Path:
    shutil.copytree(FIXTURES / name, dest, ignore=shutil.ignore_patterns("__pycache__"))
    return dest


def direct(
    name: str,
    workdir: Path,
    program: str = SEED,
    function: str = "evaluate",
    env: dict[str, str] | None = None,
) -> dict:
    """{"metrics", "artifacts"} of `function(program)`, called in a fresh copy of the folder
    with the stand-in `openevolve` package on PYTHONPATH."""
    folder = copy_fixture(name, workdir / f"direct-{function}-{Path(program).stem}")
    out = workdir / f"direct-{function}-{Path(program).stem}.json"
    child_env = {k: v for k, v in os.environ.items() if k not in FIXTURE_ENV}
    child_env["PYTHONPATH"] = str(STAND_IN)
    child_env["PYTHONDONTWRITEBYTECODE"] = "1"
    child_env.update(env or {})
    r = subprocess.run(
        [sys.executable, "-c", DIRECT_CHILD, str(folder / program), function, str(out)],
        cwd=folder,
        env=child_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, f"{name}: {function}({program}) called directly failed:\n{r.stderr}"
    return json.loads(out.read_text())


def snapshot(folder: Path) -> dict[str, str]:
    """Every path under `folder` with its content's hash ("dir" for a folder)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        rel = str(p.relative_to(folder))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass
class Run:
    returncode: int
    out: dict | None  # the --json object, when one was printed
    stderr: str

    def why(self) -> str:
        return (
            f"exit {self.returncode}\nstdout: {json.dumps(self.out)}\nstderr: {self.stderr[-3000:]}"
        )


def evolve_eval(
    folder: Path, program: str, *flags: str, sandbox: str = "local", extra_env: dict | None = None
) -> Run:
    """`evolve eval FOLDER PROGRAM --json --sandbox SANDBOX FLAGS` in a subprocess; the
    fixtures' variables are not in its environment unless `extra_env` puts them there."""
    env = {k: v for k, v in cli_env().items() if k not in FIXTURE_ENV}
    env.update(extra_env or {})
    r = subprocess.run(
        [sys.executable, "-m", "evolve.cli", "eval", str(folder), str(folder / program),
         "--json", "--sandbox", sandbox, *flags],
        capture_output=True, text=True, timeout=240, env=env, cwd=ROOT,
    )  # fmt: skip
    out = None
    for line in reversed(r.stdout.strip().splitlines()):
        try:
            out = json.loads(line)
            break
        except ValueError:
            continue
    return Run(r.returncode, out if isinstance(out, dict) else None, r.stderr)


def assert_ok(run: Run) -> dict:
    assert run.out is not None, run.why()
    assert run.out["status"] == "ok" and run.returncode == 0, run.why()
    assert isinstance(run.out["score"], (int, float)), run.why()
    return run.out


def env_flags(env: dict[str, str]) -> list[str]:
    return [x for k, v in env.items() for x in ("--env", f"{k}={v}")]


@dataclass
class Evaluated:
    folder: Path
    before: dict[str, str]
    after: dict[str, str]
    run: Run


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """One `evolve eval --sandbox local` per host case, shared by the tests that read it."""
    done: dict[str, Evaluated] = {}

    def get(case: str) -> Evaluated:
        if case not in done:
            name, program, env = HOST_CASES[case]
            folder = copy_fixture(name, tmp_path_factory.mktemp(case) / name)
            before = snapshot(folder)
            run = evolve_eval(folder, program, *env_flags(env))
            done[case] = Evaluated(folder, before, snapshot(folder), run)
        return done[case]

    return get


@pytest.mark.parametrize("case", list(HOST_CASES))
def test_score_equals_the_direct_call(case, evaluated, tmp_path):
    name, program, env = HOST_CASES[case]
    expected = openevolve_score(direct(name, tmp_path, program, env=env)["metrics"])
    out = assert_ok(evaluated(case).run)
    assert out["score"] == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("case", list(HOST_CASES))
def test_folder_is_unchanged_after_evaluation(case, evaluated):
    """No exp/, cache file or __pycache__ leaks into the problem folder: the evaluator
    ran in a private copy (checked after an evaluation that really ran, and wrote)."""
    ev = evaluated(case)
    assert_ok(ev.run)
    assert ev.after == ev.before, sorted(set(ev.after.items()) ^ set(ev.before.items()))


def _cascade(tmp_path: Path, program: str) -> tuple[dict, dict, list[float]]:
    stage1 = direct("cascade_low_seed", tmp_path, program, "evaluate_stage1")["metrics"]
    stage2 = direct("cascade_low_seed", tmp_path, program, "evaluate_stage2")["metrics"]
    config = yaml.safe_load((FIXTURES / "cascade_low_seed" / "config.yaml").read_text())
    return stage1, stage2, config["evaluator"]["cascade_thresholds"]


def test_cascade_seed_below_the_first_threshold_keeps_its_stage1_score(tmp_path):
    stage1, _, thresholds = _cascade(tmp_path, SEED)
    expected = openevolve_score(stage1)
    assert expected < thresholds[0]  # the fixture's premise
    folder = copy_fixture("cascade_low_seed", tmp_path / "problem")
    out = assert_ok(evolve_eval(folder, SEED))
    assert out["score"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert "range_accuracy" not in out["metrics"], "stage 2 ran for a program stage 1 stopped"


def test_cascade_passing_program_scores_the_average_of_the_merged_stages(tmp_path):
    stage1, stage2, thresholds = _cascade(tmp_path, "better_program.py")
    assert openevolve_score(stage1) >= thresholds[0]
    merged = {
        k: float(v)
        for metrics in (stage1, stage2)
        for k, v in metrics.items()
        if isinstance(v, (int, float)) and k != "error"
    }
    expected = openevolve_score(merged)
    assert expected != pytest.approx(openevolve_score(stage2))  # the fixture's premise
    folder = copy_fixture("cascade_low_seed", tmp_path / "problem")
    out = assert_ok(evolve_eval(folder, "better_program.py"))
    assert out["score"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    for k, v in merged.items():
        assert out["metrics"].get(k) == pytest.approx(v), (k, out["metrics"])


def test_evaluator_stdout_stderr_artifacts_win_and_the_printed_output_is_kept(evaluated, tmp_path):
    own = direct("stdout_artifact", tmp_path)["artifacts"]
    out = assert_ok(evaluated("stdout_artifact").run)
    arts = out["artifacts"]
    assert own["stdout"] in arts.get("stdout", ""), arts
    assert own["stderr"] in arts.get("stderr", ""), arts
    others = [str(v) for k, v in arts.items() if k not in ("stdout", "stderr")]
    assert any(PRINTED_OUT in v for v in others), arts
    assert any(PRINTED_ERR in v for v in others), arts


def test_needs_env_fails_without_env(tmp_path):
    folder = copy_fixture("needs_env", tmp_path / "needs_env")
    run = evolve_eval(folder, SEED)
    assert run.returncode != 0, run.why()
    assert run.out is None or run.out["status"] != "ok", run.why()
    assert "FIXTURE_MODE" in json.dumps(run.out) + run.stderr, run.why()


def test_needs_env_takes_a_bare_name_from_the_callers_environment(tmp_path):
    expected = openevolve_score(
        direct("needs_env", tmp_path, env={"FIXTURE_MODE": "fast"})["metrics"]
    )
    folder = copy_fixture("needs_env", tmp_path / "needs_env")
    run = evolve_eval(folder, SEED, "--env", "FIXTURE_MODE", extra_env={"FIXTURE_MODE": "fast"})
    assert assert_ok(run)["score"] == pytest.approx(expected, rel=1e-9, abs=1e-12)


@pytest.mark.parametrize("name", list(DOCKER_CASES))
def test_docker_folder_scores_as_its_evaluator(name, docker_image, tmp_path):  # noqa: F811
    modules, known = DOCKER_CASES[name]
    if all(importlib.util.find_spec(m) is not None for m in modules):
        expected = openevolve_score(direct(name, tmp_path)["metrics"])
    else:  # this venv lacks the packages the image has
        expected = known
    folder = copy_fixture(name, tmp_path / name)
    before = snapshot(folder)
    image = {"EVOLVE_SANDBOX_IMAGE": docker_image}  # the image the session found or built
    out = assert_ok(evolve_eval(folder, SEED, sandbox="docker", extra_env=image))
    assert out["score"] == pytest.approx(expected, rel=1e-9, abs=1e-12)
    assert snapshot(folder) == before


def test_a_run_layers_the_folders_requirements_on_the_docker_image(docker_image, tmp_path):  # noqa: F811
    """`evolve run` (not only eval) gives a Docker run the folder's requirements.txt: the
    seed, which imports tabulate, scores as in `evolve eval`."""
    folder = copy_fixture("requirements_txt", tmp_path / "requirements_txt")
    runs = tmp_path / "runs"
    r = subprocess.run(
        [sys.executable, "-m", "evolve.cli", "run", str(folder), "--iterations", "0",
         "--sandbox", "docker", "--api-base", "http://127.0.0.1:9/v1", "--model", "scripted",
         "--runs-dir", str(runs), "--no-progress"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
        env={**cli_env(), "EVOLVE_SANDBOX_IMAGE": docker_image},
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    best = subprocess.run(
        [sys.executable, "-m", "evolve.cli", "archive", "best", "--json", "--runs-dir", str(runs)],
        capture_output=True, text=True, timeout=60, cwd=ROOT, env=cli_env(),
    )  # fmt: skip
    rows = json.loads(best.stdout)
    row = rows[0] if isinstance(rows, list) else rows
    assert row["score"] == pytest.approx(DOCKER_CASES["requirements_txt"][1], rel=1e-9)


ASYNC_EVALUATOR = """
import asyncio
import importlib.util


async def evaluate(program_path):
    await asyncio.sleep(0)
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"combined_score": float(module.run())}
"""


def test_an_async_evaluate_is_awaited(tmp_path):
    """OpenEvolve 0.4.1 never awaits `async def evaluate` (it stores 0.0); we await it, and
    `check` no longer reports it missing."""
    folder = tmp_path / "async_eval"
    folder.mkdir()
    (folder / "evaluator.py").write_text(ASYNC_EVALUATOR)
    (folder / "initial_program.py").write_text(
        "# EVOLVE-BLOCK-START\ndef run():\n    return 0.625\n# EVOLVE-BLOCK-END\n"
    )
    checked = evolve("check", folder, "--sandbox", "local")
    assert checked.returncode == 0, checked.stderr[-1500:]
    r = evolve("eval", folder, folder / "initial_program.py", "--sandbox", "local", "--json")
    assert r.returncode == 0, r.stderr[-1500:]
    got = json.loads(r.stdout)
    assert (got["status"], got["score"]) == ("ok", 0.625), got


# as OpenEvolve's attention_optimization checks what it is given
TMP_PATH_EVALUATOR = """
import importlib.util
import os

from openevolve.evaluation_result import EvaluationResult

SEEN = []


def evaluate(program_path):
    if not (program_path.startswith("/tmp/tmp") and program_path.endswith(".py")):
        return {"error": 1000.0}
    if program_path in SEEN or not os.path.isfile(program_path):
        return {"error": 999.0}
    SEEN.append(program_path)
    spec = importlib.util.spec_from_file_location("program", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return EvaluationResult({"combined_score": float(module.run())}, {"path": program_path})
"""


@pytest.mark.parametrize("sandbox", ["local", "fallback", "docker"])
def test_the_candidate_lies_where_openevolve_writes_it(sandbox, request, tmp_path):
    """A uniquely named .py file under /tmp, as OpenEvolve's NamedTemporaryFile: an evaluator
    that accepts no other path scored every candidate as its worst (1000.0: the best score a
    run could reach, under OpenEvolve's rule of averaging the numeric metrics)."""
    extra = {"EVOLVE_LOCAL_ISOLATION": "off"} if sandbox == "fallback" else {}
    if sandbox == "docker":
        extra["EVOLVE_SANDBOX_IMAGE"] = request.getfixturevalue("docker_image")
    folder = tmp_path / "tmp_path"
    folder.mkdir()
    (folder / "evaluator.py").write_text(TMP_PATH_EVALUATOR)
    (folder / SEED).write_text(
        "# EVOLVE-BLOCK-START\ndef run():\n    return 0.375\n# EVOLVE-BLOCK-END\n"
    )
    run = evolve_eval(
        folder, SEED, sandbox="local" if sandbox == "fallback" else sandbox, extra_env=extra
    )
    out = assert_ok(run)
    assert out["score"] == 0.375, run.why()
    assert not Path(out["artifacts"]["path"]).exists()  # the machine's own /tmp, without namespaces
