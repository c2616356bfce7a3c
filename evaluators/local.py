"""LocalSandbox: every evaluation in fresh, confined subprocesses on this machine.

One evaluation = the harness in `run` mode next to the candidate and, for a
native problem with a trusted score(), the harness in `score` mode in a second
clean process that never imports the candidate. Each process gets a fresh
scratch dir, an allowlisted environment, rlimits, its own session and (as root)
its own uid; at the deadline, and always afterwards, everything it started is
killed. See limits.py for the confinement and local_result.py for the checks.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from dataclasses import replace
from pathlib import Path

from evaluators.limits import (
    HOST_PREFIX,
    OWNED_TMP_DIRS,
    TOKEN_VAR,
    is_root,
    kill_all,
    make_preexec,
    remove_owned,
    set_subreaper,
    tasks_of_uid,
    uid_slot,
)
from evaluators.local_result import MISSING, ProcRun, has_score_fn, read_result, tail, to_result
from evaluators.sandbox import INVALID, OK, SANDBOX_ERROR, EvalRequest, EvalResult

HARNESS = str(Path(__file__).resolve().with_name("harness.py"))
_THREADS_1 = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def sandbox_env(req: EvalRequest, scratch: str, token: str) -> dict[str, str]:
    """Built from an allowlist: nothing else (API keys above all) leaks from os.environ."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "HOME": scratch,
        "TMPDIR": scratch,
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONHASHSEED": "0",
        # evaluators' own subprocesses (`python -c "import helper"`) find problem modules
        "PYTHONPATH": req.problem_dir,
        TOKEN_VAR: token,
        **dict.fromkeys(_THREADS_1, "1"),
    }
    if "LC_ALL" in os.environ:
        env["LC_ALL"] = os.environ["LC_ALL"]
    if req.data_dir:
        env["EVOLVE_DATA_DIR"] = req.data_dir
    return env


