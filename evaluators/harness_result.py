"""Turn what a harness process left behind into an EvalResult: the step every backend that
runs the harness (local, docker) shares.

Kept apart from the process plumbing because this is the trust boundary: the
result file may have been written (or rewritten) by the candidate, so every
field is re-checked here and stdout is never parsed for a score. Nothing in it can make
reading it fail (a 10**400 metric, a list for a status): what cannot be read is the
candidate's failure, never a sandbox error. Only a bounded part is kept (bounds.py).
"""

from __future__ import annotations

import ast
import json
import math
import os
import signal
import stat
import threading
from dataclasses import dataclass
from typing import Any, BinaryIO

from evaluators.bounds import DROPPED, MAX_ARTIFACTS, MAX_METRICS, dropped_note, keep_first
from evaluators.sandbox import EvalResult, Limits, Status

ARTIFACT_CHARS = 65536  # per artifact value; tracebacks and output keep their tail
RESULT_MAX_BYTES = 16 * 2**20  # a result file is parsed only below this size
PREAMBLE_MAX_BYTES = 64 * 1024
# What a harness may report; its result file carries the strings, read back as members.
_HARNESS_STATUSES = {
    Status.OK,
    Status.INVALID,
    Status.SYNTAX_ERROR,
    Status.RUNTIME_ERROR,
    Status.SANDBOX_ERROR,
    Status.TIMEOUT,
}
MISSING = object()  # "evaluate() returned no outputs", distinct from outputs=None
# The local sandbox's RLIMIT_CPU (local/exec_chain.py), named here to explain a SIGXCPU. A
# backstop behind the wall-clock deadline, never a race with it: CPU time counts from the
# interpreter's start, the deadline from when the sandbox saw the harness start, which on a
# loaded machine can be seconds later.
CPU_SLACK_S = 10


def cpu_limit_s(limits: Limits) -> int:
    """The soft RLIMIT_CPU (SIGXCPU); the hard one is a second later (SIGKILL)."""
    return math.ceil(limits.timeout_s) + CPU_SLACK_S


@dataclass
class ProcRun:
    """One finished harness process, already killed and cleaned up."""

    data: dict | None  # parsed RESULT.json, None if absent or unusable
    returncode: int
    timed_out: bool
    stdout: str
    stderr: str
    strays: int  # processes still running after it exited, killed by us
    note: str | None = None  # why the result file was unusable
    # run mode: the harness's report sent before the candidate ran ({"loaded": true} or
    # a sandbox_error result); None where it sent none (it failed before, or score mode)
    preamble: dict | None = None
    out_of_memory: bool = False  # the kernel's OOM killer ran in its memory cgroup


def read_result(path: str, max_bytes: int = RESULT_MAX_BYTES) -> tuple[dict | None, str | None]:
    """Read RESULT.json without following links or blocking on a FIFO the candidate planted."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"unreadable result file: {e.strerror}"
    with os.fdopen(fd, "rb") as f:
        return read_result_file(f, max_bytes)


def read_result_file(
    f: BinaryIO, max_bytes: int = RESULT_MAX_BYTES
) -> tuple[dict | None, str | None]:
    """Parse an open result file from its start: size-capped before a byte is parsed."""
    st = os.fstat(f.fileno())
    if not stat.S_ISREG(st.st_mode):
        return None, "the result file is not a regular file"
    if st.st_size == 0:
        return None, None
    if st.st_size > max_bytes:
        return None, f"the result file is too large ({st.st_size} bytes; at most {max_bytes})"
    f.seek(0)
    raw = f.read(max_bytes + 1)
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as e:
        return None, f"malformed result file: {type(e).__name__}"
    return (data, None) if isinstance(data, dict) else (None, "malformed result file")


def read_preamble(raw: bytes) -> dict | None:
    """The harness's one line sent before the candidate ran; None if absent or unusable."""
    try:
        data = json.loads(raw[:PREAMBLE_MAX_BYTES])
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None


def tail(f: BinaryIO, max_kb: int) -> str:
    """The last max_kb KiB of a captured stream, marked when cut."""
    n = max_kb * 1024
    try:
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - n))
        data = f.read(n)
    except OSError:
        return ""
    text = data.decode("utf-8", "replace")
    return f"[... {size - n} bytes cut ...]\n{text}" if size > n else text


