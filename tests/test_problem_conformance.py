"""One contract for every problem folder, through the real `evolve` CLI and local sandbox.

Every directory under problems/ is a problem and is held to all of it by existing; what
differs between problems is data in its `conformance.toml` (tests/support/problem_contract.py
says what each key means). The contract:

- the folder: problem.toml loads, its name is the folder's, the seed marks its EVOLVE
  block, README.md has "Reference numbers" and names the metric and every baseline;
- the baselines hold their EVOLVE block only (a docstring at most outside it), complete
  with the seed's fixed code, and one of them is the seed;
- shipped data is declared, verified by its SHA-256 and named in data/SOURCES.md;
- the README's numbers: each [[readme]] row is printed in README.md and reproduced by
  `evolve eval --json` (the seed's baseline on the train and test splits at least);
- bad candidates ([[bad]]: invalid, runtime_error and syntax_error at least) end in that
  status with a clear error, exit code 1 and no score;
- tampering ([[tamper]]: patching the evaluator in the candidate's process, printing fake
  scores) gains nothing, and a candidate that never returns ([timeout]) is killed;
- `evolve check` passes on the train and held-out splits;
- a scripted OpenAI-compatible server drives a 20-iteration `evolve run` ([run]) that
  finishes and improves on the seed.

Run one problem with `pytest tests/test_problem_conformance.py -k <name>`.
"""

from __future__ import annotations

import ast
import re
import shutil
import tomllib
from pathlib import Path

import pytest

from evaluators.tree import decode
from evolve.edits.blocks import complete_from_seed, evolvable_text, find_blocks, fixed_parts
from evolve.problem.baselines import baseline_files
from evolve.problem.data import DataFile, data_dir_for, ensure
from evolve.problem.load import load_problem, require_blocks
from evolve.problem.program_input import program_code
from evolve.testing.cli_helpers import block, evolve
from evolve.testing.scripted_llm import Reply
from tests.support.data_seeds import scored_at
from tests.support.problem_contract import (
    Contract,
    ContractError,
    as_number,
    body_of,
    check_values,
    contract,
    edits,
    evaluated,
    evaluator,
    number_of,
    printed_in,
    problem_dirs,
    program_for,
    readme_output,
    split_of,
)
from tests.support.problem_hostile import (
    FAILED,
    assert_fails,
    block_body,
    eval_json,
    laid_out,
    scripted_run,
    short_timeout_copy,
    with_block,
)

PROBLEMS = problem_dirs()


def _rows(section: str, key) -> list:
    return [
        pytest.param(p, row, id=f"{p.name}-{key(row)}")
        for p in PROBLEMS
        for row in contract(p).rows(section)
    ]


def _contract(problem: Path) -> Contract:
    c = contract(problem)
    if c.error:
        raise ContractError(c.error)
    return c


by_problem = pytest.mark.parametrize("problem", PROBLEMS, ids=[p.name for p in PROBLEMS])


def _score_is_metric(c: Contract, out: dict) -> None:
    """score = metric (maximize) or -metric (minimize), where the contract says so."""
    if not c.data.get("score_is_metric", True):
        return
    p = load_problem(c.problem)
    sign = 1 if p.direction == "maximize" else -1
    assert out["score"] == sign * out["metrics"][p.metric], (out["score"], out["metrics"])


# ---------------------------------------------------------------- the folder


