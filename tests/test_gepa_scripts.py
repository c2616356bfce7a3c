"""GEPA optimize_anything scripts run unchanged: `evolve check/eval/run main.py`, and
evolve.optimize_anything in place of GEPA's.

tests/fixtures/gepa/ holds three small scripts written in GEPA v0.1.4's style: `guess` (a str
seed, a dataset and a valset), `prompts` (a dict seed read partly from a file at import, no
dataset, `gepa.optimize_anything(...)` called at module level), `warm` (an evaluator taking
opt_state and calling oa.log), and `library` (GEPA's own gepa.utils.code_execution beside
the call, as GEPA's circle_packing and blackbox examples have it). The scripts import `gepa`:
in the sandbox that is the real package where installed (`pip install gepa`), else the
stand-in; `library` runs only with the real one.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from evolve.problem.load import load_problem
from evolve.problem.model import ProblemError
from evolve.settings.overrides import Overrides
from evolve.testing.cli_helpers import ROOT, env, evolve, last_json, run_args
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

FIXTURES = ROOT / "tests" / "fixtures" / "gepa"
GUESS, PROMPTS, WARM, LIBRARY = (
    FIXTURES / n / "main.py" for n in ("guess", "prompts", "warm", "library")
)
LOCAL = Overrides(sandbox="local")
GUESS_SEED = (1 / 3 + 1 / 5 + 1 / 7) / 3  # guess() == 1 on the valset 3, 5, 7


def evolve_eval(script: Path, program: Path) -> dict:
    return last_json(evolve("eval", script, program, "--sandbox", "local", "--json"))


def test_a_str_seed_script_becomes_the_problem():
    p = load_problem(GUESS, LOCAL)
    assert (p.fmt, p.entry, p.metric, p.direction) == ("gepa", "candidate.py", "score", "maximize")
    assert p.seed_code == "def guess():\n    return 1\n" and p.whole_file and p.files == ()
    assert "Guess a number close" in p.domain_notes and "small integers" in p.domain_notes
    assert p.iterations == 12 // 3 - 1  # max_metric_calls over the valset, the seed's pass out
    assert p.root == GUESS.parent
    # the folder names it too (what a stored run reloads at resume): its one such script
    assert load_problem(GUESS.parent, LOCAL).seed_code == p.seed_code


def test_check_scores_the_seed_on_the_valset_mean():
    r = evolve("check", GUESS, "--sandbox", "local")
    text = r.stdout + r.stderr
    assert r.returncode == 0, text
    assert "(gepa)" in text and "the mean over its valset (3 examples)" in text
    assert "max_metric_calls 12 = 3 iterations" in text
    assert f"seed on train: ok, score {GUESS_SEED!r}" in text


def test_eval_gives_the_side_info_as_feedback(tmp_path):
    (tmp_path / "cand.py").write_text("def guess():\n    return 5\n")
    out = evolve_eval(GUESS, tmp_path / "cand.py")
    assert out["status"] == "ok" and out["score"] == pytest.approx((1 / 3 + 1 + 1 / 3) / 3), out
    infos = json.loads(out["artifacts"]["side_info"])
    assert [i["feedback"] for i in infos] == ["wanted 3", "wanted 5", "wanted 7"]
    assert json.loads(out["artifacts"]["example_scores"])[1] == 1.0


def test_an_evaluator_that_raises_fails_the_candidate(tmp_path):
    (tmp_path / "cand.py").write_text("def other():\n    return 5\n")
    out = evolve_eval(GUESS, tmp_path / "cand.py")
    assert out["status"] == "invalid" and out["score"] is None, out
    assert "the evaluator raised KeyError('guess')" in out["artifacts"]["error"]


def test_a_dict_seed_is_a_program_of_named_files(tmp_path):
    p = load_problem(PROMPTS, LOCAL)
    assert (p.entry, p.files) == ("system", ("system", "style"))
    assert "polite and cites its sources" in p.domain_notes  # read from a file at import
    assert "several named texts: system, style" in p.domain_notes
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "system").write_text("Be polite and cite sources.")
    (cand / "style").write_text("Stay concise.")
    out = evolve_eval(PROMPTS, cand)
    assert out["status"] == "ok" and out["score"] == 1.0, out
    assert out["metrics"]["hits"] == 4.0
    r = evolve("check", PROMPTS, "--sandbox", "local")
    assert r.returncode == 0 and "score 0.25" in r.stdout + r.stderr, r.stdout + r.stderr


def test_an_opt_state_evaluator_gets_gepas_state(tmp_path):
    (tmp_path / "cand.py").write_text("x = 1.5\n")
    out = evolve_eval(WARM, tmp_path / "cand.py")
    assert out["status"] == "ok" and out["score"] == -0.25, out
    info = json.loads(out["artifacts"]["side_info"])
    assert info == {"x": 1.5, "best_known": [], "state": "OptimizationState", "log": "x = 1.5\n"}


HOSTILE = """
import os
try:
    os.makedirs({marker!r})
    WROTE = True
