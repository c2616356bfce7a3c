"""LEVI-format folders (problem.py with score_fn and SEED_PROGRAM, plus run.py) run unchanged.

tests/fixtures/levi/knapsack is a small problem written in LEVI 0.1.1's format. `evolve eval`
must score a candidate as LEVI 0.1.1 does (levi/utils/evaluation.py: exec the code, take the
signature's function, score_fn(fn, inputs); "error" fails it; "score" is the score), on both
sandboxes; the results below were computed with LEVI 0.1.1's own evaluate_code on the same
folder (the fixture's README). run.py is read, never run, and its settings are reported.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from evolve.problem.load import load_problem
from evolve.problem.model import ProblemError
from evolve.testing.cli_helpers import ROOT, evolve, last_json
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

FIXTURE = ROOT / "tests" / "fixtures" / "levi" / "knapsack"
SEED_SCORE = 29.0  # LEVI 0.1.1's evaluate_code on SEED_PROGRAM
BEST = "def choose(items, capacity):\n    return [0, 1] if capacity < 15 else [0, 2, 3]\n"
# (code, status, LEVI's error for it)
CANDIDATES = [
    (BEST, "ok", None),
    ("def choose(items, capacity):\n    return [0, 0]\n", "invalid",
     "capacity 10 exceeded or an item chosen twice"),
    ("def pick(items, capacity):\n    return []\n", "invalid",
     "Function 'choose' not found (got NoneType)"),
    ("def choose(items, capacity):\n    raise ValueError('no')\n", "invalid", "Scoring error: no"),
]  # fmt: skip


def copy(dest: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, dest / "knapsack"))


def evolve_eval(folder: Path, program: Path, *flags: str, extra_env: dict | None = None) -> dict:
    r = evolve("eval", str(folder), str(program), "--json", *flags, extra_env=extra_env)
    return last_json(r)


def test_the_folder_is_read_as_levi_reads_it():
    p = load_problem(FIXTURE)
    assert (p.fmt, p.metric, p.direction, p.entry) == ("levi", "score", "maximize", "program.py")
    assert p.seed_code.startswith("def choose(items, capacity):") and p.whole_file
    assert (p.timeout_s, p.parallel, p.iterations) == (30.0, 2, 40)
    assert (
        "as large as possible" in p.domain_notes and "def choose(items, capacity)" in p.domain_notes
    )
    notices = "\n".join(p.notices)
    assert "run.py: ignored model: models come from --model" in notices
    assert "run.py: ignored output_dir: runs live in the archive" in notices


def test_check_scores_the_seed_as_levi_does_and_reports_the_settings(tmp_path):
    folder = copy(tmp_path)
    before = sorted(p.name for p in folder.rglob("*"))
    r = evolve("check", str(folder), "--sandbox", "local")
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "(levi)" in text and "problem.py's score_fn(choose, make_inputs())" in text
    assert "seed: problem.py's SEED_PROGRAM" in text
    assert "run.py: pipeline.eval_timeout: the evaluation's time limit" in text
    assert "run.py: budget_evals: iterations" in text
    assert f"seed on train: ok, score {SEED_SCORE}" in text
    assert sorted(p.name for p in folder.rglob("*")) == before  # scored in a private copy


@pytest.mark.parametrize("code, status, error", CANDIDATES)
def test_candidates_score_and_fail_as_levi_scores_them(code, status, error, tmp_path):
    (tmp_path / "cand.py").write_text(code)
    out = evolve_eval(FIXTURE, tmp_path / "cand.py", "--sandbox", "local")
    assert out["status"] == status, out
    if error is None:
        assert out["score"] == 11.0 + 17.0 and out["metrics"]["items_chosen"] == 3.0
    else:
        assert out["score"] is None and out["artifacts"]["error"] == error


def test_docker_scores_as_the_local_sandbox(docker_image, tmp_path):  # noqa: F811
    (tmp_path / "cand.py").write_text(BEST)
    image = {"EVOLVE_SANDBOX_IMAGE": docker_image}
    out = evolve_eval(FIXTURE, tmp_path / "cand.py", "--sandbox", "docker", extra_env=image)
    assert out["status"] == "ok" and out["score"] == 28.0, out


def test_a_problem_py_that_fails_to_import_is_the_evaluators_error(tmp_path):
    folder = copy(tmp_path)
    (folder / "items.py").write_text("raise RuntimeError('the simulator is missing')\n")
    (tmp_path / "cand.py").write_text(BEST)
    out = evolve_eval(folder, tmp_path / "cand.py", "--sandbox", "local")
    assert out["status"] == "runtime_error", out
    assert "the simulator is missing" in out["artifacts"]["traceback"]


@pytest.mark.parametrize(
    "file, old, new, message",
    [
        ("problem.py", "SEED_PROGRAM = '''", "SEED = '''",
         r"problem.py: no SEED_PROGRAM string \(nor run.py's seed_program=\); name the seed"),
        ("problem.py", "def score_fn(", "def scorer(", r"problem.py: no top-level score_fn"),
        ("problem.py", "CAPACITIES = [10, 15]", "CAPACITIES = [10, 15", r"problem.py:\d+: does not parse"),
        ("run.py", "inputs=make_inputs(),", "inputs=make_inputs(3),",
         r"run.py:\d+: inputs=: expected a name problem.py defines, or a call of one without"),
        ("run.py", "eval_timeout=30,", "eval_timeout='soon',",
         r"run.py: pipeline.eval_timeout: expected a positive float, got 'soon'"),
        ("run.py", "seed_program=SEED_PROGRAM,", "seed_program=open('seed.py').read(),",
         r"run.py:\d+: seed_program=: expected a string or a name problem.py binds"),
    ],
)  # fmt: skip
def test_a_bad_folder_is_one_line_naming_the_file(file, old, new, message, tmp_path):
    folder = copy(tmp_path)
    text = (folder / file).read_text()
    assert old in text
    (folder / file).write_text(text.replace(old, new))
    with pytest.raises(ProblemError, match=message):
        load_problem(folder)
    r = evolve("check", str(folder), "--sandbox", "local")
    assert r.returncode != 0 and "Traceback" not in r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1, r.stderr


def test_without_run_py_levis_names_and_defaults_are_used(tmp_path):
    folder = copy(tmp_path)
    (folder / "run.py").unlink()
    text = (
        (folder / "problem.py")
        .read_text()
        .replace(
            "def score_fn(choose, inputs):",
            "def score_fn(choose, inputs=None):\n    inputs = inputs or make_inputs()",
        )
    )
    (folder / "problem.py").write_text(text)  # fmt: skip
    p = load_problem(folder)
    assert (p.timeout_s, p.parallel, p.iterations, p.config_file) == (60.0, None, None, None)
    out = evolve_eval(folder, _seed_file(p.seed_code, tmp_path), "--sandbox", "local")
    assert out["status"] == "ok" and out["score"] == SEED_SCORE, out


def _seed_file(code: str, where: Path) -> Path:
    path = where / "seed.py"
    path.write_text(code)
    return path


def test_a_scripted_run_evolves_the_whole_program_and_scores_it_as_levi(tmp_path):
    import sqlite3

    from evolve.testing.cli_helpers import run_args
    from evolve.testing.scripted_llm import ScriptedLLM

    def reply(code: str) -> str:
        return f"A new program.\n\n```python\n{code}```\n"

    runs = tmp_path / "runs"
    replies = [reply(CANDIDATES[1][0]), reply(BEST)]
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(*run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--tune-evals", "0",
                             problem=FIXTURE, iterations=2), timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("run.py: ignored model: models come from --model") == 1
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute("SELECT iteration, status, score FROM programs ORDER BY iteration").fetchall()
    db.close()
    assert rows[0] == (0, "ok", SEED_SCORE)
    assert sorted((status, score) for _, status, score in rows[1:]) == [
        ("invalid", None),
        ("ok", 28.0),
    ]
    system = srv.requests[0]["messages"][0]["content"]
    assert "as large as possible" in system and "def choose(items, capacity)" in system
