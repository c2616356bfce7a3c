"""Per-run evaluation settings for both problem formats: --env, --timeout, --memory-mb and
--initial-program over a folder's own ([evaluation] env, config.yaml's evolve: section),
their one-line errors, and what `resume` keeps of them."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from evolve.problem.load import Overrides, ProblemError, load_problem
from evolve.testing.cli_helpers import OPENEVOLVE_FIXTURE, ROOT, evolve
from evolve.testing.scripted_llm import ScriptedLLM
from tests.test_openevolve_settings import SEED, folder
from tests.test_settings import assert_one_line

# ---- per-run evaluation settings: --env, --timeout, --memory-mb, --initial-program --------

ENV_EVALUATOR = """
import importlib.util, os

def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"outputs": {"value": float(m.f(3))}}

def score(outputs, split):
    x, y = float(os.environ["XT_X"]), float(os.environ["XT_Y"])
    return {"score": -abs(outputs["value"] - 10.0), "metrics": {"x": x, "y": y}}
"""
TOY_SEED = "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"


def toy(root: Path, env: str = "") -> Path:
    root.mkdir(parents=True)
    (root / "problem.toml").write_text(
        '[problem]\nname = "toy"\nentry = "seed.py"\n'
        f'[evaluation]\ntimeout_s = 30\nsplits = ["train"]\n{env}'
    )
    (root / "seed.py").write_text(TOY_SEED)
    (root / "evaluator.py").write_text(ENV_EVALUATOR)
    return root


def test_env_entries_of_a_folder_and_of_flags(tmp_path, monkeypatch):
    monkeypatch.setenv("XT_HOME", "/h")
    p = load_problem(toy(tmp_path / "n", 'env = ["XT_A=1", "XT_HOME"]\n'))
    assert p.env == {"XT_A": "1", "XT_HOME": "/h"}
    p = load_problem(tmp_path / "n", Overrides(env=("XT_A=2", "XT_B=x=y")))
    assert p.env == {"XT_A": "2", "XT_HOME": "/h", "XT_B": "x=y"}  # flags over the folder's
    oe = folder(tmp_path / "oe", "evolve:\n  env: [XT_HOME, 'XT_C=3']\n")
    assert load_problem(oe).env == {"XT_HOME": "/h", "XT_C": "3"}
    monkeypatch.delenv("XT_HOME")
    with pytest.raises(ProblemError) as e:
        load_problem(tmp_path / "n")
    assert str(e.value) == (
        f"{tmp_path / 'n' / 'problem.toml'}: [evaluation] env: XT_HOME is not set in the "
        "environment (give XT_HOME=VALUE)"
    )
    with pytest.raises(ProblemError, match=r"config.yaml: evolve.env: XT_HOME is not set"):
        load_problem(oe)
    with pytest.raises(ProblemError, match=r"^--env: XT_NOPE is not set in the environment"):
        load_problem(ROOT / "problems" / "binpack", Overrides(env=("XT_NOPE",)))


BAD = [
    ("native", '[problem]\nname = "x"\nentry = "seed.py"\n[evaluation]\nenv = ["1X=2"]\n',
     "[evaluation] env[0]: expected NAME or NAME=VALUE"),
    ("native", '[problem]\nname = "x"\nentry = "seed.py"\n[evaluation]\nenv = "A=1"\n',
     "[evaluation] env: expected a list"),
    ("yaml", "evolve:\n  evn: [A]\n", "config.yaml: evolve: unknown key 'evn' (did you mean 'env'?)"),
    ("yaml", "evolve:\n  env: ['A B=1']\n", "evolve.env[0]: expected NAME or NAME=VALUE"),
    ("yaml", "llm:\n  models:\n    - {name: a, api_base: 'localhost:1'}\n", "llm.models[0].api_base: expected an http(s) URL"),
    ("yaml", "evaluator:\n  parallel_evaluations: 0\n", "evaluator.parallel_evaluations: expected an integer > 0"),
    ("yaml", "llm:\n  retries: -1\n", "llm.retries: expected an integer >= 0"),
    ("yaml", "random_seed: lots\n", "random_seed: expected an integer"),
]  # fmt: skip


@pytest.mark.parametrize("kind, text, fragment", BAD, ids=[b[2][:40] for b in BAD])
def test_bad_settings_are_one_line(tmp_path, kind, text, fragment):
    if kind == "native":
        root = toy(tmp_path / "n")
        (root / "problem.toml").write_text(text)
    else:
        root = folder(tmp_path / "oe", text)
    with pytest.raises(ProblemError) as e:
        load_problem(root)
    assert fragment in str(e.value) and "\n" not in str(e.value)


FLAGS = [
    (["--timeout", "0"], "argument --timeout: expected a number > 0, got 0"),
    (["--memory-mb", "0"], "argument --memory-mb: expected an integer >= 1, got 0"),
    (["--memory-mb", "lots"], "argument --memory-mb: expected an integer >= 1, got 'lots'"),
    (["--env", "1BAD"], "argument --env: expected NAME or NAME=VALUE"),
    (["--env", "XT_UNSET_HERE"], "--env: XT_UNSET_HERE is not set in the environment"),
    (["--initial-program", "no/such.py"], "--initial-program no/such.py: no such file"),
]


@pytest.mark.parametrize("command", ["run", "check", "eval"])
@pytest.mark.parametrize("flags, fragment", FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_bad_evaluation_flags(tmp_path, command, flags, fragment):
    extra = [str(OPENEVOLVE_FIXTURE / "initial_program.py")] if command == "eval" else []
    extra += ["--runs-dir", str(tmp_path), "--model", "scripted"] if command == "run" else []
    r = evolve(command, OPENEVOLVE_FIXTURE, *extra, "--sandbox", "local", *flags)
    assert_one_line(r, fragment)
    assert not (tmp_path / "archive.db").exists()


def test_seed_program_from_anywhere_and_its_precedence(tmp_path):
    elsewhere = tmp_path / "seeds" / "my_seed.py"
    elsewhere.parent.mkdir()
    elsewhere.write_text(SEED.replace("def ", "# from elsewhere\ndef ", 1))
    problem = folder(tmp_path / "oe", "max_iterations: 2\n", seed=False)
    r = evolve("check", problem, "--sandbox", "local")
    assert_one_line(r, "no initial_program.py", "--initial-program PATH")
    p = load_problem(problem, Overrides(initial_program=str(elsewhere)))
    assert (p.entry, p.seed_file, p.seed_code) == ("my_seed.py", elsewhere, elsewhere.read_text())
    (problem / "seeds").mkdir()
    (problem / "seeds" / "in_folder.py").write_text(SEED)
    (problem / "config.yaml").write_text("evolve:\n  initial_program: seeds/in_folder.py\n")
    assert load_problem(problem).seed_file == problem / "seeds" / "in_folder.py"
    assert load_problem(problem, Overrides(initial_program=str(elsewhere))).entry == "my_seed.py"
    native = load_problem(toy(tmp_path / "n"), Overrides(initial_program=str(elsewhere)))
    assert native.entry == "my_seed.py" and native.seed_code == elsewhere.read_text()


def test_flags_win_over_the_folder(tmp_path):
    problem = folder(tmp_path / "oe", "evaluator:\n  timeout: 30\n  memory_limit_mb: 1000\n")
    p = load_problem(problem, Overrides(timeout_s=5, memory_mb=300))
    assert (p.timeout_s, p.memory_mb) == (5, 300)
    p = load_problem(toy(tmp_path / "n"), Overrides(timeout_s=7.5))
    assert (p.timeout_s, p.memory_mb) == (7.5, 2048)


def test_resume_evaluates_with_the_runs_settings(tmp_path):
    """--env NAME=VALUE is stored; --env NAME is read again at resume (unset: one line);
    --timeout, --memory-mb and --initial-program (made absolute) are stored."""
    problem = toy(tmp_path / "toy")
    seed = tmp_path / "elsewhere.py"
    seed.write_text(TOY_SEED)
    runs = tmp_path / "runs"
    replies = [
        f"```python\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x + {k}\n# EVOLVE-BLOCK-END\n```"
        for k in range(1, 9)
    ]
    with ScriptedLLM.from_list(replies) as srv:
        common = ["--runs-dir", runs, "--no-progress"]
        r = evolve(
            "run", problem, "--api-base", srv.base_url, "--model", "scripted", "--iterations", "1", "--tune-evals", "0",
            "--sandbox", "local", "--env", "XT_X=7", "--env", "XT_Y", "--timeout", "9",
            "--memory-mb", "700", "--initial-program", os.path.relpath(seed, ROOT),  # from evolve's cwd
            *common, extra_env={"XT_Y": "3"},
        )  # fmt: skip
        assert r.returncode == 0, r.stderr
        run_id = r.stdout.strip().splitlines()[-1]
        with sqlite3.connect(runs / "archive.db") as db:
            cfg = json.loads(db.execute("SELECT config_json FROM runs").fetchone()[0])
        assert (cfg["eval_env"], cfg["eval_timeout_s"], cfg["eval_memory_mb"]) == (
            [
                "XT_X",
                "XT_Y",
            ],  # the value of XT_X is kept beside the archive (evolve/pipeline/env.py)
            9,
            700,
        )
        assert cfg["initial_program"] == str(seed)
        assert_one_line(
            evolve("resume", run_id, "--iterations", "2", *common), "--env: XT_Y is not set"
        )
        r = evolve("resume", run_id, "--iterations", "2", *common, extra_env={"XT_Y": "5"})
        assert r.returncode == 0, r.stderr
    with sqlite3.connect(runs / "archive.db") as db:
        rows = db.execute(
            "SELECT iteration, metrics_json FROM programs ORDER BY iteration"
        ).fetchall()
    metrics = {i: json.loads(m) for i, m in rows}
    assert (metrics[0]["x"], metrics[0]["y"]) == (7, 3)
    assert (metrics[2]["x"], metrics[2]["y"]) == (7, 5)