def _clip(key: str, value: object) -> str:
    text = value if isinstance(value, str) else _str(value)
    if len(text) <= ARTIFACT_CHARS:
        return text
    cut = f"[... {len(text) - ARTIFACT_CHARS} chars cut ...]"
    if key.endswith(("traceback", "stdout", "stderr")):
        return cut + "\n" + text[-ARTIFACT_CHARS:]
    return text[:ARTIFACT_CHARS] + cut


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _str(v: object) -> str:
    """Text of a parsed JSON value; one str() refuses (too deep) is described instead."""
    try:
        return str(v)
    except (ValueError, RecursionError, MemoryError):
        return f"<a {type(v).__name__} too large or too deep to show>"


def _float(v: object) -> float | None:
    """A number as a float (NaN and infinities kept); None for anything else, an int
    past float's range (10**400) included: never an exception."""
    if not _is_number(v):
        return None
    try:
        return float(v)  # type: ignore[arg-type]
    except OverflowError:
        return None


def _numbers(raw: dict, finite: bool) -> tuple[dict[str, float], dict[str, str]]:
    """(numbers, the rest as text): what a harness does with an evaluator's metrics."""
    numbers, other = {}, {}
    for k, v in raw.items():
        f = _float(v)
        if f is not None and (math.isfinite(f) or not finite):
            numbers[str(k)] = f
        elif not finite:
            other[str(k)] = _clip(str(k), v)
    return numbers, other


def _describe(v: object) -> str:
    """A bad score, briefly: a 400-digit int as its size, not its digits."""
    if isinstance(v, int) and not isinstance(v, bool) and _float(v) is None:
        return f"an integer of about {int(v.bit_length() * math.log10(2)) + 1} digits, past a float's range"
    return f"{_str(v)!r:.200}"


def _exit_reason(rc: int, limits: Limits, stderr: str, oom: bool) -> tuple[Status, str]:
    """Status and message for a harness that left no result. The OOM killer in its own
    memory cgroup is the candidate's doing: the group holds nothing else."""
    if oom and not (rc == 0 or rc == -signal.SIGXCPU):
        return Status.RUNTIME_ERROR, (
            f"killed by the kernel: memory limit ({limits.memory_mb} MB) exceeded "
            "(out of memory in the evaluation's cgroup)"
        )
    if rc >= 0:
        msg = f"process exited with code {rc} without a result"
        if "MemoryError" in stderr:
            msg += f"; memory limit ({limits.memory_mb} MB) exceeded (MemoryError)"
        return Status.RUNTIME_ERROR, msg
    sig = -rc
    try:
        name = signal.Signals(sig).name
    except ValueError:
        name = f"signal {sig}"
    if sig == signal.SIGXCPU:
        return (
            Status.TIMEOUT,
            f"killed by SIGXCPU: CPU time limit ({cpu_limit_s(limits)} s) exceeded",
        )
    if sig == signal.SIGXFSZ:
        return (
            Status.RUNTIME_ERROR,
            f"killed by SIGXFSZ: a file or the output exceeded {limits.max_file_mb} MB",
        )
    if sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGKILL):
        return Status.RUNTIME_ERROR, (
            f"killed by {name} (not by the sandbox deadline; possibly out of "
            f"memory, the limit is {limits.memory_mb} MB)"
        )
    return Status.RUNTIME_ERROR, f"killed by {name}"


