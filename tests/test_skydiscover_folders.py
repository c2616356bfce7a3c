"""SkyDiscover's containerized folders (initial_program.py, config.yaml, evaluator/ with
evaluate.sh and a Dockerfile) run unchanged; Harbor tasks are refused in one line.

tests/fixtures/skydiscover/pick is a small problem in SkyDiscover's layout (its repository
since March 2026): evaluate.sh PROGRAM MODE runs evaluator.py from /benchmark, which reads
values.json by a relative path, PICK_K from the Dockerfile's ENV and the mode's values, and
prints one JSON object (status, combined_score, metrics, artifacts) as SkyDiscover's
ContainerizedEvaluator reads it. The expected scores are the fraction of the best sum:
train [4, 9, 1, 7, 3, 8], test [2, 6, 5, 10, 1, 4], k = 3.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evolve.problem.load import load_problem
from evolve.problem.model import ProblemError
from evolve.testing.cli_helpers import OPENEVOLVE_FIXTURE, ROOT, evolve, last_json
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

FIXTURE = ROOT / "tests" / "fixtures" / "skydiscover" / "pick"
SEED_TRAIN = (4 + 9 + 1) / (9 + 8 + 7)
SEED_TEST = (2 + 6 + 5) / (10 + 6 + 5)
BEST = "def pick(values, k):\n    return sorted(range(len(values)), key=values.__getitem__)[-k:]\n"
TWICE = "def pick(values, k):\n    return [0] * k\n"
RAISES = "def pick(values, k):\n    raise ValueError('no idea')\n"


def copy(dest: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, dest / "pick"))


def evolve_eval(folder: Path, code: str, where: Path, *flags: str, **kw) -> dict:
    program = where / "cand.py"
    program.write_text(code)
    return last_json(evolve("eval", str(folder), str(program), "--json", *flags, **kw))


def test_the_folder_is_read_as_skydiscover_reads_it(monkeypatch):
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    monkeypatch.delenv("GOOGLE_API_KEY", raising=False)
    p = load_problem(FIXTURE)
    assert (p.fmt, p.entry, p.metric, p.benchmark) == (
        "skydiscover",
        "initial_program.py",
        "combined_score",
        "evaluator",
    )
    assert (p.splits, p.train_split, p.test_split) == (("train", "test"), "train", "test")
    assert (p.timeout_s, p.iterations, p.edit_format, p.max_code_bytes) == (60.0, 5, "full", 20000)
    assert p.env == {"PICK_K": "3"} and not p.test_is_train
    (model,) = p.llm.models
    assert model.name == "gemini-3-pro" and model.api_key == "${GEMINI_API_KEY}"
    assert model.api_base == "https://generativelanguage.googleapis.com/v1beta/openai/"
    notices = "\n".join(p.notices)
    assert "FROM python:3.12-slim: the sandbox's own Python stands in" in notices
    assert "search.type 'evox': SkyDiscover's own algorithm" in notices


def test_skydiscover_defaults_apply_where_the_file_is_silent(tmp_path):
    folder = copy(tmp_path)
    (folder / "config.yaml").write_text("agentic:\n  enabled: true\n  max_steps: 3\n")
    p = load_problem(folder)
    assert (p.edit_format, p.max_code_bytes, p.timeout_s) == ("diff", 60000, 360.0)
    assert p.search["proposer"] == "agent"


def test_check_scores_the_seed_and_says_how(tmp_path):
    r = evolve("check", str(FIXTURE), "--sandbox", "local")
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert (
        "(skydiscover)" in text and "evaluator/evaluate.sh PROGRAM train (held-out: test)" in text
    )
    assert "config.yaml: max_solution_length: largest candidate in bytes" in text
    assert "config.yaml: ignored monitor: SkyDiscover's live dashboard" in text
    # its defaults are SkyDiscover's (EvaluatorConfig.timeout 360 @59643ef), not OpenEvolve's
    assert (
        "evaluator.timeout: wall-clock limit of one evaluation, seconds (--timeout; "
        "default 360 as SkyDiscover)" in text
    )
    assert "300 as OpenEvolve" not in text
    assert f"score {round(SEED_TRAIN, 4)}" in text or f"score {SEED_TRAIN:.6g}" in text, text
    assert "not independent" not in text


@pytest.mark.parametrize("split, score", [("train", SEED_TRAIN), ("test", SEED_TEST)])
def test_the_mode_is_the_split(split, score, tmp_path):
    seed = (FIXTURE / "initial_program.py").read_text()
    out = evolve_eval(FIXTURE, seed, tmp_path, "--sandbox", "local", "--split", split)
    assert out["status"] == "ok" and out["score"] == pytest.approx(score), out
    assert out["metrics"]["picked"] == 3.0


@pytest.mark.parametrize(
    "code, status, error",
    [
        (BEST, "ok", None),
        (TWICE, "runtime_error", "evaluate.sh reported status 'error': expected 3 distinct"),
        (RAISES, "runtime_error", "evaluate.sh reported status 'error': no idea"),
    ],
)
def test_candidates_score_and_fail_by_the_scripts_status(code, status, error, tmp_path):
    out = evolve_eval(FIXTURE, code, tmp_path, "--sandbox", "local")
    assert out["status"] == status, out
    if error is None:
        assert out["score"] == 1.0
    else:
        assert out["score"] is None and out["artifacts"]["error"].startswith(error), out


@pytest.mark.parametrize(
    "script, error",
    [
        ("exit 3", "evaluate.sh exited with code 3"),
        (
            "echo \"ModuleNotFoundError: No module named 'scipy'\" >&2; exit 1",
            "evaluate.sh exited with code 1: ModuleNotFoundError: No module named 'scipy'",
        ),
        ("echo 'score: 1.0'", "evaluate.sh printed no JSON object on stdout (got 'score: 1.0')"),
        (
            'echo \'{"status": "success", "metrics": {}}\'',
            "evaluate.sh's JSON has no combined_score",
        ),
    ],
)
def test_a_failing_script_fails_the_candidate(script, error, tmp_path):
    folder = copy(tmp_path)
    (folder / "evaluator" / "evaluate.sh").write_text(f"#!/usr/bin/env bash\n{script}\n")
    out = evolve_eval(folder, BEST, tmp_path, "--sandbox", "local")
    assert out["status"] == "runtime_error" and out["artifacts"]["error"] == error, out


def test_a_script_that_ignores_its_mode_is_said_to(tmp_path):
    folder = copy(tmp_path)
    script = folder / "evaluator" / "evaluate.sh"
    text = script.read_text().replace('MODE="${2:-train}"', "# MODE ($2) ignored\nMODE=train")
    script.write_text(text)
    assert load_problem(folder).test_is_train
    r = evolve("check", str(folder), "--sandbox", "local")
    assert "held-out scores are not independent" in r.stdout + r.stderr


def test_the_run_page_says_held_out_scores_are_not_independent(tmp_path):
    from starlette.testclient import TestClient

    from evolve.testing.cli_helpers import run_args
    from evolve.testing.scripted_llm import ScriptedLLM
    from evolve.web.app import make_app

    folder = copy(tmp_path)
    script = folder / "evaluator" / "evaluate.sh"
    script.write_text(script.read_text().replace('MODE="${2:-train}"', "MODE=train"))
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list([f"Best.\n\n```python\n{BEST}```\n"]) as srv:
        r = evolve(*run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--tune-evals", "0",
                             problem=folder, iterations=1), timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "held-out scores are not independent" in r.stderr  # said when the run starts
    client = TestClient(make_app(runs))
    (run,) = client.get("/api/runs").json()
    page = client.get(f"/runs/{run['run_id']}").text
    assert 'id="held-out-note"' in page and "held-out scores are not independent" in page


@pytest.mark.parametrize(
    "line, named",
    [
        ("RUN apt-get update && apt-get install -y gcc", "Dockerfile:12: RUN apt-get update"),
        ("FROM nvidia/cuda:12.2.0-runtime-ubuntu22.04", "a second FROM"),
        ("USER nobody", "Dockerfile:12: USER nobody: not supported by evolve's sandbox"),
        (
            "RUN pip install --index-url https://x.example/simple torch",
            "Dockerfile:12: RUN pip install --index-url https://x.example/simple torch: evolve "
            "layers plain requirements only: the option --index-url",
        ),
        ("RUN pip install -e .", "RUN pip install -e .: evolve layers plain requirements only"),
        ("RUN pip install git+https://x.example/r.git", "is no plain requirement"),
        ("COPY --from=builder /out /benchmark", "only a COPY of the folder's own files"),
    ],
)
def test_a_dockerfile_asking_for_more_is_refused_in_one_line(line, named, tmp_path):
    folder = copy(tmp_path)
    dockerfile = folder / "evaluator" / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + line + "\n")
    with pytest.raises(ProblemError, match=None) as e:
        load_problem(folder)
    assert named in str(e.value) and "\n" not in str(e.value), str(e.value)
    r = evolve("check", str(folder), "--sandbox", "local")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1, r.stderr


def test_another_base_image_is_refused(tmp_path):
    folder = copy(tmp_path)
    dockerfile = folder / "evaluator" / "Dockerfile"
    text = dockerfile.read_text().replace("FROM python:3.12-slim", "FROM ubuntu:22.04")
    dockerfile.write_text(text)
    with pytest.raises(ProblemError, match=r"Dockerfile:1: FROM ubuntu:22.04: evolve evaluates"):
        load_problem(folder)


def test_a_harbor_task_is_refused_in_one_line(tmp_path):
    task = tmp_path / "task"
    (task / "tests").mkdir(parents=True)
    (task / "environment").mkdir()
    (task / "task.toml").write_text('version = "1.0"\n')
    (task / "instruction.md").write_text("Write a fast sort.\n")
    (task / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    (task / "environment" / "Dockerfile").write_text("FROM ubuntu:24.04\n")
    (tmp_path / "solution.py").write_text("print(1)\n")
    for command in (["check"], ["eval", str(tmp_path / "solution.py")], ["run"]):
        r = evolve(command[0], str(task), *command[1:])
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert r.returncode == 2 and len(lines) == 1, r.stderr
        assert "a Harbor task" in lines[0] and "no seed program" in lines[0]
        assert "base image" in lines[0]


def test_openevolve_folders_get_skydiscovers_keys(tmp_path):
    folder = Path(shutil.copytree(OPENEVOLVE_FIXTURE, tmp_path / "oe"))
    config = folder / "config.yaml"
    extra = "diff_based_generation: false\nmax_solution_length: 60000\nagentic:\n  enabled: true\n"
    text = config.read_text().replace("  cascade_thresholds: [0.5]\n", "")
    config.write_text(text.replace("diff_based_evolution: false\n", "") + extra)
    p = load_problem(folder)
    assert (p.fmt, p.edit_format, p.max_code_bytes) == ("openevolve", "full", 60000)
    assert [s.threshold for s in p.cascade] == [0.3, None]  # SkyDiscover's default
    assert p.search["proposer"] == "agent"
    assert "diff_based_generation" not in "\n".join(p.notices)  # honoured, not warned about


def test_a_folder_with_both_runs_evaluator_py_as_skydiscovers_quick_start(tmp_path):
    folder = copy(tmp_path)
    (folder / "evaluator.py").write_text(
        "def evaluate(program_path):\n    return {'combined_score': 0.25}\n"
    )
    p = load_problem(folder)
    assert p.fmt == "openevolve" and p.benchmark is None
    assert any("evaluator: SkyDiscover's containerized evaluator, not used" in n for n in p.notices)
    out = evolve_eval(folder, BEST, tmp_path, "--sandbox", "local")
    assert out["status"] == "ok" and out["score"] == 0.25, out


def test_docker_scores_as_the_local_sandbox(docker_image, tmp_path):  # noqa: F811
    image = {"EVOLVE_SANDBOX_IMAGE": docker_image}
    for split, score in (("train", 1.0), ("test", 1.0)):
        out = evolve_eval(
            FIXTURE, BEST, tmp_path, "--sandbox", "docker", "--split", split, extra_env=image
        )
        assert out["status"] == "ok" and out["score"] == score, out
    seed = (FIXTURE / "initial_program.py").read_text()
    out = evolve_eval(
        FIXTURE, seed, tmp_path, "--sandbox", "docker", "--split", "test", extra_env=image
    )
    assert out["score"] == pytest.approx(SEED_TEST), out


def test_a_scripted_run_scores_by_evaluate_sh_and_rescores_on_test(tmp_path):
    import sqlite3

    from evolve.testing.cli_helpers import run_args
    from evolve.testing.scripted_llm import ScriptedLLM

    def reply(code: str) -> str:
        return f"A new program.\n\n```python\n{code}```\n"

    runs = tmp_path / "runs"
    replies = [reply(TWICE), reply(BEST), reply(RAISES)]
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(*run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--tune-evals", "0",
                             problem=FIXTURE, iterations=3), timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute(
        "SELECT iteration, status, score, test_score FROM programs ORDER BY iteration"
    ).fetchall()
    db.close()
    assert rows[0] == (0, "ok", pytest.approx(SEED_TRAIN), pytest.approx(SEED_TEST))
    assert sorted((status, score) for _, status, score, _ in rows[1:]) == [
        ("ok", 1.0),
        ("runtime_error", None),
        ("runtime_error", None),
    ]
    assert [t for _, _, score, t in rows if score == 1.0] == [1.0]  # re-scored by `test`
    assert "Pick the k largest values." in srv.requests[0]["messages"][0]["content"]


@pytest.mark.parametrize(
    "stdout, status, score, error",
    [
        ('{"status": "success", "combined_score": 0.5}', "ok", 0.5, None),
        ('{"status": "success", "combined_score": 0.1, "metrics": {"combined_score": 0.7}}',
         "ok", 0.7, None),  # SkyDiscover stores the metrics' combined_score when present
        ('{"status": "timeout", "combined_score": 0.0, "metrics": {"x": 1}}', "timeout", None,
         "evaluate.sh reported status 'timeout'"),
        ('{"status": "success", "combined_score": "NaN"}', "runtime_error", None,
         "evaluate.sh's combined_score is 'NaN', expected a number"),
        ("[1, 2]", "runtime_error", None, "evaluate.sh printed no JSON object on stdout"),
    ],
)  # fmt: skip
def test_the_json_is_read_as_skydiscover_reads_it(stdout, status, score, error):
    from evaluators.inside import skydiscover_run as sd

    got = sd.to_result(sd.Outcome(0, stdout, ""), "ok", "runtime_error", "timeout")
    assert (got["status"], got["score"]) == (status, score), got
    if error:
        assert got["artifacts"]["error"].startswith(error)
    if status == "timeout":
        assert got["metrics"] == {"x": 1.0}  # kept, as SkyDiscover keeps them


def test_the_local_sandbox_shows_evaluator_at_benchmark_read_only(tmp_path):
    from evaluators.local.sandbox import LocalSandbox
    from evaluators.sandbox import EvalRequest, Limits, Status

    writes = (
        "import pathlib\n"
        "pathlib.Path('/benchmark/values.json').write_text('{}')\n"  # the candidate's try
        "def pick(values, k):\n    return sorted(range(len(values)), key=values.__getitem__)[-k:]\n"
    )
    sb = LocalSandbox()
    try:
        results = [
            sb.evaluate(
                EvalRequest(
                    problem_dir=str(FIXTURE),
                    program_code=code,
                    program_name="initial_program.py",
                    split="train",
                    fmt="skydiscover",
                    limits=Limits(timeout_s=60),
                    env={"PICK_K": "3"},
                    benchmark="evaluator",
                )
            )
            for code in (BEST, writes)
        ]
    finally:
        sb.close()
    assert (results[0].status, results[0].score) == (Status.OK, 1.0), results[0].artifacts
    assert results[1].status == Status.RUNTIME_ERROR  # /benchmark is read-only to it
    assert (FIXTURE / "evaluator" / "values.json").read_text().startswith('{"train"')


def test_a_dockerfiles_pip_install_is_layered_beside_requirements_txt(tmp_path):
    from evaluators.docker.dockerfile_pip import layer_requirements
    from evaluators.docker.image_layers import layer_inputs

    folder = copy(tmp_path)
    dockerfile = folder / "evaluator" / "Dockerfile"
    wanted = "RUN pip install --no-cache-dir packaging 'absent-for-evolve-tests==1.0' \\\n"
    dockerfile.write_text(dockerfile.read_text() + wanted + "    && chmod +x evaluate.sh\n")
    (folder / "evaluator" / "requirements.txt").write_text("six\n")
    p = load_problem(folder)  # accepted: plain requirements
    assert p.fmt == "skydiscover"
    inputs = layer_inputs(folder)
    assert inputs.packages == ("packaging", "absent-for-evolve-tests==1.0")
    layer = layer_requirements(inputs.requirements, inputs.packages, tmp_path)
    assert layer is not None and layer.read_text().splitlines() == [
        f"-r {(folder / 'evaluator' / 'requirements.txt').resolve()}",
        "packaging",
        "absent-for-evolve-tests==1.0",
    ]
    # the unchanged fixture layers nothing more: its layer (and tag) stay what they were
    plain = layer_inputs(FIXTURE)
    assert plain.packages == () and layer_requirements(plain.requirements, (), tmp_path) is None
    r = evolve("check", str(folder), "--sandbox", "local")
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "Dockerfile's pip install packaging absent-for-evolve-tests==1.0 (layered" in text
    (warning,) = [ln for ln in text.splitlines() if "Dockerfile: pip install" in ln]
    assert "pip install absent-for-evolve-tests==1.0: not installed here" in warning
    assert "packaging" not in warning  # installed here: not named