@by_problem
def test_the_folder_states_its_contract(problem):
    c = _contract(problem)
    p = load_problem(problem)
    require_blocks(p)
    assert p.name == problem.name and p.direction in ("minimize", "maximize")
    assert p.train_split and p.test_split, "a problem scores new bests on a held-out split"
    readme = (problem / "README.md").read_text()
    assert re.search(r"(?m)^#+ .*Reference numbers", readme), "README.md: no Reference numbers"
    assert p.metric in readme
    baselines = {b.name for b in baseline_files(problem)}  # folders, for several files
    assert c.data.get("seed_baseline") in baselines, "seed_baseline: one of baselines/*.py"
    for name in baselines:
        assert name in readme, f"README.md does not name baselines/{name}"
    rows = c.rows("readme")
    assert {r["program"] for r in rows} == baselines, "every baseline has README numbers"
    for split in (p.train_split, p.test_split):
        row = c.readme(c.data["seed_baseline"], split)
        assert row.get("via", "cli") == "cli", "the seed's numbers come from `evolve eval`"
    statuses = {r.get("status", "invalid") for r in c.rows("bad") if not r.get("in_process")}
    assert {"invalid", "runtime_error", "syntax_error"} <= statuses <= set(FAILED), statuses
    tampers = c.rows("tamper")
    assert any("prelude" in t for t in tampers) and any(t.get("fake_print") for t in tampers)
    assert "timeout" in c.data, "[timeout]: a candidate that never returns"
    run = c.data.get("run", {})
    assert run.get("replies") and run.get("code"), "[run]: replies and the winning code"
    assert sum(k in run for k in ("beats", "matches", "reference")) == 1, run


@by_problem
def test_baselines_hold_only_their_block_and_one_is_the_seed(problem):
    c = _contract(problem)
    p = load_problem(problem)
    if p.files:
        _tree_baselines_hold_only_their_blocks(c, p)
        return
    seed = p.seed_code
    for path in sorted((problem / "baselines").glob("*.py")):
        if path.is_symlink():  # the seed itself
            assert path.resolve() == p.seed_file.resolve(), path.name
            continue
        text = path.read_text()
        assert len(find_blocks(text)) == 1, path.name
        outside = ast.parse("".join(fixed_parts(text))).body  # a docstring at most
        assert len(outside) <= 1 and all(
            isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in outside
        ), path.name
        whole = complete_from_seed(text, seed)
        assert whole != text and fixed_parts(whole) == fixed_parts(seed), path.name
        assert evolvable_text(whole) == evolvable_text(text), path.name
    assert block_body(p.seed_file) == block_body(problem / "baselines" / c.data["seed_baseline"])


@by_problem
def test_shipped_data_is_declared_verified_and_sourced(problem, monkeypatch):
    monkeypatch.delenv("EVOLVE_DATA_DIR", raising=False)
    declared = tomllib.loads((problem / "problem.toml").read_text()).get("data", [])
    data = problem / "data"
    if not declared:
        assert not data.exists(), "data/ without [[data]] entries: nothing verifies it"
        return
    files = [DataFile(**d) for d in declared]
    assert data_dir_for(problem) == data
    ensure(files, data, download=False)  # the shipped copy matches every checksum
    sources = (data / "SOURCES.md").read_text()
    for f in files:
        assert f.sha256 and f.sha256 in sources, f.path
        assert Path(f.path).name in sources, f"data/SOURCES.md does not name {f.path}"
    shipped = {str(q.relative_to(data)) for q in data.rglob("*") if q.is_file()}
    assert shipped - {"SOURCES.md"} <= {f.path for f in files}, "every data file is declared"


def _tree_baselines_hold_only_their_blocks(c: Contract, p) -> None:
    """A program of several files: each baseline is a folder of evolving files at their tree
    paths, each its EVOLVE-BLOCKs only; the seed's baseline holds the seed's blocks."""
    seed = decode(p.seed_code, p.entry)
    for folder in baseline_files(c.problem):
        assert folder.is_dir(), f"{folder.name}: a baseline of a tree is a folder"
        given = {f.relative_to(folder).as_posix(): f for f in folder.rglob("*") if f.is_file()}
        assert given and set(given) <= set(p.evolving_files), (folder.name, sorted(given))
        for rel, path in given.items():
            text = path.read_text()
            assert len(find_blocks(text)) == len(find_blocks(seed[rel])) >= 1, (folder.name, rel)
            outside = ast.parse("".join(fixed_parts(text))).body  # a docstring at most
            assert len(outside) <= 1, (folder.name, rel)
            whole = complete_from_seed(text, seed[rel])
            assert fixed_parts(whole) == fixed_parts(seed[rel]), (folder.name, rel)
        completed = decode(program_code(p, folder), p.entry)
        assert list(completed) == list(p.files), folder.name
        assert all(completed[f] == seed[f] for f in p.fixed_files), folder.name
    home = c.problem / "baselines" / c.data["seed_baseline"]
    assert program_code(p, home) == p.seed_code, "seed_baseline: the seed's own blocks"