def to_result(
    run: ProcRun, limits: Limits, who: str, check_score: bool, prefix: str = ""
) -> tuple[EvalResult, object]:
    """(EvalResult, outputs or MISSING). With check_score False the score is left
    to a later trusted score() and only failures count here."""
    ours = {f"{prefix}{k}": v for k, v in (("stdout", run.stdout), ("stderr", run.stderr)) if v}
    if run.strays:
        n = run.strays
        ours[f"{prefix}cleanup"] = (
            f"killed {n} process{'es' * (n != 1)} still running after {who} returned"
        )
    if run.timed_out:
        error = f"{who}: wall-clock timeout of {limits.timeout_s:g} s exceeded; all its processes were killed"
        return EvalResult(Status.TIMEOUT, artifacts={"error": error, **ours}), MISSING
    data = run.data
    if run.preamble is not None and run.preamble.get("status") == Status.SANDBOX_ERROR:
        data = run.preamble  # the evaluator failed to load: nothing of the candidate ran
    elif (
        run.preamble is not None and data is not None and data.get("status") == Status.SANDBOX_ERROR
    ):
        art = data.get("artifacts")  # written after the candidate ran: it may be the candidate's
        claimed = art.get("error") if isinstance(art, dict) else None
        data = {
            **data,
            "status": Status.RUNTIME_ERROR,
            "artifacts": {
                **(art if isinstance(art, dict) else {}),
                "error": f"{_str(claimed):.2000} (a sandbox error is only ever decided by the host)",
            },
        }
    status = data.get("status") if data is not None else None
    if data is None or not isinstance(status, str) or status not in _HARNESS_STATUSES:
        status, error = _exit_reason(run.returncode, limits, run.stderr, run.out_of_memory)
        if data is not None:
            status, error = Status.RUNTIME_ERROR, f"{who} left a malformed result file"
        elif run.note:
            error += f" ({run.note})"
        return EvalResult(status, artifacts={"error": error, **ours}), MISSING
    status = Status(status)  # the harness's string, checked above: from here a member
    raw_metrics = data.get("metrics")
    metrics, moved = _numbers(raw_metrics if isinstance(raw_metrics, dict) else {}, finite=False)
    raw_art = data.get("artifacts")
    raw_art = raw_art if isinstance(raw_art, dict) else {}
    texts = {k: "" for k in ("error", "traceback") if k in raw_art}  # kept first, if given
    texts.update((str(k), _clip(str(k), v)) for k, v in raw_art.items())
    for k, text in moved.items():
        texts.setdefault(k, text)
    metrics, n_metrics = keep_first(metrics, MAX_METRICS)
    artifacts, n_art = keep_first(texts, MAX_ARTIFACTS)
    for k, v in ours.items():  # the evaluator's own `stdout` (feedback for the model) wins
        artifacts[f"captured_{k}" if k in artifacts else k] = _clip(k, v)
    score: Any = data.get("score")
    final = _float(score) if status == Status.OK and check_score else None
    if status == Status.OK and check_score and (final is None or not math.isfinite(final)):
        status, final = Status.INVALID, None
        artifacts["error"] = f"{who} gave a score that is not a finite number: {_describe(score)}"
    stages = data.get("stages") if final is not None else None  # the harness's name for scores
    scores, n_stages = keep_first(
        _numbers(stages, finite=True)[0] if isinstance(stages, dict) else {}, MAX_METRICS
    )
    note = dropped_note(
        {
            "metrics": (n_metrics, MAX_METRICS),
            "artifacts": (n_art, MAX_ARTIFACTS),
            "stages": (n_stages, MAX_METRICS),
        }
    )
    if note:
        artifacts[prefix + DROPPED] = note
    if (
        run.out_of_memory and status == Status.RUNTIME_ERROR
    ):  # a child of the harness was the victim
        artifacts["error"] = (
            f"{artifacts.get('error', '')}; memory limit ({limits.memory_mb} MB) exceeded: "
            "the kernel killed a process of the evaluation (out of memory in its cgroup)"
        ).lstrip("; ")
    return EvalResult(status, final, metrics, artifacts, scores=scores), data.get(
        "outputs", MISSING
    )


_score_cache: dict[tuple[str, int], bool] = {}
_cache_lock = threading.Lock()


def _binds_score(stmts: list[ast.stmt]) -> bool:
    for node in stmts:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == "score":
            return True
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "score" for t in targets):
                return True
        if isinstance(node, ast.Import | ast.ImportFrom):
            if any((a.asname or a.name) == "score" for a in node.names):
                return True
        if isinstance(node, ast.If | ast.Try | ast.With):
            nested = [*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])]
            if _binds_score(nested):
                return True
    return False


def has_score_fn(problem_dir: str) -> bool:
    """Whether a native evaluator.py defines a trusted score(), read from its
    source on the host: the candidate cannot influence this."""
    path = os.path.join(problem_dir, "evaluator.py")
    try:
        key = (path, os.stat(path).st_mtime_ns)
    except OSError:
        return False
    with _cache_lock:
        if key not in _score_cache:
            try:
                with open(path, encoding="utf-8") as f:
                    _score_cache[key] = _binds_score(ast.parse(f.read()).body)
            except (OSError, SyntaxError, ValueError):
                _score_cache[key] = False
        return _score_cache[key]
