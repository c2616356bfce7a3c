"""A seed without EVOLVE-BLOCK markers in an OpenEvolve folder evolves as a whole file, as
OpenEvolve runs it (`enforce_evolve_blocks: false`, its default; 0.4.1's `true` has no
blocks to enforce in such a seed either): `check` says so in one line, prompts ask for
the program, diffs and full rewrites apply to the whole file, the web view shows the
children. A native problem (problem.toml) still needs markers."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evolve.edits import apply_reply
from evolve.problem.load import ProblemError, load_problem, require_blocks
from evolve.search.prompts import PromptBuilder, PromptContext, ShownProgram
from evolve.testing.cli_helpers import ROOT, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM
from evolve.web.app import make_app

FIXTURE = ROOT / "tests" / "fixtures" / "openevolve" / "unmarked_seed"
WHOLE = "  seed has no EVOLVE-BLOCK markers: the whole file evolves (as OpenEvolve and LEVI)"
SEED = (FIXTURE / "initial_program.py").read_text()
LEAST_LOADED = "    return min(range(len(backlog)), key=lambda i: backlog[i])\n"
# a diff that changes the only line a block would hold, and one outside any function
DIFF = (
    "Send each job to the least loaded server.\n\n"
    "<<<<<<< SEARCH\n    return 0\n=======\n" + LEAST_LOADED + ">>>>>>> REPLACE\n"
)
# a whole new program: a module-level helper and a new constant, which no block would allow
REWRITE = '''Weigh the job's size against each backlog.

```python
"""Dispatch with a lookahead helper."""

SERVERS = 3
SLACK = 1


def _after(backlog, size, i):
    return backlog[i] + size - SLACK


def choose_server(backlog, size):
    return min(range(len(backlog)), key=lambda i: (_after(backlog, size, i), i))
```
'''


def copy(dest: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, dest, ignore=shutil.ignore_patterns("__pycache__")))


def test_the_fixture_seed_has_no_markers():
    assert "EVOLVE-BLOCK" not in SEED.replace("No EVOLVE-BLOCK markers", "")


def test_check_says_the_whole_file_evolves_and_passes(tmp_path):
    r = evolve("check", copy(tmp_path / "unmarked_seed"), "--sandbox", "local")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines.count(WHOLE) == 1, r.stdout
    assert lines[-1] == "ok"


def test_a_native_problem_still_needs_markers(tmp_path):
    folder = Path(shutil.copytree(ROOT / "problems" / "binpack", tmp_path / "binpack"))
    problem = load_problem(folder)
    require_blocks(problem)  # marked: fine
    seed = folder / problem.entry
    seed.write_text(
        "".join(ln for ln in seed.read_text().splitlines(True) if "EVOLVE-BLOCK" not in ln)
    )
    unmarked = load_problem(folder)
    assert not unmarked.whole_file
    with pytest.raises(ProblemError, match="no EVOLVE-BLOCK-START ... EVOLVE-BLOCK-END markers"):
        require_blocks(unmarked)


@pytest.mark.parametrize("fmt", ["diff", "block", "full", "crossover"])
def test_prompts_ask_for_the_program_not_a_block(fmt):
    problem = load_problem(FIXTURE)
    assert problem.whole_file
    seed = ShownProgram(problem.seed_code, 0.16)
    ctx = PromptContext(parent=seed, edit_format=fmt, second=seed if fmt == "crossover" else None)
    system, user = (m["content"] for m in PromptBuilder(problem).build(ctx))
    assert "no EVOLVE-BLOCK markers: all of it may change" in system
    assert "between the EVOLVE-BLOCK-START" not in system
    assert "EVOLVE-BLOCK" not in user.replace(SEED.strip(), ""), user  # the seed's docstring
    short = PromptBuilder(problem, style="short").build(ctx)[0]["content"]
    assert "EVOLVE-BLOCK" not in short


def test_a_diff_and_a_rewrite_apply_to_the_whole_file():
    diff = apply_reply(SEED, DIFF, "diff")
    assert diff.ok and diff.kind == "diff" and LEAST_LOADED in diff.code, diff.error
    full = apply_reply(diff.code, REWRITE, "diff")
    assert full.ok and full.kind == "full", full.error
    assert "def _after(" in full.code and "SLACK = 1" in full.code
    assert "+SLACK = 1" in full.diff and '-"""Dispatch each arriving' in full.diff
    # a block-format reply (markers the model invented around the program): the markers go,
    # or they would fence off every later edit of a file that has none
    program = full.code.replace("SLACK = 1", "SLACK = 3")
    block = apply_reply(
        full.code, f"```python\n# EVOLVE-BLOCK-START\n{program}# EVOLVE-BLOCK-END\n```", "block"
    )
    assert block.ok and block.kind == "block" and block.code == program, block.error


def test_a_scripted_run_evolves_the_whole_file(tmp_path):
    """Three iterations: a diff and two rewrites, each scored; the web view shows them."""
    runs = tmp_path / "runs"
    other = REWRITE.replace("SLACK = 1", "SLACK = 2")
    with ScriptedLLM.from_list([DIFF, REWRITE, other]) as llm:
        r = evolve(
            *run_args(llm.base_url, runs, problem=copy(tmp_path / "unmarked_seed"), iterations=3),
            "--sandbox",
            "local",
            "--tune-evals",
            "0",  # the three model-written children only: a tuned child may or may not fit in
        )
    assert r.returncode == 0, r.stderr
    assert (
        r.stderr.count("initial_program.py: no EVOLVE-BLOCK markers: the whole file evolves") == 1
    )
    run_id = r.stdout.strip().splitlines()[-1]
    web = TestClient(make_app(runs))
    programs = web.get(f"/api/runs/{run_id}/programs", params={"code": "1"}).json()
    children = [p for p in programs if p["iteration"] > 0]
    assert len(children) == 3, programs
    by_kind = {p["edit_kind"]: p for p in children if p["status"] == "ok"}
    assert {"diff", "full"} <= set(by_kind), children
    seed = next(p for p in programs if p["iteration"] == 0)
    assert all(p["score"] > seed["score"] for p in by_kind.values())
    assert LEAST_LOADED in by_kind["diff"]["code"]
    assert "def _after(" in by_kind["full"]["code"]
    page = web.get(f"/programs/{by_kind['full']['program_id']}")
    assert page.status_code == 200 and "_after" in page.text
    detail = web.get(f"/api/programs/{by_kind['full']['program_id']}").json()
    assert "+SLACK" in detail["diff_to_parent"]


def test_enforce_evolve_blocks_is_read_and_changes_nothing_for_an_unmarked_seed(tmp_path):
    """0.4.1's enforce_evolve_blocks() returns the new code as is when the parent has no
    blocks: `true` still evolves this seed whole, and the report says what the key does."""
    from evolve.problem.check import describe

    folder = copy(tmp_path / "unmarked_seed")
    config = folder / "config.yaml"
    config.write_text(config.read_text() + "enforce_evolve_blocks: true\n")
    problem = load_problem(folder)
    assert problem.whole_file
    lines = describe(problem)
    assert WHOLE in lines
    [key] = [ln for ln in lines if ln.startswith("  config.yaml: enforce_evolve_blocks")]
    assert key.startswith("  config.yaml: enforce_evolve_blocks: true is what evolve always does")
    config.write_text(config.read_text().replace(": true", ": maybe"))
    with pytest.raises(ProblemError, match="enforce_evolve_blocks"):
        load_problem(folder)