# ---------------------------------------------------------------- the README's numbers


@by_problem
def test_the_readme_prints_every_number_of_the_contract(problem):
    c = _contract(problem)
    readme = (problem / "README.md").read_text()
    metric = load_problem(problem).metric
    for row in c.rows("readme"):
        for what, spec in (
            ("score", row.get("score")),
            (metric, row.get("metrics", {}).get(metric)),
        ):
            value = number_of(spec)
            if value is not None:
                assert printed_in(readme, value), (
                    f"{row['program']} on {row['split']}: {what} {spec}"
                )


@pytest.mark.parametrize("problem, row", _rows("readme", lambda r: f"{r['program']}@{r['split']}"))
def test_baselines_reproduce_the_readme(problem, row):
    c = _contract(problem)
    out = readme_output(problem, row["program"], row["split"])
    what = f"{row['program']} on {row['split']}"
    if row.get("via", "cli") == "cli":
        assert out["status"] == "ok" and out["returncode"] == 0, (what, out)
    else:
        assert out.get("valid", True) is not False, (what, out)
    check_values(out, row, what)
    _score_is_metric(c, out)


# ---------------------------------------------------------------- bad and hostile candidates


@pytest.mark.parametrize("problem, row", _rows("bad", lambda r: r["name"]))
def test_bad_candidates_fail_with_a_clear_error(problem, row, tmp_path):
    c = _contract(problem)
    prog = program_for(c, row, tmp_path)
    fragments = row["error"] if isinstance(row["error"], list) else [row["error"]]
    if row.get("in_process"):  # the evaluator's evaluate(), here (the candidate in its worker)
        with laid_out(problem, prog) as entry:  # a program of several files: laid out
            r = evaluator(problem).evaluate(str(entry), split_of(c, row))
        assert r["valid"] is False, r
        error = r["artifacts"]["error"]
        for fragment in fragments:
            assert fragment in error, (fragment, error)
    else:
        r = eval_json(problem, prog, split_of(c, row))
        for fragment in fragments:
            assert_fails(r, fragment, row.get("status", "invalid"))
        error = r["artifacts"]["error"]
        assert "Traceback" not in error, error  # the failure said plainly (a traceback apart)
    if "error_starts" in row:
        assert error.startswith(row["error_starts"]), error
    if "error_match" in row:
        assert re.match(row["error_match"], error), error
    if "traceback" in row:
        assert row["traceback"] in r["artifacts"]["traceback"]
    check_values(r, row, row["name"], keys=())


@pytest.mark.parametrize("problem, row", _rows("tamper", lambda r: r["name"]))
def test_tampering_and_printed_scores_gain_nothing(problem, row, tmp_path):
    c = _contract(problem)
    out = evaluated(problem, program_for(c, row, tmp_path), split_of(c, row))
    assert out["status"] == "ok" and out["returncode"] == 0, out
    check_values(out, row, row["name"])
    _score_is_metric(c, out)
    if row.get("fake_print"):  # printed, and never read as the score
        assert "1e9" in out["artifacts"]["stdout"]
    if "honest" in row:  # what the baseline scores untouched
        honest = readme_output(problem, row["honest"]["program"], split_of(c, row))
        for metric in row["honest"]["metrics"]:
            assert out["metrics"][metric] == pytest.approx(honest["metrics"][metric], abs=1e-12)