except OSError:
    WROTE = False
import gepa
gepa.optimize_anything("x = 1\\n", evaluator=lambda c: (1.0, {{"wrote": WROTE}}))
"""


def test_a_hostile_script_never_runs_on_the_host(tmp_path):
    marker = tmp_path / "ran-on-the-host"
    folder = tmp_path / "hostile"
    folder.mkdir()
    (folder / "main.py").write_text(HOSTILE.format(marker=str(marker)))
    p = load_problem(folder / "main.py", LOCAL)  # loading captures the call: in the sandbox
    assert p.seed_code == "x = 1\n" and not marker.exists()
    (tmp_path / "cand.py").write_text("x = 2\n")
    out = evolve_eval(folder / "main.py", tmp_path / "cand.py")
    assert out["status"] == "ok" and json.loads(out["artifacts"]["side_info"]) == {"wrote": False}
    assert not marker.exists()


@pytest.mark.parametrize(
    "body, message",
    [
        ("import gepa\ngepa.optimize_anything(3, evaluator=print)\n",
         "main.py: optimize_anything's seed_candidate: expected a str or a non-empty dict"),
        ("import gepa\nraise RuntimeError('no data')\ngepa.optimize_anything('x')\n",
         "main.py: could not capture its optimize_anything call: main.py raised before "
         "optimize_anything: RuntimeError('no data')"),
        ("import gepa\nif False:\n    gepa.optimize_anything('x')\n",
         "main.py ran to its end without calling optimize_anything"),
        ("import gepa\ngepa.optimize_anything('x')\n", "main.py: optimize_anything was given no evaluator="),
        ("import gepa\ngepa.optimize_anything({'../x': 'a'}, evaluator=len)\n",
         "main.py: seed_candidate: file path '../x': '..', '.' and empty parts are not allowed"),
    ],
)  # fmt: skip
def test_a_bad_script_is_one_line_naming_it(body: str, message: str, tmp_path: Path) -> None:
    script = tmp_path / "bad" / "main.py"  # a folder of its own: the sandbox's uid reads it
    script.parent.mkdir()
    script.write_text(body)
    with pytest.raises(ProblemError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_problem(script, LOCAL)
    r = evolve("check", script, "--sandbox", "local")
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1, r.stderr


def _reply(code: str) -> str:
    return f"A new program.\n\n```python\n{code}```\n"


def test_a_scripted_run_evolves_the_text_and_fills_opt_state(tmp_path):
    from evolve.testing.scripted_llm import ScriptedLLM

    runs = tmp_path / "runs"
    replies = [_reply("x = 1.0\n"), _reply("x = 'two'\nx = float(x)\n"), _reply("x = 2.0\n")]
    folder = Path(shutil.copytree(WARM.parent, tmp_path / "warm"))
    with ScriptedLLM.from_list(replies) as srv:
        args = run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1",
                        "--tune-evals", "0", problem=folder / "main.py", iterations=3)  # fmt: skip
        r = evolve(*args, timeout=600)
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute(
        "SELECT iteration, status, score, artifacts_json FROM programs ORDER BY iteration"
    ).fetchall()
    db.close()
    assert rows[0][:3] == (0, "ok", -2.25)  # the seed, evaluated first
    # the replies may reach the iterations in any order (proposals overlap)
    assert sorted((s, v) for _, s, v, _ in rows[1:]) == [
        ("invalid", None), ("ok", -1.0), ("ok", 0.0),
    ], (rows, r.stderr[-3000:])  # fmt: skip
    for _, status, score, artifacts in rows[1:]:
        if status == "ok":  # every later evaluation knows at least the seed's, best first
            known = json.loads(json.loads(artifacts)["side_info"])["best_known"]
            assert -2.25 in known and known == sorted(known, reverse=True), known
            assert set(known) <= {-2.25, -1.0, 0.0} - {score}, known
    system = srv.requests[0]["messages"][0]["content"]
    assert "Bring x to 2." in system


API_SCRIPT = """
import json, os, sys
from evolve import optimize_anything

