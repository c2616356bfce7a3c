"""How a SkyDiscover containerized evaluator runs inside the sandbox.

SkyDiscover (since March 2026) builds `evaluator/Dockerfile` and, per candidate, runs
`/benchmark/evaluate.sh PROGRAM MODE` (MODE "train" in the loop, "test" for the final
scoring) and reads one JSON object from its stdout: `status`, `combined_score`, `metrics`
(numbers) and `artifacts` (text). Here the sandbox shows the folder's `evaluator/`
read-only at /benchmark (bubblewrap's bind, Docker's mount); the script runs with
/benchmark as its working directory, after this process Landlocked itself, with `python`
on PATH meaning this interpreter (the one the folder's requirements are installed for).

Our rule for the outcome (SkyDiscover stores every outcome with its combined_score,
0.0 for a failure): a non-zero exit, or stdout that is not one JSON object, fails the
candidate (runtime_error); a `status` other than "success" fails it too ("timeout":
timeout), its metrics and artifacts kept, so a failed program never competes on a score
the script may have set.

Stdlib only: this runs where only the harness's folder is importable.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
from dataclasses import dataclass

BENCHMARK = "/benchmark"  # where every shipped evaluate.sh expects its folder
SCRIPT = "evaluate.sh"
PRIVATE = "private."  # evaluators/sandbox.py PRIVATE_PREFIX: never shown in a prompt
STDOUT_MAX = 4 * 2**20  # bytes of stdout read for the JSON object
LOG_TAIL = 4000  # characters of stderr kept as an artifact
CRASH_TAIL = 2000  # characters of a failed script's stderr shown to the model


class ScriptTimeout(Exception):
    """evaluate.sh ran past the time limit (its whole process group was killed)."""


@dataclass
class Outcome:
    """What evaluate.sh left: its exit code and its output."""

    returncode: int
    stdout: str
    stderr: str


def python_path_dir(scratch: str) -> str:
    """A folder whose `python` (and `python3`) is this interpreter: its own folder when it
    has both (a virtualenv's bin), else links made in the scratch folder."""
    here = os.path.dirname(sys.executable)
    if all(os.access(os.path.join(here, n), os.X_OK) for n in ("python", "python3")):
        return here
    links = os.path.join(scratch, ".skydiscover-bin")
    os.makedirs(links, exist_ok=True)
    for name in ("python", "python3"):
        path = os.path.join(links, name)
        if not os.path.lexists(path):
            os.symlink(sys.executable, path)
    return links


def evaluate(program: str, mode: str, timeout_s: float, scratch: str) -> Outcome:
    """Run `bash /benchmark/evaluate.sh PROGRAM MODE` in /benchmark, its output to files."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([python_path_dir(scratch), env.get("PATH", "/usr/bin:/bin")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (BENCHMARK, env.get("PYTHONPATH")) if p)
    out_path, err_path = (os.path.join(scratch, f"evaluate.{n}") for n in ("out", "err"))
    cmd = ["bash", os.path.join(BENCHMARK, SCRIPT), program, mode]
    with open(out_path, "wb") as out, open(err_path, "wb") as err:
        proc = subprocess.Popen(
            cmd, cwd=BENCHMARK, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
            start_new_session=True,
        )  # fmt: skip
        try:
            code = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            raise ScriptTimeout(f"evaluate.sh ran past its timeout of {timeout_s:g} s") from None
    _kill_group(proc)  # what it left running
    with open(out_path, "rb") as f:
        stdout = f.read(STDOUT_MAX).decode("utf-8", "replace")
    return Outcome(code, stdout, _tail(err_path))


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


def _tail(path: str) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - LOG_TAIL))
            return f.read().decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def to_result(out: Outcome, ok: str, runtime_error: str, timeout: str) -> dict:
    """The harness's result dict (status names passed in: they live in harness.py)."""
    artifacts: dict[str, str] = {}
    if out.stderr:
        artifacts[PRIVATE + "stderr"] = out.stderr
    result: dict[str, object] = {"status": runtime_error, "score": None, "metrics": {}}
    result["artifacts"] = artifacts
    if out.returncode != 0:
        last = [ln.strip() for ln in out.stderr.splitlines() if ln.strip()][-1:]
        artifacts["error"] = f"evaluate.sh exited with code {out.returncode}" + "".join(
            f": {ln[:300]}" for ln in last
        )  # its last stderr line names why (ModuleNotFoundError: No module named 'scipy')
        if out.stderr:
            artifacts["traceback"] = out.stderr[-CRASH_TAIL:]
        return result
    try:
        data = json.loads(out.stdout.strip())
    except ValueError:
        data = None
    if not isinstance(data, dict):
        shown = out.stdout.strip()[-300:]
        artifacts["error"] = f"evaluate.sh printed no JSON object on stdout (got {shown!r})"
        return result
    metrics = {
        str(k): float(v) for k, v in (data.get("metrics") or {}).items() if _number(v)
    } if isinstance(data.get("metrics"), dict) else {}  # fmt: skip
    raw = data.get("artifacts")
    for k, v in raw.items() if isinstance(raw, dict) else ():
        artifacts[str(k)] = v if isinstance(v, str) else json.dumps(v, default=str)
    result["metrics"] = metrics
    status = data.get("status", "error")
    score = metrics.get("combined_score", data.get("combined_score"))
    if status != "success":
        result["status"] = timeout if status == "timeout" else runtime_error
        why = artifacts.get("error") or ""
        artifacts["error"] = f"evaluate.sh reported status {str(status)[:80]!r}" + (
            f": {why}" if why else ""
        )
    elif not _number(score):
        artifacts["error"] = (
            "evaluate.sh's JSON has no combined_score"
            if score is None
            else f"evaluate.sh's combined_score is {str(score)[:80]!r}, expected a number"
        )
    else:
        result["status"] = ok
        result["score"] = float(score)  # type: ignore[arg-type]
        metrics.setdefault("combined_score", float(score))  # type: ignore[arg-type]
    return result
