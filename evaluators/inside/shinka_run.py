"""How a ShinkaEvolve-format evaluator runs inside the sandbox, as ShinkaEvolve 0.0.7 runs it.

ShinkaEvolve starts `python evaluate.py --program_path P --results_dir D` from the problem's
folder (its LocalJobConfig) and reads back two files: `correct.json` ({"correct", "error"})
decides validity, and `metrics.json` holds `combined_score` (the score), `public` metrics
(shown to the model), `private` ones (stored, never shown) and `text_feedback`. So the
evaluator gets a private, writable copy of its folder as working directory (as OpenEvolve
folders do, openevolve_run.private_copy), a stand-in `shinka` package at the end of its
PYTHONPATH when ShinkaEvolve is not installed, and its own process, started after this one
Landlocked itself. Its output goes to files (job_log.out/err, as ShinkaEvolve's) and is
stored as private artifacts, never shown to the model (nor is it in ShinkaEvolve), but for
a crash's traceback.

Stdlib only: this runs where only the harness's folder is importable.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

EVALUATE = "evaluate.py"
STAND_IN = "shinka_compat"  # the stand-in `shinka` package, beside this file
PRIVATE = "private."  # evaluators/sandbox.py PRIVATE_PREFIX: never shown in a prompt
LOG_TAIL = 4000  # characters of the evaluator's stderr/stdout kept as artifacts
CRASH_TAIL = 2000  # characters of a crashed evaluate.py's stderr shown to the model


class EvaluatorTimeout(Exception):
    """evaluate.py ran past the time limit (its whole process group was killed)."""


@dataclass
class Outcome:
    """What evaluate.py left: its exit code, the two files (None: absent or unreadable, with
    why), and the tails of its output."""

    returncode: int
    correct: object
    metrics: object
    problems: list[str]
    stdout: str
    stderr: str


def stand_in_path() -> str | None:
    """The stand-in's folder, unless ShinkaEvolve itself is importable (it then wins)."""
    import importlib.util

    if importlib.util.find_spec("shinka") is not None:
        return None
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), STAND_IN)


def evaluate(
    workdir: str, program: str, timeout_s: float, root: str | None = None, script: str = EVALUATE
) -> Outcome:
    """Run `python evaluate.py --program_path PROGRAM --results_dir RESULTS` in `workdir`;
    `root`: a program of several files' tree root (on the path; the results go there);
    `script`: another script of that interface (a LEVI folder's: levi_score.py)."""
    results = os.path.join(root or os.path.dirname(program), "shinka_results")
    os.makedirs(results, exist_ok=True)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (workdir, stand_in_path(), root) if p)
    out_path, err_path = (os.path.join(results, n) for n in ("job_log.out", "job_log.err"))
    cmd = [sys.executable, script, "--program_path", program, "--results_dir", results]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            name = os.path.basename(script)
            raise EvaluatorTimeout(f"{name} ran past its timeout of {timeout_s:g} s") from None
    _kill_group(proc)  # what it left running (a ProcessPoolExecutor's workers)
    problems: list[str] = []
    correct = _read_json(os.path.join(results, "correct.json"), problems)
    metrics = _read_json(os.path.join(results, "metrics.json"), problems)
    return Outcome(code, correct, metrics, problems, _tail(out_path), _tail(err_path))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _read_json(path: str, problems: list[str]) -> object:
    name = os.path.basename(path)
    if not os.path.isfile(path):
        problems.append(f"evaluate.py wrote no {name} in --results_dir")
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        problems.append(f"{name} is not valid JSON: {e}"[:500])
        return None


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - LOG_TAIL))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def to_result(out: Outcome, ok: str, invalid: str, runtime_error: str) -> dict:
    """The harness's result dict (status names passed in: they live in harness.py)."""
    # What evaluate.py printed is kept but not shown to the model (ShinkaEvolve keeps it as
    # job logs, out of its prompts): evaluators print their metrics, private ones included.
    artifacts: dict[str, str] = {}
    if out.stderr:
        artifacts[PRIVATE + "stderr"] = out.stderr
    if out.stdout:
        artifacts[PRIVATE + "stdout"] = out.stdout
    metrics: dict[str, float] = {}
    raw = out.metrics if isinstance(out.metrics, dict) else {}
    _flatten(raw.get("public"), "", metrics, artifacts)
    _flatten(raw.get("private"), PRIVATE, metrics, artifacts)
    feedback = raw.get("text_feedback")
    if feedback:
        artifacts["text_feedback"] = feedback if isinstance(feedback, str) else _text(feedback)
    for key, value in raw.items():  # the other top-level numbers: execution_time_mean, ...
        if key not in ("combined_score", "public", "private", "text_feedback"):
            _flatten({key: value}, "", metrics, artifacts)
    correct = out.correct.get("correct") if isinstance(out.correct, dict) else None
    error = out.correct.get("error") if isinstance(out.correct, dict) else None
    result: dict[str, object] = {"status": ok, "score": None, "metrics": metrics}
    if correct is False:  # ShinkaEvolve's incorrect program: stored, never a parent's score
        result["status"] = invalid
        artifacts["error"] = _text(error) if error else "correct.json: correct is false"
    elif out.problems or correct is not True:
        result["status"] = runtime_error
        why = out.problems or [
            f"correct.json: 'correct' is {_text(correct)}, expected true or false"
        ]
        code = f" (exit code {out.returncode})" if out.returncode else ""
        artifacts["error"] = "; ".join(why) + code
    elif out.returncode != 0:
        result["status"] = runtime_error
        artifacts["error"] = f"evaluate.py exited with code {out.returncode}"
    if out.returncode != 0 and out.stderr:  # a crash: its traceback is for the model
        artifacts["traceback"] = out.stderr[-CRASH_TAIL:]
    else:
        score = raw.get("combined_score")
        if not _number(score):
            result["status"] = runtime_error
            artifacts["error"] = (
                "metrics.json has no combined_score"
                if score is None
                else f"metrics.json: combined_score is {_text(score)[:200]!r}, expected a number"
            )
        else:
            result["score"] = float(score)  # type: ignore[arg-type]
    result["artifacts"] = artifacts
    return result


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v: object) -> str:
    return v if isinstance(v, str) else json.dumps(v, default=str)


def _flatten(raw: object, prefix: str, metrics: dict, artifacts: dict) -> None:
    """Numbers become metrics, anything else an artifact, each under prefix + key."""
    if not isinstance(raw, dict):
        return
    for key, value in raw.items():
        name = prefix + str(key)
        if _number(value):
            metrics[name] = float(value)
        elif isinstance(value, bool):
            metrics[name] = 1.0 if value else 0.0
        elif value is not None:
            artifacts[name] = _text(value)
