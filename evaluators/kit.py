"""The problem kit: what every evaluator shares, written once.

An evaluator imports it as `from evaluators import kit` and keeps only its own
logic: how to run the candidate on a split (`kit.evaluate`) and how to judge
what it returned (`kit.score`). The kit loads the candidate, finds the split's
data files, turns a broken rule into an `invalid` result with a precise
message, and gives the evaluator its command line (`kit.main`).

Stdlib only: the harness loads this file inside both sandboxes (a bare
interpreter, a container), where nothing but the problem's own imports exist.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

INCLUDE_ENV = "EVOLVE_INCLUDE_DIR"  # set by a sandbox that carries includes to another path
DATA_ENV = "EVOLVE_DATA_DIR"  # set by the controller; overrides the problem's data/ folder

_ids = itertools.count()
_included: dict[str, ModuleType] = {}


class Invalid(ValueError):
    """The candidate, or what it returned, broke a rule of the problem.

    The message says what and where (workload, tick, index); `metrics` are
    numbers worth keeping even for an invalid candidate (say, deadline misses).
    """

    def __init__(self, message: str, **metrics: float) -> None:
        super().__init__(message)
        self.metrics = metrics


def invalid(error: str, **metrics: float) -> dict:
    """An evaluator result that rejects the candidate, saying why."""
    return {"valid": False, "metrics": dict(metrics), "artifacts": {"error": error}}


def _import_path(path: str, prefix: str) -> ModuleType:
    """Import a file by path under a fresh module name, so two loads never collide."""
    name = f"_{prefix}_{next(_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load(program_path: str, name: str) -> Callable:
    """Import the candidate program and return its function `name`."""
    fn = getattr(_import_path(program_path, "candidate"), name, None)
    if not callable(fn):
        raise Invalid(f"the program defines no callable {name}()")
    return fn


def problem_dir(evaluator_file: str) -> str:
    return os.path.dirname(os.path.abspath(evaluator_file))


def data_path(evaluator_file: str, *parts: str) -> str:
    """A data file of the problem: under $EVOLVE_DATA_DIR if set, else the problem's data/."""
    root = os.environ.get(DATA_ENV) or os.path.join(problem_dir(evaluator_file), "data")
    return os.path.join(root, *parts)


def read_json(path: str) -> Any:
    """A data file as JSON, with an error that names the file and how to get it."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: data file missing (`evolve data fetch PROBLEM` downloads the files "
            f"problem.toml lists; ${DATA_ENV} points elsewhere)"
        ) from None


def include(evaluator_file: str, relative: str) -> ModuleType:
    """A module shared with another problem, named in problem.toml's `include`.

    Resolved next to the evaluator (a checkout, the local sandbox), or in the
    folder a sandbox carried the includes to ($EVOLVE_INCLUDE_DIR). Loaded
    once per process.
    """
    carried = os.environ.get(INCLUDE_ENV)
    if carried:
        path = os.path.join(carried, os.path.basename(relative))
    else:
        path = os.path.normpath(os.path.join(problem_dir(evaluator_file), relative))
    if path not in _included:
        if not os.path.isfile(path):
            raise ImportError(
                f"{path}: included module missing; list {relative!r} in "
                "problem.toml's `include` so the sandbox carries it"
            )
        _included[path] = _import_path(path, "include")
    return _included[path]


def evaluate(
    program_path: str,
    split: str,
    function: str,
    run: Callable[[Callable, str], dict | tuple[dict, Mapping[str, object]]],
) -> dict:
    """Sandbox side: load the candidate's `function`, `run(fn, split)`, report its outputs.

    `run` returns the outputs (JSON-able) for the trusted `score()`, or
    (outputs, artifacts); it raises `Invalid` for a broken rule. Exceptions
    the candidate raises propagate: the harness reports them as runtime errors.
    """
    t0 = time.perf_counter()
    try:
        got = run(load(program_path, function), split)
    except Invalid as e:
        return invalid(str(e), **e.metrics)
    outputs, extra = got if isinstance(got, tuple) else (got, {})
    artifacts = {"split": split, **{k: str(v) for k, v in extra.items()}}
    artifacts["evaluate_s"] = f"{time.perf_counter() - t0:.3f}"
    return {"outputs": outputs, "artifacts": artifacts}


def score(outputs: object, split: str, judge: Callable[[object, str], dict]) -> dict:
    """Trusted side: `judge(outputs, split)` re-checks and scores; `Invalid` rejects."""
    try:
        return judge(outputs, split)
    except Invalid as e:
        return invalid(str(e), **e.metrics)


def evaluate_and_score(evaluator: ModuleType, program_path: str, split: str) -> dict:
    """Both halves in this process, as the sandbox runs them in two (for `main` and tests)."""
    result = evaluator.evaluate(program_path, split)
    if "outputs" not in result or not hasattr(evaluator, "score"):
        return result
    scored = evaluator.score(result["outputs"], split)
    scored["artifacts"] = {**result.get("artifacts", {}), **scored.get("artifacts", {})}
    return scored


def main(evaluator: ModuleType | str, splits: Iterable[str], argv: list[str] | None = None) -> int:
    """`python evaluator.py PROGRAM [SPLIT ...]`: evaluate and score, one JSON line per split.

    Runs the candidate in this process, without a sandbox: for trusted
    programs (baselines, your own drafts). `evolve eval` is the sandboxed way.
    """
    module = sys.modules[evaluator] if isinstance(evaluator, str) else evaluator
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(main.__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="evolve-kit-") as tmp:
        program = _whole_program(args[0], problem_dir(str(module.__file__)), tmp)
        for split in args[1:] or list(splits):
            _print_split(module, program, split)
    return 0


def _whole_program(path: str, root: str, tmp: str) -> str:
    """A baseline written as its EVOLVE-BLOCKs only, completed with the seed's fixed code
    (as `evolve eval` does); any other program file as it is."""
    from evolve.edits.blocks import complete_from_seed  # host side only: evolve is installed

    with open(os.path.join(root, "problem.toml"), "rb") as f:
        entry = tomllib.load(f)["problem"]["entry"]
    with open(os.path.join(root, entry), encoding="utf-8") as f:
        seed = f.read()
    with open(path, encoding="utf-8") as f:
        code = f.read()
    whole = complete_from_seed(code, seed)
    if whole == code:
        return path
    path = os.path.join(tmp, entry)
    with open(path, "w", encoding="utf-8") as f:
        f.write(whole)
    return path


def _print_split(module: ModuleType, program: str, split: str) -> None:
    t0 = time.perf_counter()
    result = evaluate_and_score(module, program, split)
    line = {
        "split": split,
        "score": result.get("score"),
        "valid": result.get("valid", True),
        "metrics": result.get("metrics", {}),
        "error": result.get("artifacts", {}).get("error"),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    print(json.dumps(line))
