"""Score one candidate for a peer framework with evolve's own sandboxed evaluator.

Standard library only (levi_evaluate_code imports LEVI, and only LEVI's driver uses it): it is
imported by the evaluators generated for OpenEvolve, ShinkaEvolve and LEVI, inside their own
venvs and worker processes. Every framework's candidate is scored by
the same command, `evolve eval PROBLEM_DIR CANDIDATE --json` (the train split, the whole
cascade, as `evolve run` scores it), so no peer sees a different objective or a softer sandbox.

The race sets these variables before it starts a peer (its worker processes inherit them):

  RACE_EVOLVE_PYTHON  the python of evolve's venv (runs `-m evolve.cli eval`)
  RACE_PROBLEM_DIR    the native problem folder
  RACE_SANDBOX        evolve's --sandbox for the evaluation (the same for every framework)
  RACE_EVAL_LOG       a JSONL file: one line per evaluation, in the order they finish
  RACE_EVAL_TIMEOUT   seconds one `evolve eval` may take

Each log line: t (finish time), code, valid, score (None when invalid), error, eval_s,
markers_dropped.
"""

from __future__ import annotations

import fcntl
import json
import math
import os
import subprocess
import tempfile
import time
from pathlib import Path

# A failed candidate's fitness where a peer needs a number: below any real score of these
# problems (scores are -excess %, -makespan, fractions, ...), so a failure never outranks a
# valid program (OpenEvolve 0.4 averages a failure's metrics to 0.0 otherwise).
INVALID_SCORE = -1e9
ERROR_CHARS = 2000


def evaluate_file(program_path: str) -> dict:
    """{"valid", "score", "metrics", "error"} of one candidate file; logged to RACE_EVAL_LOG."""
    return evaluate_code(Path(program_path).read_text(errors="replace"))


def evaluate_code(code: str) -> dict:
    """evaluate_file() for a candidate held as text (LEVI hands over code, not a file).

    `evolve eval` refuses a file whose EVOLVE-BLOCK markers do not pair up (a START never
    closed). evolve's own candidates never have that (it edits inside the blocks), a peer's
    full rewrite may; the marker lines are comments, so such a candidate is scored with its
    marker lines removed rather than failed for them."""
    lenient = not markers_pair(code)
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="race-cand-") as d:
        path = Path(d) / "candidate.py"
        path.write_text(without_markers(code) if lenient else code)
        result = _run_evolve_eval(str(path))
    result["eval_s"] = time.monotonic() - t0
    result["markers_dropped"] = lenient
    _log(code, result)
    return result


def markers_pair(code: str) -> bool:
    """Every EVOLVE-BLOCK-START is closed by an EVOLVE-BLOCK-END before the next one."""
    open_block = False
    for kind in _markers(code):
        if kind == open_block:  # START inside a block, or END outside one
            return False
        open_block = kind
    return not open_block


def without_markers(code: str) -> str:
    return "\n".join(ln for ln in code.split("\n") if _marker(ln) is None)


def _markers(code: str) -> list[bool]:
    """True for each START line, False for each END line, in order."""
    return [m for m in (_marker(ln) for ln in code.split("\n")) if m is not None]


def _marker(line: str) -> bool | None:
    text = line.strip()
    if not text.startswith("#"):
        return None
    if "EVOLVE-BLOCK-START" in text:
        return True
    if "EVOLVE-BLOCK-END" in text:
        return False
    return None


def _run_evolve_eval(program_path: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "RACE_"))}
    cmd = [os.environ["RACE_EVOLVE_PYTHON"], "-m", "evolve.cli", "eval",
           os.environ["RACE_PROBLEM_DIR"], program_path, "--json",
           "--sandbox", os.environ.get("RACE_SANDBOX", "local")]
    if os.environ.get("RACE_DATA_SEED"):  # the workloads every framework of the race scores on
        cmd += ["--data-seed", os.environ["RACE_DATA_SEED"]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env,
                              timeout=float(os.environ.get("RACE_EVAL_TIMEOUT", "900")))
    except subprocess.TimeoutExpired:
        return _failure("evolve eval did not finish in time")
    try:
        out = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        stderr = "\n".join(ln for ln in proc.stderr.splitlines() if not ln.startswith("sandbox: "))
        return _failure(f"evolve eval exited {proc.returncode}: {stderr.strip()[-ERROR_CHARS:]}")
    score = out.get("score")
    if out.get("status") == "ok" and isinstance(score, int | float) and math.isfinite(score):
        metrics = {k: v for k, v in (out.get("metrics") or {}).items() if isinstance(v, int | float)}
        return {"valid": True, "score": float(score), "metrics": metrics, "error": ""}
    return _failure(_error_text(out))


def _error_text(out: dict) -> str:
    """The status and what the evaluator said (the error, a cascade's verdict, its hint),
    then the ends of the traceback and stderr."""
    arts = {k: str(v).strip() for k, v in (out.get("artifacts") or {}).items() if v}
    parts = [f"status: {out.get('status')}"]
    parts += [f"{k}: {v[:500]}" for k, v in arts.items() if k not in ("traceback", "stderr")]
    parts += [f"{k} (end): {arts[k][-keep:]}" for k, keep in (("traceback", 900), ("stderr", 500)) if k in arts]
    return "\n".join(parts)


def _failure(error: str) -> dict:
    return {"valid": False, "score": None, "metrics": {}, "error": error[-ERROR_CHARS:]}


_logged = 0  # lines this process wrote to the log


def _log(code: str, result: dict) -> None:
    global _logged
    _logged += 1
    path = os.environ.get("RACE_EVAL_LOG")
    if not path:
        return
    line = json.dumps({"t": time.time(), "code": code, "valid": result["valid"],
                       "score": result["score"], "error": result["error"][:300],
                       "eval_s": result["eval_s"], "markers_dropped": result["markers_dropped"]})
    with open(path, "a") as f:  # several worker processes append: one locked write per line
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(line + "\n")
        f.flush()
        fcntl.flock(f, fcntl.LOCK_UN)


def levi_evaluate_code(code: str, score_fn, inputs, fn_name: str) -> dict:
    """LEVI's own evaluate_code (exec the candidate, find `fn_name`, call score_fn), with the
    candidates it fails before score_fn runs (a syntax error, a missing function, an error
    at import) written to the log too, so that LEVI's log holds every candidate it evaluated,
    as the other peers' logs do. It changes nothing LEVI sees."""
    from levi.utils.evaluation import evaluate_code as levi_evaluate

    before = _logged
    try:
        result = levi_evaluate(code, score_fn, inputs, fn_name)
    except Exception as e:
        _log_unscored(code, before, f"{type(e).__name__}: {e}")
        raise
    if "error" in result:
        _log_unscored(code, before, str(result["error"]))
    return result


def _log_unscored(code: str, before: int, error: str) -> None:
    if _logged == before:  # score_fn never ran: nothing of this candidate is in the log yet
        _log(code, {"valid": False, "score": None, "error": f"status: failed in LEVI: {error}",
                    "eval_s": 0.0, "markers_dropped": False})


def levi_score(fn) -> dict:
    """LEVI's score_fn(fn): LEVI has exec'd the candidate and hands over its function; the
    module's text is in the function's globals (`__source_code__`), and that text is scored."""
    code = fn.__globals__.get("__source_code__", "")
    result = evaluate_code(code)
    if not result["valid"]:
        return {"error": result["error"] or "invalid"}
    return {**result["metrics"], "score": result["score"]}
