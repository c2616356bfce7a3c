"""Load a LEVI-format folder (problem.py with score_fn and SEED_PROGRAM, plus run.py).

LEVI 0.1.1 evolves one Python function: its seed is problem.py's SEED_PROGRAM (a string),
its score the "score" of what score_fn(fn) returns (higher is better; a result with "error"
fails the candidate). Both files are read with ast, never run, here
(evaluators/inside/levi_folder.py); candidates are scored in the sandbox by
evaluators/inside/levi_score.py, as LEVI scores them. run.py's evolve_code(...) settings are
each reported once as honoured or ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from evaluators.inside import levi_folder
from evaluators.inside.levi_folder import LeviFolder, LeviFolderError
from evolve.edits.blocks import find_blocks
from evolve.problem.model import ONE_SPLIT, Problem, ProblemError
from evolve.settings.overrides import Overrides

EVAL_TIMEOUT_S = 60.0  # LEVI 0.1.1's PipelineConfig.eval_timeout
ENTRY = "program.py"  # the candidate's file name in the sandbox (LEVI exec's its text)
SeedReader = Callable[[Overrides, Path, str, str, Path], tuple[Path, str]]

HONOURED = {
    "pipeline.eval_timeout": "the evaluation's time limit (--timeout overrides)",
    "pipeline.n_eval_processes": "evaluations in flight (--parallel overrides)",
    "budget_evals": "iterations (--iterations overrides)",
}
WHY = {
    "model": "models come from --model / --api-base (any OpenAI-compatible endpoint)",
    "paradigm_model": "models come from --model / --api-base",
    "mutation_model": "models come from --model / --api-base",
    "budget_dollars": "use --budget-usd",
    "budget_seconds": "use --time-limit",
    "output_dir": "runs live in the archive under --runs-dir",
}
OTHER = "a LEVI setting with no evolve counterpart"


def is_levi(root: Path) -> bool:
    """A LEVI folder: problem.py (and no evaluator of another format)."""
    return levi_folder.is_levi(str(root))


def settings_report(folder: LeviFolder) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """run.py's constant evolve_code keywords, as (key, how honoured) and (key, why not)."""
    honoured: list[tuple[str, str]] = []
    ignored: list[tuple[str, str]] = []
    for key, value in folder.settings.items():
        items = value.items() if key == "pipeline" and isinstance(value, dict) else [(None, value)]
        for sub, _ in items:
            dotted = f"{key}.{sub}" if sub else key
            if dotted in HONOURED:
                honoured.append((dotted, HONOURED[dotted]))
            else:
                ignored.append((dotted, WHY.get(key, OTHER)))
    for key, _line in folder.computed:  # a model object, a config: ignored whatever it is
        if key != "**" and key != "pipeline" and key not in HONOURED:
            ignored.append((key, WHY.get(key, OTHER)))
    return honoured, ignored


def _typed(folder: LeviFolder, shown: Path, key: str, kind: type) -> Any:
    section, _, sub = key.partition(".")
    value: Any = folder.settings.get(section)
    if sub:
        value = value.get(sub) if isinstance(value, dict) else None
    if value is None:
        return None
    wrong = not isinstance(value, int if kind is int else int | float)
    if wrong or isinstance(value, bool) or float(value) <= 0:
        raise ProblemError(
            f"{shown / levi_folder.RUNNER}: {key}: expected a positive {kind.__name__}, "
            f"got {value!r:.80}"
        )
    return kind(value)


def load_levi(root: Path, shown: Path, ov: Overrides, read_seed: SeedReader) -> Problem:
    """The folder's Problem: LEVI's score maximised on one split, its eval_timeout (60 s
    by default), 4096 MB of memory (LEVI sets none)."""
    try:
        folder = levi_folder.read(str(root), str(shown))
    except LeviFolderError as e:
        raise ProblemError(str(e)) from None
    problem_py = shown / levi_folder.PROBLEM
    if ov.initial_program is not None:
        seed_path, seed_code = read_seed(ov, root, ENTRY, str(problem_py), shown)
        entry = seed_path.name
    elif folder.seed is None:
        raise ProblemError(
            f"{problem_py}: no SEED_PROGRAM string (nor run.py's seed_program=); name the "
            "seed program with --initial-program PATH"
        )
    else:
        seed_path, seed_code, entry = root / levi_folder.PROBLEM, folder.seed, ENTRY
    if folder.signature is None:
        raise ProblemError(
            f"{problem_py}: no FUNCTION_SIGNATURE string (nor run.py's function_signature=): "
            "it names the function score_fn is given"
        )
    honoured, ignored = settings_report(folder)
    timeout = _typed(folder, shown, "pipeline.eval_timeout", float)
    runner = shown / levi_folder.RUNNER
    notices = [f"evolve: LEVI settings: {runner if folder.has_runner else 'none (LEVI defaults)'}"]
    notices += [f"run.py: ignored {k}: {why}" for k, why in ignored]
    notices += [
        f"run.py: not read (computed): {'**kwargs' if k == '**' else k + '=...'} at line {n}"
        for k, n in folder.computed
        if k == "**" or k == "pipeline" or k in HONOURED
    ]
    notes = folder.description
    notes += f"\n\nThe program must define this function:\n```python\n{folder.signature}\n```"
    return Problem(
        name=root.name,
        description=f"LEVI-format problem {root.name}",
        root=root,
        fmt="levi",
        entry=entry,
        seed_code=seed_code,
        metric="score",
        direction="maximize",
        domain_notes=notes.strip(),
        timeout_s=timeout or EVAL_TIMEOUT_S,
        **ONE_SPLIT,
        iterations=_typed(folder, shown, "budget_evals", int),
        parallel=_typed(folder, shown, "pipeline.n_eval_processes", int),
        seed_path=seed_path,
        config_file=root / levi_folder.RUNNER if folder.has_runner else None,
        notices=tuple(notices),
        whole_file=not find_blocks(seed_code),  # LEVI rewrites the whole program
    )


def describe_lines(problem: Problem) -> list[str]:
    """`evolve check`'s lines: how candidates are scored and the run settings honoured."""
    folder = levi_folder.read(str(problem.root))
    inputs = f", {folder.inputs}" if folder.inputs else ""
    lines = [
        f"  evaluator: problem.py's {folder.score_fn}({folder.fn_name}{inputs}) on the "
        "candidate's function, as LEVI 0.1.1 calls it; score: its 'score'"
    ]
    if problem.seed_path and problem.seed_path.name == levi_folder.PROBLEM:
        lines.append("  seed: problem.py's SEED_PROGRAM")
    honoured, _ = settings_report(folder)
    lines += [f"  run.py: {k}: {how}" for k, how in honoured]
    return lines