def _wait_exit(proc: subprocess.Popen, timeout_s: float) -> bool:
    """Wait until the harness exits, without reaping it; False at the deadline.

    Not reaping keeps its pid (= the process group id) from being reused
    before we kill the group. A pidfd wakes us at exit; Popen.wait(timeout)
    would poll with sleeps of up to 50 ms.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        end = time.monotonic() + timeout_s
        while os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            if time.monotonic() > end:
                return False
            time.sleep(0.005)
        return True
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(max(0.0, timeout_s) * 1000))
    finally:
        os.close(fd)


def _rmtree(path: str) -> None:
    """Remove a temp dir even after the candidate chmod-ed parts of it (non-root)."""
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path):
        for root, dirs, _ in os.walk(path):
            for d in [root, *(os.path.join(root, x) for x in dirs)]:
                try:
                    os.chmod(d, 0o700)
                except OSError:
                    pass
        shutil.rmtree(path, ignore_errors=True)


def _check_name(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name or name.endswith(".json"):
        raise ValueError(f"program_name must be a plain file name, got {name!r}")
    return name


class LocalSandbox:
    """Runs candidates on this machine; `max_parallel` evaluations at once."""

    name = "local"

    def __init__(self, max_parallel: int = 1, tmp_root: str | None = None) -> None:
        self.max_parallel = max(1, max_parallel)
        self._slots = threading.BoundedSemaphore(self.max_parallel)
        self._tmp_root = tmp_root
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int | None, str]] = {}  # harness pid -> (uid, token)
        self._closed = False
        if is_root():
            set_subreaper()

    def evaluate(self, request: EvalRequest) -> EvalResult:
        with self._slots:
            t0 = time.monotonic()  # the evaluation itself, not the wait for a slot
            try:
                if self._closed:
                    raise RuntimeError("the sandbox is closed")
                with uid_slot() as uid:
                    result = self._evaluate(request, uid)
            except Exception as e:
                result = EvalResult(
                    SANDBOX_ERROR,
                    artifacts={
                        "error": f"local sandbox failed: {e!r}",
                        "traceback": traceback.format_exc()[-8000:],
                    },
                )
            result.wall_s = time.monotonic() - t0
        return result

    def close(self) -> None:
        """Stop accepting work and kill whatever is still running."""
        with self._lock:  # paired with _launch: a harness is either listed here or sees _closed
            self._closed = True
            live = list(self._live.items())
        for pid, (uid, token) in live:
            try:  # the harness is still unreaped while listed in _live, so its pgid is safe to kill
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                kill_all(pid, uid, token, skip=pid)
            except TimeoutError:
                pass

    def _evaluate(self, req: EvalRequest, uid: int | None) -> EvalResult:
        req = replace(
            req,
            problem_dir=os.path.abspath(req.problem_dir),  # cwd is scratch
            data_dir=req.data_dir and os.path.abspath(req.data_dir),
        )
        scored = req.fmt == "native" and has_score_fn(req.problem_dir)
        files = {_check_name(req.program_name): req.program_code}
        run = self._launch(req, uid, "run", req.to_json(), files)
        result, outputs = to_result(run, req.limits, "evaluate()", check_score=not scored)
        if not scored or result.status != OK:
            return result
        if outputs is MISSING:
            result.status = INVALID
            result.artifacts["error"] = "evaluate() returned no 'outputs' for the trusted score()"
            return result
        payload = {
            "problem_dir": req.problem_dir,
            "split": req.split,
            "outputs": outputs,
            "limits": req.to_json()["limits"],
        }
        run = self._launch(req, uid, "score", payload, {})
        final, _ = to_result(run, req.limits, "score()", check_score=True, prefix="score_")
        final.artifacts = {**result.artifacts, **final.artifacts}  # the trusted side wins
        return final

    def _launch(
        self, req: EvalRequest, uid: int | None, mode: str, payload: dict, files: dict[str, str]
    ) -> ProcRun:
        """Run the harness once in fresh dirs; kill everything it started; clean up."""
        limits, token = req.limits, secrets.token_hex(16)
        scratch = tempfile.mkdtemp(prefix="evolve-scratch-", dir=self._tmp_root)
        host = tempfile.mkdtemp(
            prefix=HOST_PREFIX, dir=self._tmp_root
        )  # out of the candidate's way
        try:
            for name, text in files.items():
                Path(scratch, name).write_text(text, encoding="utf-8")
            src = os.path.join(scratch, "REQ.json" if mode == "run" else "OUTPUTS.json")
            Path(src).write_text(json.dumps(payload), encoding="utf-8")
            out_dir = os.path.join(host, "out")
            os.mkdir(out_dir, 0o700)
            if uid is not None:
                os.chmod(host, 0o711)
                os.chown(scratch, uid, uid)
                os.chown(out_dir, uid, uid)
            result_path = os.path.join(out_dir, "RESULT.json")
            nproc = (
                limits.max_procs
                if uid is not None
                else tasks_of_uid(os.getuid()) + limits.max_procs
            )
            stdout, stderr = os.path.join(host, "stdout"), os.path.join(host, "stderr")
            with open(stdout, "wb") as fo, open(stderr, "wb") as fe:
                proc = subprocess.Popen(
                    [sys.executable, "-s", HARNESS, mode, src, result_path],
                    cwd=scratch,
                    env=sandbox_env(req, scratch, token),
                    stdin=subprocess.DEVNULL,
                    stdout=fo,
                    stderr=fe,
                    start_new_session=True,
                    preexec_fn=make_preexec(limits, uid, nproc),
                )
            with self._lock:
                self._live[proc.pid] = (uid, token)
                closed = self._closed
            if closed:  # close() ran while this evaluation was starting: stop it at once
                os.killpg(proc.pid, signal.SIGKILL)
            try:
                finished = _wait_exit(proc, limits.timeout_s)
            finally:
                try:  # at the deadline, and always after; the harness is not reaped
                    strays = kill_all(proc.pid, uid, token, skip=proc.pid)  # yet: its pgid is safe
                finally:
                    proc.wait()
                    with self._lock:
                        self._live.pop(proc.pid, None)
            data, note = read_result(result_path, limits.max_file_mb * 2**20)
            return ProcRun(
                data,
                proc.returncode,
                not finished,
                tail(stdout, limits.max_output_kb),
                tail(stderr, limits.max_output_kb),
                strays,
                note,
            )
        finally:
            _rmtree(scratch)
            _rmtree(host)
            if uid is not None:
                remove_owned(uid, (*OWNED_TMP_DIRS, self._tmp_root or tempfile.gettempdir()))
