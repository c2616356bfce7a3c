"""Helpers for the per-problem hostile and validity checks, through the real CLI.

Every problem in the library must show, with `evolve eval ... --json` and the
real local sandbox, that a bad or hostile candidate ends as a failure with a
clear error (never a score), and that tampering gains nothing. These helpers
keep those tests short:

    prog = with_block(PROBLEM, "def policy(...):\\n    ...\\n", tmp_path)
    out = eval_json(PROBLEM, prog, "train")
    assert_fails(out, "not a permutation")

    slow = short_timeout_copy(PROBLEM, tmp_path, 3)   # the same problem, a 3 s deadline
    assert eval_json(slow, with_block(slow, LOOP_BODY, tmp_path))["status"] == "timeout"
"""

from __future__ import annotations

import contextlib
import importlib.util
import itertools
import json
import os
import re
import shutil
import sys
import tempfile
import tomllib
from collections.abc import Iterator
from pathlib import Path

from evaluators.tree import decode
from evolve.edits.blocks import complete_from_seed
from evolve.problem.load import load_problem
from evolve.problem.program_input import program_code
from evolve.testing.cli_helpers import archive_json, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM

START, END = "# EVOLVE-BLOCK-START", "# EVOLVE-BLOCK-END"
FAILED = ("invalid", "runtime_error", "syntax_error", "timeout")
# Printed by hostile candidates: the sandbox must never read a score from stdout.
FAKE_PRINT = (
    'print(\'{"score": 1e9, "combined_score": 1e9, "valid": true}\')\n'
    "print('score: 1000000000')\n"
)
_ids = itertools.count()