def evaluate(candidate, example):
    ns = {{}}
    exec(candidate, ns)
    return -abs(ns["n"] - example), {{"n": ns["n"]}}

if __name__ == "__main__":
    result = optimize_anything(
        "n = 1\\n",
        evaluator=evaluate,
        dataset=[3, 5],
        objective="Bring n near 4.",
        config=None,
        iterations=2,
        api_base=os.environ.get("API_BASE"),
        model="scripted",
        runs_dir={runs!r},
        sandbox="local",
        parallel=1,
        tune_evals=0,
        llm_backoff=0.05,
    )
    print(json.dumps({{"best": result.best_candidate, "scores": result.val_aggregate_scores,
                      "best_idx": result.best_idx, "n": len(result.candidates)}}))
"""


def test_the_api_takes_gepas_arguments_and_returns_gepas_result(tmp_path):
    from evolve.testing.scripted_llm import ScriptedLLM

    script = tmp_path / "api" / "main.py"
    script.parent.mkdir()
    script.write_text(API_SCRIPT.format(runs=str(tmp_path / "runs")))
    with ScriptedLLM.from_list([_reply("n = 4\n"), _reply("n = 9\n")]) as srv:
        r = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=600,
            env=env(API_BASE=srv.base_url, PYTHONPATH=str(ROOT)), cwd=tmp_path,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["best"] == "n = 4\n" and out["n"] == 3, out
    assert out["scores"][0] == -3.0 and sorted(out["scores"]) == [-5.0, -3.0, -1.0], out
    assert out["scores"][out["best_idx"]] == -1.0  # the mean over the dataset, no valset


def test_docker_scores_as_the_local_sandbox(docker_image, tmp_path):  # noqa: F811
    (tmp_path / "cand.py").write_text("def guess():\n    return 5\n")
    image = {"EVOLVE_SANDBOX_IMAGE": docker_image}
    r = evolve(
        "eval", GUESS, tmp_path / "cand.py", "--sandbox", "docker", "--json", extra_env=image
    )
    out = last_json(r)
    assert out["status"] == "ok" and out["score"] == pytest.approx((1 / 3 + 1 + 1 / 3) / 3), out
    # the image carries the real gepa: a script using GEPA's library scores there too
    (tmp_path / "lib.py").write_text("def main():\n    return 9\n")
    r = evolve(
        "eval", LIBRARY, tmp_path / "lib.py", "--sandbox", "docker", "--json", extra_env=image
    )
    out = last_json(r)
    assert out["status"] == "ok" and out["score"] == -1.0, out


def test_a_script_importing_its_own_package_loads_from_the_packages_parent(tmp_path):
    """GEPA's examples import their helpers as `examples.NAME.utils` (run from GEPA's root)."""
    demo = tmp_path / "repo" / "examples" / "demo"
    demo.mkdir(parents=True)
    (demo / "helpers.py").write_text("SEED = 'x = 3\\n'\n\ndef score(c):\n    return len(c)\n")
    (demo / "main.py").write_text(
        "import gepa\nfrom examples.demo.helpers import SEED, score\n"
        "gepa.optimize_anything(SEED, evaluator=score)\n"
    )
    p = load_problem(demo / "main.py", LOCAL)
    assert (p.root, p.seed_code, p.name) == (tmp_path / "repo", "x = 3\n", "demo")
    (tmp_path / "cand.py").write_text("x = 12\n")
    out = evolve_eval(demo / "main.py", tmp_path / "cand.py")
    assert out["status"] == "ok" and out["score"] == 7.0, out


def test_a_resumed_run_reloads_the_script_and_restores_opt_state(tmp_path):
    from evolve.testing.scripted_llm import ScriptedLLM

    runs = tmp_path / "runs"
    folder = Path(shutil.copytree(WARM.parent, tmp_path / "warm"))
    replies = [_reply("x = 1.0\n"), _reply("x = 1.5\n"), _reply("x = 3.0\n")]
    with ScriptedLLM.from_list(replies) as srv:
        args = run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1",
                        "--tune-evals", "0", "--run-id", "w", problem=folder / "main.py",
                        iterations=1)  # fmt: skip
        assert evolve(*args, timeout=600).returncode == 0
        r = evolve("resume", "w", "--iterations", "3", "--runs-dir", runs, "--no-progress")
    assert r.returncode == 0, r.stderr
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute(
        "SELECT iteration, score, artifacts_json FROM programs ORDER BY iteration"
    ).fetchall()
    db.close()
    assert sorted(score for _, score, _ in rows) == [-2.25, -1.0, -1.0, -0.25], rows
    for _, _, artifacts in rows[2:]:  # evaluated after resume: they know the first run's
        known = json.loads(json.loads(artifacts)["side_info"])["best_known"]
        assert {-1.0, -2.25} <= set(known), known


CONFIGURED = """
from gepa.optimize_anything import EngineConfig, GEPAConfig, ReflectionConfig, optimize_anything

