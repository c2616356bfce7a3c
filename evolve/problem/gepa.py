"""Load a GEPA optimize_anything script (`evolve run main.py`) as a problem.

The script is the problem: its call's seed is the program (a str evolves whole as one file;
a dict is a program of several files, one per key, through the tree machinery), objective
and background are the domain notes, the valset's mean (the dataset's without one) is the
score, and max_metric_calls the budget. The call is learnt in the sandbox
(evolve/problem/gepa_capture.py); candidates are scored there by evaluators/inside/gepa_score.py.
"""

from __future__ import annotations

import ast
import mmap
from pathlib import Path

from evaluators.inside import gepa_score
from evaluators.tree import TreeError, check_path, encode
from evolve.problem.gepa_capture import Facts, facts_of
from evolve.problem.model import ONE_SPLIT, Problem, ProblemError
from evolve.settings.overrides import Overrides

CALL = b"optimize_anything"
EVAL_TIMEOUT_S = 600.0  # one candidate's whole valset pass


def mentions_call(path: Path) -> bool:
    """Whether a .py file names optimize_anything (read, never run)."""
    try:
        with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return m.find(CALL) >= 0
    except (OSError, ValueError):
        return False


def find_script(root: Path) -> Path | None:
    """A folder's GEPA script: its one top-level .py that names optimize_anything."""
    found = [p for p in sorted(root.glob("*.py")) if p.is_file() and mentions_call(p)]
    return found[0] if len(found) == 1 else None


def package_root(script: Path, levels: int = 4) -> Path:
    """The folder the script's imports resolve from: its own, or, where it imports the
    package it lies in by its absolute name (GEPA's examples: `from examples.circle_packing.utils
    import ...`, run from GEPA's root), that package's parent. Read with ast, never run."""
    try:
        tree = ast.parse(script.read_bytes())
    except (SyntaxError, ValueError, OSError):
        return script.parent
    modules = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    modules |= {
        n.module
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module and not n.level
    }
    here = script.parent
    for up in list(here.parents)[:levels]:
        inside = here.relative_to(up).parts  # a module of the script's own folder, named from up
        if any(tuple(m.split("."))[: len(inside)] == inside for m in modules):
            return up
    return script.parent


WHY = {
    "reflection": "models come from --model / --api-base",
    "refiner": "evolve's proposer rewrites the candidate (no separate refiner)",
    "engine.run_dir": "runs live in the archive under --runs-dir",
    "engine.parallel": "use --parallel",
    "engine.max_workers": "use --parallel",
    "tracking": "evolve ui and the archive show the run",
}


def why(key: str) -> str:
    """Why a GEPA config setting has no effect here."""
    return WHY.get(key, WHY.get(key.split(".")[0], "a GEPA setting with no evolve counterpart"))


def per_candidate(facts: Facts) -> int:
    """Metric calls one candidate costs: one per valset (or dataset) example, else one."""
    return facts.sizes.get("valset") or facts.sizes.get("dataset") or 1


def _program(facts: Facts, shown: Path) -> tuple[str, str, tuple[str, ...]]:
    """(entry, seed_code, files) of the seed."""
    if isinstance(facts.seed, str):
        try:
            compile(facts.seed, "seed", "exec", dont_inherit=True)
            entry = "candidate.py"
        except (SyntaxError, ValueError):
            entry = "candidate.txt"  # a prompt, not a program: no Python checks
        return entry, facts.seed, ()
    try:
        keys = tuple(check_path(k) for k in facts.seed)
        code = encode(facts.seed)
    except TreeError as e:
        raise ProblemError(f"{shown}: seed_candidate: {e}") from None
    if len(keys) == 1 and "/" in keys[0]:
        raise ProblemError(f"{shown}: seed_candidate: a lone key is a file name, got {keys[0]!r}")
    return keys[0], code, keys if len(keys) > 1 else ()


def notes(facts: Facts, script: str) -> str:
    """The domain notes: objective, background, and what the candidate is."""
    shape = (
        "one text"
        if isinstance(facts.seed, str)
        else "several named texts: " + ", ".join(facts.seed)
    )
    parts = [facts.objective, facts.background]
    parts.append(f"The candidate is {shape}, scored by {script}'s evaluator {facts.evaluator}.")
    return "\n\n".join(p.strip() for p in parts if p.strip())


def load_gepa(root: Path, shown: Path, script: Path, ov: Overrides) -> Problem:
    """The script's Problem: its evaluator's mean maximised on one split."""
    where = str(shown if shown.suffix == ".py" else shown / script.name)
    if ov.initial_program is not None:
        raise ProblemError("--initial-program: a GEPA script's seed is its seed_candidate")
    folder, root = root, package_root(script)
    rel = script.relative_to(root).as_posix()
    facts = facts_of(root, rel, where, ov.sandbox)
    entry, code, files = _program(facts, Path(where))
    iterations = None
    if facts.max_metric_calls is not None:
        iterations = max(1, facts.max_metric_calls // per_candidate(facts) - 1)
    notices = [f"evolve: GEPA script {where}: {facts.evaluator}"]
    notices += [f"{where}: ignored optimize_anything argument {k}=" for k in facts.ignored]
    notices += [f"{where}: ignored config {k}: {why(k)}" for k in facts.config]
    if facts.sizes.get("test_set"):
        notices.append(f"{where}: test_set is not scored (held-out scoring is not supported)")
    return Problem(
        name=folder.name if script.name == "main.py" else script.stem,
        description=f"GEPA optimize_anything script {script.name}",
        root=root,
        fmt="gepa",
        entry=entry,
        seed_code=code,
        metric="score",
        direction="maximize",
        domain_notes=notes(facts, script.name),  # the name the model knows it by
        timeout_s=EVAL_TIMEOUT_S,
        **ONE_SPLIT,
        iterations=iterations,
        seed_path=script,
        env={gepa_score.SCRIPT_ENV: rel},
        notices=tuple(notices),
        whole_file=True,  # GEPA rewrites the whole text, no EVOLVE-BLOCK markers
        files=files,
    )


def describe_lines(problem: Problem) -> list[str]:
    """`evolve check`'s lines: what is called and how the score is made."""
    script = problem.env.get(gepa_score.SCRIPT_ENV, "main.py")
    facts = facts_of(problem.root, script, str(problem.root / script), None)
    sizes = facts.sizes
    over = (
        f"the mean over its valset ({sizes['valset']} examples)"
        if sizes.get("valset")
        else f"the mean over its dataset ({sizes['dataset']} examples)"
        if sizes.get("dataset")
        else "one call (no dataset)"
    )
    budget = facts.max_metric_calls
    return [
        f"  evaluator: {script}'s {facts.evaluator}, called as GEPA v0.1.4 calls it; score: {over}",
        f"  seed: {script}'s seed_candidate ({'str' if isinstance(facts.seed, str) else 'dict'})",
        f"  budget: max_metric_calls {budget} = {problem.iterations} iterations"
        if budget
        else "  budget: none given (--iterations sets it)",
    ]