def load_module(path: Path):
    """Import one of a problem's files (evaluator, seed, simulator) under a fresh name."""
    spec = importlib.util.spec_from_file_location(f"_problem_file_{next(_ids)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def block_body(path: Path) -> str:
    """The text between a file's EVOLVE-BLOCK markers."""
    return path.read_text().split(START)[1].split(END)[0].strip("\n") + "\n"


def complete_baseline(problem: Path, baseline: str, dest: Path) -> Path:
    """A baseline (its EVOLVE-BLOCK only) completed with the seed's fixed code, as `evolve eval`
    does, written into dest."""
    path = dest / baseline
    seed = (problem / "seed.py").read_text()
    path.write_text(complete_from_seed((problem / "baselines" / baseline).read_text(), seed))
    return path


def with_block(
    problem: Path, body: str, dest: Path, prelude: str = "", path: str | None = None
) -> Path:
    """The problem's seed with its (single) EVOLVE block replaced by `body`, written into dest.

    `prelude` goes right after the block's start marker (e.g. module-level patching code).
    A program of several files is written as a folder: the seed's tree with the block of its
    file `path` (default: the first evolving file) replaced.
    """
    if not is_tree_problem(problem):
        path_ = Path(dest) / f"cand{next(_ids)}.py"
        path_.write_text(_with_body((problem / _entry(problem)).read_text(), body, prelude))
        return path_
    p = load_problem(problem)
    files = decode(p.seed_code, p.entry)
    target = path or p.evolving_files[0]
    files[target] = _with_body(files[target], body, prelude)
    return write_tree(files, Path(dest) / f"cand{next(_ids)}")


def _with_body(seed: str, body: str, prelude: str) -> str:
    head, rest = seed.split(START, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{START}\n{prelude}{body.rstrip()}\n{END}{tail}"


def is_tree_problem(problem: Path) -> bool:
    """Whether the folder's program is several files (its problem.toml has [program])."""
    return "program" in tomllib.loads((problem / "problem.toml").read_text())


def write_tree(files: dict[str, str], folder: Path) -> Path:
    """A program's files written at their paths under `folder` (returned)."""
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


@contextlib.contextmanager
def laid_out(problem: Path, program: Path) -> Iterator[Path]:
    """A program for the evaluator's evaluate() in this process: a file as it is; a folder
    (several files) completed from the seed, laid out in a fresh folder and named to the
    kit as a tree (as the harness does), its entry's path given."""
    from evaluators import kit

    if not program.is_dir():
        yield program
        return
    p = load_problem(problem)
    files = decode(program_code(p, program), p.entry)
    root = write_tree(files, Path(tempfile.mkdtemp()))
    kit.use_tree(str(root), list(files))
    try:
        yield root / p.entry
    finally:
        kit.use_tree(str(root), [])


def run_in_process(problem: Path, ev, program: Path, split: str) -> dict:
    """The problem's evaluate() then its trusted score(), in this process (the candidate in
    its own worker); a block-only file gets the seed's fixed code, as `evolve eval` does, and
    a program of several files (a folder) is completed from the seed's tree and laid out."""
    from evaluators import kit

    if program.is_dir():
        with laid_out(problem, program) as entry:
            return kit.evaluate_and_score(ev, str(entry), split)
    code = program.read_text()
    whole = complete_from_seed(code, (problem / _entry(problem)).read_text())
    if whole != code:
        program = Path(tempfile.mkdtemp()) / _entry(problem)
        program.write_text(whole)
    return kit.evaluate_and_score(ev, str(program), split)


def eval_json(
    problem: Path, program: Path, split: str | None = "train", timeout: float = 240
) -> dict:
    """`evolve eval PROBLEM PROGRAM [--split S] --json`; the parsed JSON plus `returncode`."""
    args = ["eval", str(problem), str(program), "--json"]
    if split:
        args += ["--split", split]
    r = evolve(*args, timeout=timeout)
    try:
        out = json.loads(r.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        raise AssertionError(
            f"evolve eval printed no JSON (rc {r.returncode}):\n{r.stdout}\n{r.stderr}"
        ) from None
    out["returncode"] = r.returncode
    return out


def assert_fails(out: dict, fragment: str = "", status: str | tuple[str, ...] = FAILED) -> None:
    """A failing status, exit code 1, no score, and `fragment` in the error artifact."""
    statuses = (status,) if isinstance(status, str) else status
    error = out.get("artifacts", {}).get("error", "")
    assert out["status"] in statuses, (out["status"], error)
    assert out["score"] is None and out["returncode"] == 1
    assert fragment.lower() in error.lower(), f"{fragment!r} not in error: {error!r}"


def short_timeout_copy(problem: Path, dest: Path, timeout_s: float = 3.0) -> Path:
    """A copy of the problem folder whose evaluation deadline is `timeout_s` seconds (the
    files its problem.toml includes, such as ../other/sim.py, copied beside it alike)."""
    copy = Path(dest) / f"{problem.name}_t{next(_ids)}"
    shutil.copytree(problem, copy, ignore=shutil.ignore_patterns("__pycache__"))
    toml = copy / "problem.toml"
    for include in tomllib.loads(toml.read_text()).get("problem", {}).get("include", []):
        target = Path(os.path.normpath(copy / include))
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy((problem / include).resolve(), target)
    text, n = re.subn(r"(?m)^timeout_s\s*=.*$", f"timeout_s = {timeout_s}", toml.read_text())
    assert n == 1, f"{toml}: expected exactly one timeout_s line"
    toml.write_text(text)
    return copy


def scripted_run(
    problem: Path, replies: list, runs: Path, iterations: int = 20, data_seed: int | None = None
) -> dict:
    """A run of `iterations` on the scripted server's replies must finish; the problem's best.
    `data_seed` fixes the run's private data seed (default: a fresh one, as `evolve run`). No
    constant tuning: the best is a scripted program, to compare with the problem's numbers."""
    extra = ("--tune-evals", "0") + (() if data_seed is None else ("--data-seed", str(data_seed)))
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(
            *run_args(srv.base_url, runs, *extra, problem=problem, iterations=iterations),
            timeout=300,
        )
    assert r.returncode == 0, r.stderr[-3000:]
    [run] = archive_json(runs, "runs")
    assert run["iterations_done"] == iterations and run["status"] == "finished"
    name = re.search(r'(?m)^name\s*=\s*"([^"]+)"', (problem / "problem.toml").read_text())
    assert name is not None
    return archive_json(runs, "best", "--problem", name.group(1))


def _entry(problem: Path) -> str:
    m = re.search(r'(?m)^entry\s*=\s*"([^"]+)"', (problem / "problem.toml").read_text())
    return m.group(1) if m else "seed.py"
