"""Blame stays with the candidate (issue 37, breach 5).

A 4,000-term `1+1+...+1` makes compiling the candidate raise RecursionError: the harness's
syntax check ran into it before it reported the evaluator loaded, and the host recorded
`sandbox_error`, our fault. Whatever fails once the candidate's code was handed over is the
candidate's status (here syntax_error), in `evolve eval`, in a run, locally and on Docker.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from evaluators.inside.markers import complete_from_seed
from evaluators.inside.worker_start import preloads
from evolve.testing.cli_helpers import ROOT, archive_json, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM
from evolve.testing.toy_problem import toy_problem
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

DEEP = "+".join(["1"] * 4000)  # past what CPython's compiler can nest
OPENEVOLVE = ROOT / "tests" / "fixtures" / "openevolve" / "needs_env"
SHINKA = ROOT / "tests" / "fixtures" / "shinka" / "sine_approx_headless"


def _eval(folder: Path, program: Path, *flags: str) -> dict:
    r = evolve("eval", str(folder), str(program), "--json", *flags, timeout=300)
    assert "internal error" not in r.stderr and "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stdout.strip().splitlines()
    assert lines, f"no output (exit {r.returncode}): {r.stderr[-2000:]}"
    out = json.loads(lines[-1])
    assert r.returncode == 1, (r.returncode, out)  # a failed program, not a usage error (2)
    return out


def _cases(tmp_path: Path) -> list[tuple[Path, Path, tuple[str, ...]]]:
    """(folder, deep program, flags) for a native, an OpenEvolve and a ShinkaEvolve folder."""
    toy = toy_problem(tmp_path / "toy")
    (tmp_path / "toy_deep.py").write_text(
        f"# EVOLVE-BLOCK-START\ndef f(x):\n    return x + ({DEEP})\n# EVOLVE-BLOCK-END\n"
    )
    oe = OPENEVOLVE / "initial_program.py"
    (tmp_path / "oe_deep.py").write_text(f"X = {DEEP}\n" + oe.read_text())  # outside the block
    (tmp_path / "shinka_deep.py").write_text(
        f"# EVOLVE-BLOCK-START\ndef approximate(x):\n    return x * 0 * ({DEEP})\n# EVOLVE-BLOCK-END\n"
    )
    shinka = Path(shutil.copytree(SHINKA, tmp_path / SHINKA.name))
    return [
        (toy, tmp_path / "toy_deep.py", ()),
        (OPENEVOLVE, tmp_path / "oe_deep.py", ("--env", "FIXTURE_MODE=fast")),
        (shinka, tmp_path / "shinka_deep.py", ()),
    ]


def _assert_syntax_error(out: dict) -> None:
    assert out["status"] == "syntax_error", out
    assert out["score"] is None and "nested too deeply" in out["artifacts"]["error"], out


def test_the_host_side_checks_of_a_program_too_deep_to_parse_do_not_raise():
    deep = f"X = {DEEP}\n"
    assert preloads(deep.encode()) == []  # the worker's hint: none, no RecursionError
    assert complete_from_seed(deep, "# EVOLVE-BLOCK-START\nX = 1\n# EVOLVE-BLOCK-END\n") == deep


@pytest.mark.parametrize("kind", ["native", "openevolve", "shinka"])
def test_evolve_eval_of_a_deep_expression_is_the_candidates_syntax_error(kind, tmp_path):
    cases = dict(zip(("native", "openevolve", "shinka"), _cases(tmp_path), strict=True))
    folder, program, flags = cases[kind]
    _assert_syntax_error(_eval(folder, program, "--sandbox", "local", *flags))


def test_evolve_eval_on_docker_of_a_deep_expression_is_the_candidates_syntax_error(
    docker_image,  # noqa: F811
    tmp_path,
):
    for folder, program, flags in _cases(tmp_path)[:2]:
        _assert_syntax_error(_eval(folder, program, "--sandbox", "docker", *flags))


def test_a_run_records_a_deep_candidate_as_a_syntax_error_and_goes_on(tmp_path):
    problem = toy_problem(tmp_path / "toy")
    replies = [
        f"```python\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x + ({DEEP})\n# EVOLVE-BLOCK-END\n```",
        "```python\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x + 7\n# EVOLVE-BLOCK-END\n```",
    ]
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(
            *run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--llm-parallel", "1",
                      "--tune-evals", "0", "--repair-attempts", "0", problem=problem, iterations=2),
            timeout=300,
        )  # fmt: skip
    assert r.returncode == 0, r.stderr[-3000:]
    assert [run["status"] for run in archive_json(runs, "runs")] == ["finished"]
    with sqlite3.connect(runs / "archive.db") as db:
        rows = {i: (status, json.loads(a).get("error", "")) for i, status, a in db.execute(
            "SELECT iteration, status, artifacts_json FROM programs")}  # fmt: skip
    # The controller may refuse the reply itself (its own parse of the edit is deeper in the
    # stack than the sandbox's compile), else the sandbox reports it: the candidate's either way
    status, error = rows[1]
    assert status in ("syntax_error", "invalid_edit") and "Recursion" in error, rows
    assert rows[2][0] == "ok" and all(s != "sandbox_error" for s, _ in rows.values()), rows
