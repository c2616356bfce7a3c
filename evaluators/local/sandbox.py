"""LocalSandbox: every evaluation in fresh, confined subprocesses on this machine.

One evaluation = the harness in `run` mode next to the candidate and, for a
native problem with a trusted score(), the harness in `score` mode in a second
clean process that never imports the candidate. Each process gets a fresh
scratch dir, an allowlisted environment, rlimits, its own session and (as root)
its own uid; at the deadline, and always afterwards, everything it started is
killed. If the controller dies, the evaluation dies with it: bubblewrap's
namespace goes with --die-with-parent, and without bubblewrap a watchdog kills
the process group (exec_chain.py). See exec_chain.py for how a process is
confined, bubblewrap.py for its namespaces, uids.py for the uid it runs as,
process_tree.py for finding and killing what it started, and
evaluators/harness_result.py for the checks.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path

from evaluators.harness_result import (
    MISSING,
    PREAMBLE_MAX_BYTES,
    ProcRun,
    has_score_fn,
    read_preamble,
    read_result_file,
    tail,
    to_result,
)
from evaluators.local import bubblewrap, cgroups, exec_chain, reachable
from evaluators.local.bubblewrap import SCRATCH, Isolation
from evaluators.local.leftovers import make_dir, remove_tree
from evaluators.local.process_tree import (
    KILL_WAIT_S,
    TOKEN_VAR,
    children,
    kill_all,
    namespace_init,
    reap,
    set_subreaper,
    wait_exit,
)
from evaluators.local.seccomp_filter import filter_fd
from evaluators.local.uids import (
    OWNED_TMP_DIRS,
    is_root,
    remove_owned,
    score_uid,
    tasks_of_uid,
    uid_slot,
)
from evaluators.sandbox import STATUS_FD_ENV, EvalRequest, EvalResult, Status

INSIDE = str(Path(__file__).resolve().parent.parent / "inside")  # what the sandbox binds to run
HARNESS = os.path.join(INSIDE, "harness.py")
OFF = "turned off (no namespaces, seccomp or cgroups: rlimits and uids only)"
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


def _memfd(name: str, text: str) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, text.encode("utf-8"))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _check_name(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name or name.endswith(".json"):
        raise ValueError(f"program_name must be a plain file name, got {name!r}")
    return name


class IsolationMissing(RuntimeError):
    """`require_isolation` was asked for and a guarantee does not hold on this machine."""


class LocalSandbox:
    """Runs candidates on this machine; `max_parallel` evaluations at once."""

    name = "local"

    def __init__(
        self,
        max_parallel: int = 1,
        tmp_root: str | None = None,
        require_isolation: bool = False,
        isolate: bool = True,
    ) -> None:
        """`isolate=False` runs without namespaces (only rlimits and uids), as where
        bubblewrap is missing; `require_isolation` refuses to run with any guarantee lost."""
        self.isolation = bubblewrap.probe() if isolate else Isolation(None, False, False, (OFF,))
        if require_isolation and self.isolation.lost:
            raise IsolationMissing(
                "the local sandbox cannot isolate here: " + self.isolation.summary()
            )
        self.max_parallel = max(1, max_parallel)
        self._slots = threading.BoundedSemaphore(self.max_parallel)
        self._tmp_root = tmp_root
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int | None, str]] = {}  # harness pid -> (uid, token)
        self._closed = False
        if is_root() or self.isolation.bwrap:
            # Adopt orphans to reap them: this machine's PID 1 reaps lazily, and a zombie
            # still counts against its uid's RLIMIT_NPROC and its cgroup's pids.max. With
            # bubblewrap the only orphan is each namespace's init (bwrap exits on its status).
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
                    Status.SANDBOX_ERROR,
                    artifacts={
                        "error": f"local sandbox failed: {e!r}",
                        "traceback": traceback.format_exc()[-8000:],
                    },
                )
            result.eval_s = time.monotonic() - t0
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
                kill_all(pid, uid, token, skip={pid})
            except TimeoutError:
                pass

    def _evaluate(self, req: EvalRequest, uid: int | None) -> EvalResult:
        req = replace(
            req,
            problem_dir=os.path.abspath(req.problem_dir),  # cwd is scratch
            data_dir=req.data_dir and os.path.abspath(req.data_dir),
            includes=tuple(os.path.abspath(p) for p in req.includes),
            hidden=tuple(os.path.abspath(p) for p in req.hidden),
        )
        if uid is not None and not self.isolation.bwrap:  # no capability: views it can reach
            req = reachable.request(req)
        scored = req.fmt == "native" and has_score_fn(req.problem_dir)
        files = {_check_name(req.program_name): req.program_code, **req.seed_files()}
        run = self._launch(req, uid, "run", req.to_json(), files)
        result, outputs = to_result(run, req.limits, "evaluate()", check_score=not scored)
        if not scored or result.status != Status.OK:
            return result
        if outputs is MISSING:
            result.status = Status.INVALID
            result.artifacts["error"] = "evaluate() returned no 'outputs' for the trusted score()"
            return result
        payload = {
            "problem_dir": req.problem_dir,
            "split": req.split,
            "outputs": outputs,
            "limits": req.to_json()["limits"],
            "env": req.env,
            "data_seed": req.data_seed,
        }
        trusted = None if uid is None else score_uid(uid)  # not the candidate's uid
        run = self._launch(req, trusted, "score", payload, {})
        final, _ = to_result(run, req.limits, "score()", check_score=True, prefix="score_")
        final.artifacts = {**result.artifacts, **final.artifacts}  # the trusted side wins
        return final

    def _launch(
        self, req: EvalRequest, uid: int | None, mode: str, payload: dict, files: dict[str, str]
    ) -> ProcRun:
        """Run the harness once; kill everything it started; clean up.

        The result, the preamble and the output come back in files the host
        opened and passed down as descriptors: the candidate never gets a host
        path to write to, nor a folder to plant links in.
        """
        limits, token = req.limits, secrets.token_hex(16)
        inputs = {**files, ("REQ.json" if mode == "run" else "OUTPUTS.json"): json.dumps(payload)}
        scratch = None
        with ExitStack() as stack:
            temp = [
                stack.enter_context(tempfile.TemporaryFile(dir=self._tmp_root)) for _ in range(5)
            ]
            result_f, status_f, out_f, err_f, info_f = temp
            keep = [result_f.fileno()]
            env_extra = {}
            if self.isolation.bwrap:
                env_extra["EVOLVE_PIDNS"] = "1"
            if mode == "run":
                keep.append(status_f.fileno())
                env_extra[STATUS_FD_ENV] = str(status_f.fileno())
            src = next(reversed(inputs))
            python, harness = sys.executable, HARNESS
            if self.isolation.bwrap:
                fds = {name: _memfd(name, text) for name, text in inputs.items()}
                masks = {path: _memfd("hidden", "") for path in req.hidden if os.path.isfile(path)}
                for fd in [*fds.values(), *masks.values()]:
                    stack.callback(os.close, fd)
                seccomp = filter_fd() if self.isolation.seccomp else None
                if seccomp is not None:
                    stack.callback(os.close, seccomp)
                readable = [
                    INSIDE,
                    req.problem_dir,
                    *req.includes,
                    *([req.data_dir] if req.data_dir else []),
                ]
                if uid is not None and (why := bubblewrap.unreadable(readable)):
                    raise PermissionError(why)
                argv = bubblewrap.command(
                    self.isolation,
                    readable=readable,
                    hidden=masks,
                    inputs=fds,
                    limits_file_mb=limits.max_file_mb,
                    uid=uid,
                    seccomp_fd=seccomp,
                    info_fd=info_f.fileno(),
                )
                keep += [
                    *fds.values(),
                    *masks.values(),
                    info_f.fileno(),
                    *([seccomp] if seccomp is not None else []),
                ]
                cwd, home = "/", SCRATCH
                groups = cgroups.slot_groups(uid, limits.memory_mb, limits.max_procs) if uid else ()
                confine = exec_chain.no_new_privs()  # bubblewrap drops to the uid itself
            else:
                parent = self._tmp_root if uid is None else reachable.scratch_parent(self._tmp_root)
                scratch = make_dir("scratch", parent)  # named after us: see leftovers.py
                stack.callback(remove_tree, scratch)
                for name, text in inputs.items():
                    Path(scratch, name).write_text(text, encoding="utf-8")
                if uid is not None:
                    if why := bubblewrap.unreadable([req.problem_dir, *req.includes]):
                        raise PermissionError(why)
                    os.chown(scratch, uid, uid)
                    python, harness, more = reachable.launcher(HARNESS)
                    env_extra.update(more)
                    # what the slot uid leaves in the shared temp folders goes too
                    tmp_dirs = (
                        *OWNED_TMP_DIRS,
                        self._tmp_root or tempfile.gettempdir(),
                        os.path.dirname(scratch),
                    )
                    stack.callback(remove_owned, uid, tmp_dirs)
                argv, cwd, home, groups = [], scratch, scratch, ()
                # nothing else kills the evaluation if we die: the watchdog does (exec_chain.py)
                confine = [*exec_chain.watchdog(limits.timeout_s), *exec_chain.drop_to(uid)]
            argv += [
                python,
                "-s",
                harness,
                mode,
                f"{home}/{src}",
                f"fd:{result_f.fileno()}",
            ]
            nproc = limits.max_procs  # the slot uid's own tasks (root)
            if uid is None:  # ours, with what already runs, and the fallback's watchdog
                nproc += tasks_of_uid(os.getuid()) + (0 if self.isolation.bwrap else 1)
            # No preexec_fn (not safe while other threads run): the exec chain confines it.
            # Its parent-death signals (bwrap's --die-with-parent, setpriv's --pdeathsig) fire
            # when this *thread* exits: it stays here until the process is reaped.
            chain = [*exec_chain.join_cgroups(groups), *exec_chain.rlimits(limits, nproc), *confine]
            proc = subprocess.Popen(
                [*chain, *argv],
                cwd=cwd,
                env={**sandbox_env(req, home, token), **env_extra},
                stdin=subprocess.DEVNULL,
                stdout=out_f,
                stderr=err_f,
                pass_fds=keep,
                start_new_session=True,
            )
            with self._lock:
                self._live[proc.pid] = (uid, token)
                closed = self._closed
            if closed:  # close() ran while this evaluation was starting: stop it at once
                os.killpg(proc.pid, signal.SIGKILL)
            init, init_pid = (namespace_init(info_f, proc) if self.isolation.bwrap else None) or (
                None,
                None,
            )
            if init is not None:
                stack.callback(os.close, init)
            try:
                finished = wait_exit(proc, limits.timeout_s)
                if not finished and init is not None:
                    try:  # the kernel kills everything in the namespace with its init
                        signal.pidfd_send_signal(init, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    wait_exit(proc, KILL_WAIT_S)
            finally:
                try:  # at the deadline, and always after; the harness is not reaped yet: its
                    # pgid is safe. The namespace's init, and the harness under the
                    # watchdog, are ours to end, not strays.
                    skip = {proc.pid, init_pid, *children(proc.pid)}
                    strays = kill_all(proc.pid, uid, token, skip=skip)
                finally:
                    proc.wait()
                    if init is not None:
                        try:
                            signal.pidfd_send_signal(init, signal.SIGKILL)
                        except ProcessLookupError:
                            pass
                        reap(init)
                    with self._lock:
                        self._live.pop(proc.pid, None)
                    if groups:
                        cgroups.wait_empty(groups)
            data, note = read_result_file(result_f)
            if self.isolation.bwrap and data is not None:  # counted by the harness before exit
                n = data.pop(
                    "strays", 0
                )  # (the namespace killed them; the scan may still see some)
                strays = max(strays, n if type(n) is int and 0 < n < 1 << 20 else 0)
            status_f.seek(0)
            preamble = read_preamble(status_f.read(PREAMBLE_MAX_BYTES)) if mode == "run" else None
            why = _chain_error(err_f) if data is None and proc.returncode > 0 else None
            if why and not why.startswith("bwrap:") and (mode == "score" or preamble is None):
                # a tool of the exec chain failed: nothing of the candidate ever ran
                raise RuntimeError(f"the sandbox could not start the harness: {why}")
            if self.isolation.bwrap and proc.returncode == 1 and data is None:
                note = (note + "; " if note else "") + (why or "the sandbox could not start")
            rc = proc.returncode
            if self.isolation.bwrap and data is None and 128 < rc < 128 + signal.NSIG:
                rc = 128 - rc  # bubblewrap exits 128 + N for a child killed by signal N
            return ProcRun(
                data,
                rc,
                not finished,
                tail(out_f, limits.max_output_kb),
                tail(err_f, limits.max_output_kb),
                strays,
                note,
                preamble,
            )
        raise AssertionError("unreachable")  # for the type checker: ExitStack may swallow


def _chain_error(err_f) -> str | None:
    """The last complaint of bubblewrap or a tool of the exec chain (`setpriv: ...`), if any."""
    err_f.seek(0)
    lines = [
        ln
        for ln in err_f.read(65536).decode("utf-8", "replace").splitlines()
        if ln.startswith(("bwrap:", *(f"{t}:" for t in exec_chain.TOOLS)))
    ]
    return lines[-1] if lines else None
