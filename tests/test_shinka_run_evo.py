"""ShinkaEvolve folders that name their settings in run_evo.py, in any of its languages.

ShinkaEvolve 0.0.7's Fortran and Go examples have no YAML file: run_evo.py's
`EvolutionConfig(init_program_path="initial.f90", language="fortran", ...)` names the seed
and its language. evolve reads those keywords with ast (never running run_evo.py), takes
LocalJobConfig's time as the time limit, finds the blocks by the language's comments, and
refuses a language whose tool is missing in one line. The stand-in `shinka.llm` lets an
evaluator that asks a judge (novelty_generator) import and call one.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evolve.problem.load import load_problem
from evolve.problem.model import ProblemError
from evolve.testing.cli_helpers import ROOT, evolve
from evolve.testing.scripted_llm import ScriptedLLM

STAND_IN = ROOT / "evaluators" / "inside" / "shinka_compat"

RUN_EVO = '''\
from shinka.core import EvolutionConfig, ShinkaEvolveRunner
from shinka.database import DatabaseConfig
from shinka.launch import LocalJobConfig

job_config = LocalJobConfig(eval_program_path="evaluate.py", time="00:02:30")
db_config = DatabaseConfig(num_islands=2, archive_size=40)
GENERATIONS = 12
task_sys_msg = """
Make the Fortran sum faster.
"""
evo_config = EvolutionConfig(
    task_sys_msg=task_sys_msg,
    num_generations=GENERATIONS,
    language="{language}",
    init_program_path="{seed}",
    llm_models=["gpt-5-mini"],
    max_patch_attempts=int("3"),
)
JOBS = 3


def main():
    ShinkaEvolveRunner(evo_config=evo_config, job_config=job_config, db_config=db_config,
                       max_evaluation_jobs=JOBS).run()
'''

SEED = """\
program total
  implicit none
  integer :: i, s
  s = 0
  ! EVOLVE-BLOCK-START
  do i = 1, 10
    s = s + i
  end do
  ! EVOLVE-BLOCK-END
  print *, s
end program total
"""

# An evaluator in ShinkaEvolve's format that compiles the candidate with gfortran and
# scores what it prints (55 is right).
EVALUATE = """\
import argparse, json, os, subprocess, tempfile
p = argparse.ArgumentParser()
p.add_argument("--program_path"); p.add_argument("--results_dir")
a = p.parse_args()
os.makedirs(a.results_dir, exist_ok=True)
with tempfile.TemporaryDirectory() as d:
    exe = os.path.join(d, "prog")
    c = subprocess.run(["gfortran", a.program_path, "-o", exe], capture_output=True, text=True)
    out = subprocess.run([exe], capture_output=True, text=True).stdout if c.returncode == 0 else ""
ok = out.strip() == "55"
with open(os.path.join(a.results_dir, "correct.json"), "w") as f:
    json.dump({"correct": ok, "error": None if ok else "printed " + repr(out) + c.stderr}, f)
with open(os.path.join(a.results_dir, "metrics.json"), "w") as f:
    json.dump({"combined_score": 1.0 if ok else 0.0, "public": {"printed": out.strip()}}, f)
