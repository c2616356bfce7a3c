"""ShinkaEvolve-format folders (evaluate.py + initial.py) run unchanged under `evolve`.

The folders in tests/fixtures/shinka/ are ShinkaEvolve 0.0.7's own examples. `evolve eval`
must score each seed as ShinkaEvolve 0.0.7 scores it (the numbers below were measured with
ShinkaEvolve itself: bench/shinka_compat.py), read correct.json for validity, keep public
metrics, private metrics (stored, never in a prompt) and text_feedback, and give a broken
evaluator's output a candidate's status, never sandbox_error.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evolve.problem.load import load_problem
from evolve.problem.model import ProblemError
from evolve.testing.cli_helpers import ROOT, block, evolve, last_json, run_args
from evolve.testing.scripted_llm import ScriptedLLM

FIXTURES = ROOT / "tests" / "fixtures" / "shinka"
STAND_IN = ROOT / "evaluators" / "inside" / "shinka_compat"
# combined_score of each seed by ShinkaEvolve 0.0.7 (`python evaluate.py --program_path
# initial.py --results_dir D` with shinka-evolve==0.0.7 installed)
REFERENCE = {
    "circle_packing": 0.9597642169962064,
    "sine_approx_headless": 0.10452066243703832,
    "game_2048": 0.0020000000000000018,
}


def copy(name: str, dest: Path) -> Path:
    return Path(
        shutil.copytree(FIXTURES / name, dest / name, ignore=shutil.ignore_patterns("__pycache__"))
    )


def evolve_eval(folder: Path, program: str = "initial.py", *flags: str) -> dict:
    r = evolve("eval", str(folder), str(folder / program), "--json", "--sandbox", "local", *flags)
    return last_json(r)


@pytest.mark.parametrize("name", list(REFERENCE))
def test_seed_scores_as_shinkaevolve_scores_it(name, tmp_path):
    out = evolve_eval(copy(name, tmp_path))
    assert out["status"] == "ok", out
    assert out["score"] == pytest.approx(REFERENCE[name], rel=1e-9)


def test_public_and_private_metrics_and_the_folder_left_as_it_was(tmp_path):
    folder = copy("circle_packing", tmp_path)
    before = sorted(p.name for p in folder.rglob("*"))
    out = evolve_eval(folder)
    assert out["metrics"]["num_circles"] == 26.0  # public
    assert out["metrics"]["private.reported_sum_of_radii"] == pytest.approx(
        REFERENCE["circle_packing"]
    )
    assert "centers[25]" in out["artifacts"]["centers_str"]  # a public text metric
    assert out["metrics"]["num_valid_runs"] == 1.0  # run_shinka_eval's own counts
    assert sorted(p.name for p in folder.rglob("*")) == before  # results went to the scratch


def test_check_reads_the_folder_and_reports_shinkas_keys(tmp_path):
    folder = copy("circle_packing", tmp_path)
    r = evolve("check", str(folder), "--sandbox", "local")
    assert r.returncode == 0, r.stderr
    text = r.stdout + r.stderr
    assert "(shinka)" in text and "--program_path P --results_dir D" in text
    assert (
        "shinka_small.yaml" in text
        and "config files not read: shinka_large.yaml, shinka_medium.yaml" in text
    )
    assert "shinka_small.yaml: evo_config.num_generations: iterations" in text
    assert (
        text.count("shinka_small.yaml: ignored key evo_config.llm_models: models come from --model")
        == 1
    )


def test_config_keys_honoured_and_unknown_ones_reported_with_the_key_meant(tmp_path):
    folder = copy("sine_approx_headless", tmp_path)
    (folder / "shinka_small.yaml").write_text(
        textwrap.dedent("""\
        num_islands: 3
        max_evaluation_jobs: 2
        evo_config:
          num_generation: 9
          num_generations: 7
          task_sys_msg: Approximate sine without calling it.
          patch_types: [full]
        db_config:
          migration_interval: 4
    """)
    )
    p = load_problem(folder)
    assert (p.fmt, p.iterations, p.parallel, p.migration_interval) == ("shinka", 7, 2, 4)
    assert p.edit_format == "full" and p.domain_notes == "Approximate sine without calling it."
    notices = "\n".join(p.notices)
    assert (
        "ignored key num_islands: not a ShinkaEvolve 0.0.7 key (did you mean 'db_config.num_islands'?)"
        in notices
    )
    assert (
        "evo_config.num_generation: not a ShinkaEvolve 0.0.7 key (did you mean 'evo_config.num_generations'?)"
        in notices
    )


def test_task_message_comes_from_run_evo_and_bad_settings_are_one_line(tmp_path):
    folder = copy("circle_packing", tmp_path)
    assert load_problem(folder).domain_notes.startswith("You are an expert mathematician")
    (folder / "shinka_small.yaml").write_text("evo_config:\n  num_generations: many\n")
    with pytest.raises(
        ProblemError, match=r"shinka_small.yaml: evo_config.num_generations: expected int"
    ):
        load_problem(folder)
    (folder / "shinka_small.yaml").write_text("evo_config:\n  language: rust\n")
    with pytest.raises(ProblemError, match="no initial.rs; name the seed program"):
        load_problem(folder)  # a Rust seed is initial.rs unless init_program_path names one
    (folder / "shinka_small.yaml").write_text("evo_config:\n  language: cobol\n")
    with pytest.raises(ProblemError, match="evo_config.language: 'cobol': not a language"):
        load_problem(folder)


BROKEN = """\
import argparse, json, os, sys
p = argparse.ArgumentParser()
p.add_argument("--program_path"); p.add_argument("--results_dir")
a = p.parse_args()
os.makedirs(a.results_dir, exist_ok=True)
mode = os.environ["MODE"]
def put(name, obj):
    with open(os.path.join(a.results_dir, name), "w") as f:
        json.dump(obj, f)