optimize_anything("Say hi.", evaluator=len, config=GEPAConfig(
    engine=EngineConfig(run_dir="out", max_metric_calls=4, cache_evaluation=True),
    reflection=ReflectionConfig(reflection_lm="openai/gpt-5"),
))
"""


def test_the_config_settings_evolve_ignores_are_reported_once(tmp_path):
    script = tmp_path / "cfg" / "main.py"
    script.parent.mkdir()
    script.write_text(CONFIGURED)
    p = load_problem(script, LOCAL)
    assert p.iterations == 3 and p.entry == "candidate.txt"  # a prompt, no Python program
    assert [n.split(": ", 1)[1] for n in p.notices[1:]] == [
        "ignored config engine.run_dir: runs live in the archive under --runs-dir",
        "ignored config engine.cache_evaluation: a GEPA setting with no evolve counterpart",
        "ignored config reflection: models come from --model / --api-base",
    ]


def score_inside(script: Path, program: str, tmp_path: Path, *python: str) -> dict:
    """gepa_score.py on one candidate, as the harness starts it, with `python`'s flags:
    `-S` hides the site-packages, so the installed gepa, as a sandbox without it has none."""
    from evaluators.inside import gepa_score

    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "cand.py").write_text(program)
    results = tmp_path / "results"
    subprocess.run(
        [
            sys.executable,
            *python,
            gepa_score.SCRIPT,
            "--program_path",
            str(tmp_path / "cand.py"),
            "--results_dir",
            str(results),
        ],
        cwd=script.parent,
        env=env(GEPA_SCRIPT=script.name),
        check=True,
        timeout=120,
        capture_output=True,
    )
    correct = json.loads((results / "correct.json").read_text())
    return {**correct, **json.loads((results / "metrics.json").read_text())}


def test_the_installed_gepa_runs_a_script_that_uses_its_library(tmp_path):
    pytest.importorskip("gepa.utils.code_execution")  # the real package (pip install gepa)
    r = evolve("check", LIBRARY, "--sandbox", "local")
    text = r.stdout + r.stderr
    assert r.returncode == 0 and "seed on train: ok, score -7.0" in text, text
    (tmp_path / "cand.py").write_text("def main():\n    return 9\n")
    out = evolve_eval(LIBRARY, tmp_path / "cand.py")
    assert out["status"] == "ok" and out["score"] == -1.0, out
    assert json.loads(out["artifacts"]["side_info"]) == {"returned": 9.0}
    # the same script under the stand-in (no gepa installed) fails in one line naming why
    alone = score_inside(LIBRARY, "def main():\n    return 9\n", tmp_path, "-S")
    assert alone["correct"] is False and "No module named 'gepa.utils'" in alone["error"]


def test_the_stand_in_and_the_installed_gepa_score_alike(tmp_path):
    seed = "def guess():\n    return 1\n"
    alone = score_inside(GUESS, seed, tmp_path / "alone", "-S")
    assert alone["correct"] is True and alone["score"] == GUESS_SEED, alone
    pytest.importorskip("gepa.utils.code_execution")
    real = score_inside(GUESS, seed, tmp_path / "real")
    assert real == alone