"""


def folder(tmp_path: Path, language: str = "fortran", seed: str = "sum.f90") -> Path:
    root = tmp_path / "fortran_sum"
    root.mkdir()
    (root / "run_evo.py").write_text(RUN_EVO.format(language=language, seed=seed))
    (root / "evaluate.py").write_text(EVALUATE)
    (root / seed).write_text(SEED)
    return root


def test_run_evo_names_the_seed_its_language_and_the_settings(tmp_path):
    p = load_problem(folder(tmp_path))
    assert (p.fmt, p.entry, p.language.name, p.tools) == (
        "shinka",
        "sum.f90",
        "fortran",
        ("gfortran",),
    )
    assert (p.iterations, p.num_islands, p.parallel, p.timeout_s) == (12, 2, 3, 150.0)
    assert p.domain_notes == "Make the Fortran sum faster." and not p.whole_file
    notices = "\n".join(p.notices)
    assert "run_evo.py: ignored key evo_config.llm_models: models come from --model" in notices
    assert "not read (computed): EvolutionConfig(max_patch_attempts=...) at line 17" in notices


def test_a_language_shinkaevolve_does_not_evolve_is_one_line(tmp_path):
    with pytest.raises(
        ProblemError,
        match=r"run_evo.py: evo_config.language: 'cobol': not a language ShinkaEvolve 0.0.7 evolves \(python, cpp",
    ):
        load_problem(folder(tmp_path, language="cobol"))  # fmt: skip


def test_a_missing_seed_and_a_bad_job_time_are_one_line(tmp_path):
    root = folder(tmp_path)
    (root / "sum.f90").unlink()
    with pytest.raises(
        ProblemError, match=r"run_evo.py: evo_config.init_program_path: 'sum.f90' does not exist"
    ):
        load_problem(root)  # fmt: skip
    (root / "sum.f90").write_text(SEED)
    text = (root / "run_evo.py").read_text().replace('"00:02:30"', '"2 minutes"')
    (root / "run_evo.py").write_text(text)
    with pytest.raises(
        ProblemError, match=r"run_evo.py:5: LocalJobConfig time: expected 'HH:MM:SS'"
    ):
        load_problem(root)  # fmt: skip


def test_check_refuses_a_language_whose_tool_is_missing_in_one_line(tmp_path):
    root = folder(tmp_path, language="julia", seed="sum.jl")
    r = evolve("check", str(root), "--sandbox", "local",
               extra_env={"PATH": os.path.dirname(sys.executable) + os.pathsep + "/bin"})  # fmt: skip
    assert r.returncode != 0
    lines = [ln for ln in (r.stdout + r.stderr).splitlines() if "not found on PATH" in ln]
    assert len(lines) == 1 and "julia" in lines[0] and "run_evo.py" in lines[0], r.stdout + r.stderr


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="needs gfortran")
def test_a_fortran_seed_is_scored_and_a_broken_candidate_fails(tmp_path):
    root = folder(tmp_path)
    r = evolve("eval", str(root), str(root / "sum.f90"), "--json", "--sandbox", "local")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] == "ok" and out["score"] == 1.0, out
    (tmp_path / "bad.f90").write_text(SEED.replace("s + i", "s + i * 2"))
    r = evolve("eval", str(root), str(tmp_path / "bad.f90"), "--json", "--sandbox", "local")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] == "invalid" and "110" in out["artifacts"]["error"], out


JUDGE = """\
import os
from shinka.llm import LLMClient
client = LLMClient(model_names=["azure-gpt-4.1"], temperatures=0.0, max_tokens=64)
reply = client.query(msg="rate this", system_msg="you are a judge", llm_kwargs=client.get_kwargs())
print(reply.content)
"""


def test_the_stand_ins_judge_asks_the_endpoint_the_run_passes(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(STAND_IN)}
    env.pop("OPENAI_BASE_URL", None)
    env.pop("SHINKA_JUDGE_BASE_URL", None)
    r = subprocess.run([sys.executable, "-c", JUDGE], capture_output=True, text=True, env=env)
    assert r.returncode != 0 and "no judge endpoint" in r.stderr.splitlines()[-1]
    with ScriptedLLM.from_list(["novelty_score = 0.25"]) as srv:
        env |= {"SHINKA_JUDGE_BASE_URL": srv.base_url, "SHINKA_JUDGE_MODEL": "local-judge"}
        r = subprocess.run([sys.executable, "-c", JUDGE], capture_output=True, text=True, env=env, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "novelty_score = 0.25"
    request = srv.requests[0]
    assert (
        request["model"] == "local-judge" and request["messages"][0]["content"] == "you are a judge"
    )


NOVELTY = textwrap.dedent("""\
    import argparse, json, os
    from shinka.llm import LLMClient
    p = argparse.ArgumentParser()
    p.add_argument("--program_path"); p.add_argument("--results_dir")
    a = p.parse_args()
    try:
        LLMClient(model_names="gemini-2.5-pro").query(msg="judge", system_msg="")
        correct, error = True, ""
    except Exception as e:
        correct, error = False, str(e)
    with open(os.path.join(a.results_dir, "correct.json"), "w") as f:
        json.dump({"correct": correct, "error": error}, f)
    with open(os.path.join(a.results_dir, "metrics.json"), "w") as f:
        json.dump({"combined_score": 0.0}, f)
""")


def test_an_evaluator_importing_shinka_llm_runs_and_says_why_the_judge_is_unreachable(tmp_path):
    root = tmp_path / "novelty"
    root.mkdir()
    (root / "evaluate.py").write_text(NOVELTY)
    (root / "initial.py").write_text("def f():\n    return 'x'\n")
    r = evolve("eval", str(root), str(root / "initial.py"), "--json", "--sandbox", "local")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] == "invalid", out
    assert "no judge endpoint" in out["artifacts"]["error"], out
    with ScriptedLLM.from_list(["novelty_score = 0.25"]) as srv:  # the sandbox has no network
        r = evolve("eval", str(root), str(root / "initial.py"), "--json", "--sandbox", "local",
                   "--env", f"SHINKA_JUDGE_BASE_URL={srv.base_url}")  # fmt: skip
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["status"] == "invalid" and "have no network" in out["artifacts"]["error"], out
    assert srv.requests == []


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="needs gfortran")
def test_a_scripted_run_evolves_the_fortran_block(tmp_path):
    import sqlite3

    from evolve.testing.cli_helpers import run_args

    root = folder(tmp_path)
    body = "  do i = 1, 10\n    s = s + i * 2\n  end do\n  s = s / 2\n"
    reply = f"Unrolled.\n\n```fortran\n  ! EVOLVE-BLOCK-START\n{body}  ! EVOLVE-BLOCK-END\n```\n"
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list([reply]) as srv:
        r = evolve(*run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--tune-evals", "0",
                             problem=root, iterations=1), timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute(
        "SELECT iteration, status, score, code FROM programs ORDER BY iteration"
    ).fetchall()
    db.close()
    assert [(i, s, sc) for i, s, sc, _ in rows] == [(0, "ok", 1.0), (1, "ok", 1.0)], rows
    assert "s = s / 2" in rows[1][3] and "program total" in rows[1][3]
    assert "Fortran" in srv.requests[0]["messages"][0]["content"]


def test_a_yaml_language_other_than_python_takes_the_seed_initial_program_names(tmp_path):
    root = tmp_path / "rusty"
    root.mkdir()
    (root / "evaluate.py").write_text(EVALUATE)
    (root / "shinka_small.yaml").write_text("evo_config:\n  language: rust\n")
    seed = tmp_path / "main.rs"
    seed.write_text(
        'fn main() {\n    // EVOLVE-BLOCK-START\n    println!("55");\n    // EVOLVE-BLOCK-END\n}\n'
    )
    from evolve.settings.overrides import Overrides

    p = load_problem(root, Overrides(initial_program=str(seed)))
    assert (p.entry, p.language.name, p.tools, p.whole_file) == (
        "main.rs",
        "rust",
        ("rustc",),
        False,
    )