if mode == "raise":
    raise RuntimeError("the evaluator broke")
put("metrics.json", {"combined_score": "high" if mode == "text_score" else 1.5,
                     "text_feedback": "try a hexagonal lattice", "private": {"secret": 7}})
if mode == "incorrect":
    put("correct.json", {"correct": False, "error": "circles 3 and 4 overlap"})
elif mode != "no_correct":
    put("correct.json", {"correct": True, "error": None})
"""


@pytest.mark.parametrize(
    "mode, status, error",
    [
        ("ok", "ok", None),
        ("incorrect", "invalid", "circles 3 and 4 overlap"),
        ("no_correct", "runtime_error", "evaluate.py wrote no correct.json"),
        ("text_score", "runtime_error", "combined_score is 'high', expected a number"),
        ("raise", "runtime_error", "wrote no correct.json"),
    ],
)
def test_an_evaluators_bad_output_is_the_candidates_failure(mode, status, error, tmp_path):
    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "evaluate.py").write_text(BROKEN)
    (folder / "initial.py").write_text("# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n")
    out = evolve_eval(folder, "initial.py", "--env", f"MODE={mode}")
    assert out["status"] == status, out
    if error is None:
        assert out["score"] == 1.5
        assert out["artifacts"]["text_feedback"] == "try a hexagonal lattice"
        assert out["metrics"]["private.secret"] == 7.0
    else:
        assert out["score"] is None and error in out["artifacts"]["error"], out
    if mode == "raise":  # the crash's traceback is shown; what it printed is kept, unshown
        assert "the evaluator broke" in out["artifacts"]["traceback"]
        assert "the evaluator broke" in out["artifacts"]["private.stderr"]


def stand_in(code: str, tmp_path: Path) -> dict:
    """What `code` (calling run_shinka_eval on tmp_path/prog.py) wrote, with the stand-in."""
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(STAND_IN)}, timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return {
        n: json.loads((tmp_path / "res" / f"{n}.json").read_text()) for n in ("correct", "metrics")
    }


def test_stand_in_run_shinka_eval_validates_aggregates_and_fails_as_shinka_does(tmp_path):
    (tmp_path / "prog.py").write_text("def run(seed):\n    return seed * 2.0\n")
    call = ("from shinka.core import run_shinka_eval\n"
            "run_shinka_eval('prog.py', 'res', 'run', 3, {kw}"
            "aggregate_metrics_fn=lambda r: {{'combined_score': {score}}})\n")  # fmt: skip
    ok = stand_in(
        call.format(kw="validate_fn=lambda r: (r < 5, 'too big'), ", score="sum(r)"), tmp_path
    )
    assert ok["correct"] == {"correct": False, "error": "Validation failed: too big"}
    assert ok["metrics"]["combined_score"] == 12.0 and ok["metrics"]["num_invalid_runs"] == 1
    nan = stand_in(call.format(kw="", score="float('nan')"), tmp_path)
    assert nan["correct"] == {"correct": False, "error": "combined_score is NaN"}
    bad = stand_in(call.format(kw="", score="'x'"), tmp_path)  # numpy's isnan raises: all fails
    assert bad["correct"]["correct"] is False and bad["metrics"]["combined_score"] == 0.0


def test_a_scripted_run_on_circle_packing_keeps_private_metrics_out_of_prompts(tmp_path):
    folder = copy("circle_packing", tmp_path)
    grid = """
import numpy as np


def construct_packing():
    n = 26
    centers = np.array([[(i % 6 + 0.5) / 6, (i // 6 + 0.5) / 5] for i in range(n)])
    return centers, compute_max_radii(centers)


def compute_max_radii(centers):
    n = centers.shape[0]
    radii = np.array([min(x, y, 1 - x, 1 - y) for x, y in centers])
    for i in range(n):
        for j in range(i + 1, n):
            d = float(np.sqrt(np.sum((centers[i] - centers[j]) ** 2)))
            if radii[i] + radii[j] > d:
                s = d / (radii[i] + radii[j])
                radii[i] *= s
                radii[j] *= s
    return radii
"""
    overlapping = grid.replace("    return radii\n", "    return radii + 0.05\n")
    replies = [
        block(grid),
        block(overlapping),
        block(grid.replace("(i // 6 + 0.5) / 5", "(i // 6 + 0.5) / 5.0")),
    ]
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(replies) as srv:
        # No constant tuning: each tuned child is a full circle-packing evaluation, and what
        # this test checks (private metrics never in a prompt) is about the model's children.
        r = evolve(*run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--tune-evals", "0",
                             problem=folder, iterations=3), timeout=600)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stderr.count("ignored key evo_config.llm_models") == 1
    db = sqlite3.connect(runs / "archive.db")
    rows = db.execute(
        "SELECT iteration, status, score, metrics_json FROM programs ORDER BY iteration"
    ).fetchall()
    db.close()
    seed = [row for row in rows if row[0] == 0][0]
    assert seed[2] == pytest.approx(REFERENCE["circle_packing"], rel=1e-9)
    assert "private.reported_sum_of_radii" in json.loads(seed[3])
    statuses = [row[1] for row in rows]
    assert (
        "invalid" in statuses
        and max(s or 0 for _, _, s, _ in rows) > REFERENCE["circle_packing"] + 0.3
    )
    prompts = [json.dumps(req) for req in srv.requests]
    assert len(prompts) >= 3 and all("reported_sum_of_radii" not in p for p in prompts)
    assert any("num_circles" in p for p in prompts) and any("centers[25]" in p for p in prompts)
    assert any("expert mathematician" in p for p in prompts)  # run_evo.py's task message