@by_problem
def test_a_candidate_that_never_returns_times_out(problem, tmp_path):
    c = _contract(problem)
    slow = short_timeout_copy(problem, tmp_path, 3)
    row = c.data["timeout"]
    prog = with_block(slow, body_of(c, row), tmp_path, path=row.get("path"))
    out = eval_json(slow, prog, split_of(c, row))
    assert_fails(out, "timeout", "timeout")


# ---------------------------------------------------------------- check and run


@by_problem
def test_evolve_check_passes(problem):
    c = _contract(problem)
    p = load_problem(problem)
    r = evolve("check", str(problem), timeout=240)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    for split, label in ((p.train_split, ""), (p.test_split, " (held out)")):
        score = c.readme(c.data["seed_baseline"], split).get("score")
        exact = f", score {score}" if isinstance(score, float) else ""
        assert f"seed on {split}{label}: ok{exact}" in r.stdout, r.stdout


def _note(c: Contract, reply: dict) -> str:
    """What the scripted model says before its code: the reply's note, else the canned
    edit's own."""
    if "note" in reply:
        return reply["note"]
    return edits(c.name)[reply["edit"]][0] if "edit" in reply else "Here is my idea."


@by_problem
def test_a_scripted_run_improves_on_the_seed(problem, tmp_path):
    c = _contract(problem)
    run = c.data["run"]
    replies: list[Reply | str] = []
    for r in run["replies"]:
        source = run["reference"] if r.get("reference") else r
        if "text" in r:
            replies.append(Reply(r["text"]))
        else:  # a program of several files: the reply names the file it rewrites
            replies.append(block(body_of(c, source), _note(c, r), path=source.get("path")))
    seed = run.get("data_seed")
    best = scripted_run(problem, replies, tmp_path / "runs", data_seed=seed)
    assert best["iteration"] > 0 and run["code"] in best["code"], best["code"]
    assert best["test_score"] is not None
    p = load_problem(problem)
    if "beats" in run:
        assert best["score"] > as_number(c.readme(run["beats"], p.train_split)["score"])
    elif "matches" in run:  # the README's numbers of that baseline, on both splits
        for split, score, metrics in (
            (p.train_split, "score", "metrics"),
            (p.test_split, "test_score", "test_metrics"),
        ):
            row = c.readme(run["matches"], split)
            got = {"score": best[score], "metrics": best[metrics]}
            check_values(got, row, f"best vs {run['matches']} on {split}", keys=("score",))
    else:  # a program scored in this process on the run's own workloads (its data seed)
        ref = run["reference"]
        ref_prog = with_block(problem, body_of(c, ref), tmp_path, path=ref.get("path"))
        got_ref = scored_at(seed, evaluator(problem), problem, ref_prog, tmp_path)
        key, tol = run.get("key", "score"), run.get("abs", 0.0)
        got, want = (
            (best[key], got_ref[key])
            if key == "score"
            else (best["metrics"][key], got_ref["metrics"][key])
        )
        if run["compare"] == "beats":
            assert got > want, (got, want)
        elif run["compare"] == "at_least":
            assert got >= want - tol, (got, want)
        else:
            assert run["compare"] == "matches", run["compare"]
            assert got == pytest.approx(want, abs=tol), (got, want)
    shutil.rmtree(tmp_path / "runs", ignore_errors=True)


def test_a_folder_without_its_contract_fails_it(tmp_path):
    """A new problem folder gets the suite by existing: without conformance.toml, or with a
    key the contract does not know, every test of the suite fails on it, saying why."""
    new = tmp_path / "new_problem"
    new.mkdir()
    assert "conformance.toml is missing" in (contract(new).error or "")
    typo = tmp_path / "typo"
    typo.mkdir()
    (typo / "conformance.toml").write_text(
        'seed_baseline = "a.py"\n[[bad]]\nname = "x"\nerorr = "y"\n'
    )
    assert "unknown keys ['erorr']" in (contract(typo).error or "")
