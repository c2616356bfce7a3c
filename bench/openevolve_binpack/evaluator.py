"""OpenEvolve-format twin of problems/binpack, for bench/local_model.py.

initial_program.py is a copy of problems/binpack/seed.py (the benchmark
checks they are identical). evaluate() runs the native evaluator's evaluate()
and score() on the "train" split, so OpenEvolve optimises the same objective as
`evolve run problems/binpack`: combined_score = score = -(excess %).

A failed candidate gets combined_score = -100 (below any valid packing) with
error = 1, never 0.0: the native scores are negative, so OpenEvolve's usual 0.0
for a failure would rank failures above every valid program. When
EVOLVE_BENCH_EVAL_LOG names a file, each evaluation appends one JSON line
(score, valid, code hash) to it: that is how the benchmark counts valid
candidates on OpenEvolve's side.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import time
from pathlib import Path

NATIVE = Path(__file__).resolve().parents[2] / "problems" / "binpack" / "evaluator.py"
SPLIT = "train"
INVALID = -100.0
_native = None


def _load_native():
    global _native
    if _native is None:
        spec = importlib.util.spec_from_file_location("binpack_native_evaluator", NATIVE)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _native = module
    return _native


def _log(program_path: str, result: dict, error: str | None) -> None:
    path = os.environ.get("EVOLVE_BENCH_EVAL_LOG")
    if not path:
        return
    code = Path(program_path).read_bytes()
    line = json.dumps({"t": time.time(), "valid": error is None, "score": result["combined_score"],
                       "code_sha": hashlib.sha256(code).hexdigest(), "error": (error or "")[:300]})
    with open(path, "a") as f:
        f.write(line + "\n")


def evaluate(program_path: str) -> dict:
    ev = _load_native()
    error = None
    try:
        out = ev.evaluate(program_path, SPLIT)
        if out.get("valid") is False:
            error = out.get("artifacts", {}).get("error", "invalid")
        else:
            scored = ev.score(out["outputs"], SPLIT)
            if scored.get("valid") is False:
                error = scored.get("artifacts", {}).get("error", "invalid")
    except Exception as e:  # the candidate raised: a failure, scored below every valid program
        error = f"{type(e).__name__}: {e}"
    if error is None:
        result = {"combined_score": float(scored["score"]),
                  **{k: float(v) for k, v in scored["metrics"].items()}}
    else:
        result = {"combined_score": INVALID, "error": 1.0}
    _log(program_path, result, error)
    return result
