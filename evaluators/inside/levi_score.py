"""How a LEVI folder's candidate is scored inside the sandbox, as LEVI 0.1.1 scores it.

LEVI's worker imports problem.py (run.py's `from problem import score_fn`), exec's the
candidate's code in a fresh namespace with `__source_code__` set, takes the function the
signature names and calls `score_fn(fn)`, or `score_fn(fn, inputs)` when run.py passes
inputs and score_fn takes two arguments (levi/utils/evaluation.py). A result with "error"
is a failed candidate; otherwise its "score" (0.0 when absent) must be a finite number.

Run as `python levi_score.py --program_path P --results_dir D` in a private copy of the
folder (shinka_run.evaluate starts it, as it starts a ShinkaEvolve evaluate.py), it writes
correct.json ({"correct", "error"}) and metrics.json (LEVI's result dict); `to_result`
turns those into the harness's result. Stdlib only.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import json
import math
import os
import sys
import types
from typing import Any

SCRIPT = os.path.abspath(__file__)
PRIVATE = "private."


def _accepts(fn: Any, n: int) -> bool | None:
    """Whether `fn` takes `n` positional arguments (None: cannot tell), as LEVI checks."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    positional = [p for p in params if p.kind in kinds]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    varargs = any(p.kind == inspect.Parameter.VAR_POSITIONAL for p in params)
    return len(required) <= n <= (math.inf if varargs else len(positional))


def call_score_fn(score_fn: Any, fn: Any, inputs: list | None) -> Any:
    """score_fn(fn) or score_fn(fn, inputs), by what score_fn accepts (LEVI's rule: with
    no inputs a two-argument score_fn gets []; unknown arity tries the natural call)."""
    one, two = _accepts(score_fn, 1), _accepts(score_fn, 2)
    if inputs is None:
        return score_fn(fn) if one is True or two is not True else score_fn(fn, [])
    return score_fn(fn) if two is not True and one is True else score_fn(fn, inputs)


def evaluate_code(code: str, score_fn: Any, inputs: list | None, fn_name: str) -> dict:
    """LEVI's evaluation of one candidate's code: its result dict, or {"error": ...}."""
    namespace: dict[str, Any] = {}
    try:
        exec(code, namespace)
    except SyntaxError as e:
        return {"error": f"Syntax error: {e}"}
    except MemoryError:
        return {"error": "MemoryError during code execution"}
    namespace["__source_code__"] = code
    fn = namespace.get(fn_name)
    if not isinstance(fn, types.FunctionType):
        return {"error": f"Function '{fn_name}' not found (got {type(fn).__name__})"}
    try:
        result = call_score_fn(score_fn, fn, inputs)
    except MemoryError:
        return {"error": "MemoryError during scoring"}
    except Exception as e:
        return {"error": f"Scoring error: {e}"}
    if not isinstance(result, dict):  # LEVI's result.get fails on it: its evaluation errs
        return {"error": f"score_fn returned {type(result).__name__}, expected a dict"}
    return result


def verdict(result: dict) -> tuple[float | None, str | None]:
    """(score, None), or (None, why) for a failed candidate: LEVI's coerce_score."""
    if "error" in result:
        return None, str(result["error"])
    try:
        score = float(result.get("score", 0.0))
    except (TypeError, ValueError):
        return None, f"Invalid score value: {result.get('score')!r}"
    if not math.isfinite(score):
        return None, f"Non-finite score value: {result.get('score')!r}"
    return score, None


def _load_problem(workdir: str) -> types.ModuleType:
    """problem.py imported as `problem`, as run.py's `from problem import ...` does."""
    sys.path.insert(0, workdir)
    spec = importlib.util.spec_from_file_location("problem", os.path.join(workdir, "problem.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["problem"] = module
    spec.loader.exec_module(module)
    return module


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--program_path", required=True)
    p.add_argument("--results_dir", required=True)
    a = p.parse_args(argv)
    sys.path.insert(0, os.path.dirname(SCRIPT))
    from levi_folder import read  # beside this file, wherever the sandbox put it

    workdir = os.getcwd()
    folder = read(workdir)
    problem = _load_problem(workdir)
    inputs = None
    if folder.inputs is not None:
        inputs = getattr(problem, folder.inputs.removesuffix("()"))
        if folder.inputs.endswith("()"):
            inputs = inputs()
    with open(a.program_path, encoding="utf-8") as f:
        code = f.read()
    result = evaluate_code(code, getattr(problem, folder.score_fn), inputs, folder.fn_name)
    score, error = verdict(result)
    os.makedirs(a.results_dir, exist_ok=True)
    with open(os.path.join(a.results_dir, "correct.json"), "w", encoding="utf-8") as f:
        json.dump({"correct": error is None, "error": error}, f)
    kept = {k: v for k, v in result.items() if k != "error"}
    with open(os.path.join(a.results_dir, "metrics.json"), "w", encoding="utf-8") as f:
        json.dump({**kept, "score": score}, f, default=repr)
    return 0


def to_result(out: Any, ok: str, invalid: str, runtime_error: str) -> dict:
    """The harness's result from what this script left (a shinka_run.Outcome)."""
    artifacts: dict[str, str] = {}
    for name in ("stderr", "stdout"):
        if getattr(out, name):
            artifacts[PRIVATE + name] = getattr(out, name)
    raw = out.metrics if isinstance(out.metrics, dict) else {}
    correct = out.correct if isinstance(out.correct, dict) else {}
    metrics: dict[str, float] = {}
    for key, value in raw.items():
        if key == "score":
            continue
        if isinstance(value, bool | int | float):
            metrics[key] = float(value)
        elif value is not None:
            artifacts[key] = value if isinstance(value, str) else json.dumps(value, default=repr)
    result: dict[str, Any] = {"status": ok, "score": None, "metrics": metrics}
    if out.returncode != 0 or out.problems:
        result["status"] = runtime_error
        why = "; ".join(out.problems) or f"exited with code {out.returncode}"
        artifacts["error"] = f"problem.py's score_fn could not run: {why}"
        if out.stderr:
            artifacts["traceback"] = out.stderr[-2000:]
    elif correct.get("correct") is not True:
        result["status"] = invalid
        artifacts["error"] = str(correct.get("error") or "failed")
    else:
        result["score"] = float(raw["score"])
    result["artifacts"] = artifacts
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
