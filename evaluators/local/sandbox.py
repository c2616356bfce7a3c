"""LocalSandbox: every evaluation in fresh, confined subprocesses on this machine.

One evaluation = the harness in `run` mode next to the candidate and, for a
native problem with a trusted score(), the harness in `score` mode in a second
clean process that never imports the candidate (evaluators/two_phase.py, shared
with Docker); this module only launches one harness process. Each process gets a fresh
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
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import BinaryIO

from evaluators import toolchain
from evaluators.harness_result import (
    PREAMBLE_MAX_BYTES,
    ProcRun,
    read_preamble,
    read_result_file,
    tail,
)
from evaluators.inside.caches import CRATES_ENV
from evaluators.inside.layout import write_tree
from evaluators.inside.openevolve_run import TOOL_DIRS_ENV
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
from evaluators.sandbox import (
    BENCHMARK_MOUNT,
    DATA_SEED_FILE,
    PRIVATE_TMP_ENV,
    SEED_FD_ENV,
    STATUS_FD_ENV,
    EvalRequest,
    Limits,
)
from evaluators.serving import SERVE_FDS_ENV, Serving, lifetime
from evaluators.two_phase import Session, TwoPhaseSandbox, absolute, program_files

INSIDE = str(Path(__file__).resolve().parent.parent / "inside")  # what the sandbox binds to run
HARNESS = os.path.join(INSIDE, "harness.py")
OFF = "turned off (no namespaces, seccomp or cgroups: rlimits and uids only)"
_THREADS_1 = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def sandbox_env(
    req: EvalRequest, scratch: str, token: str, tools: toolchain.Toolchain
) -> dict[str, str]:
    """Built from an allowlist: nothing else (API keys above all) leaks from os.environ."""
    env = {
        **tools.env,
        "PATH": tools.sandbox_path(os.environ.get("PATH", os.defpath)),
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
    if tools.roots:  # the Landlock of an OpenEvolve evaluation lets it run them
        env[TOOL_DIRS_ENV] = os.pathsep.join(tools.roots)
    if "LC_ALL" in os.environ:
        env["LC_ALL"] = os.environ["LC_ALL"]
    if req.data_dir:
        env["EVOLVE_DATA_DIR"] = req.data_dir
    if req.crates:
        env[CRATES_ENV] = req.crates
    return env


def _memfd(name: str, text: str) -> int:
    fd = os.memfd_create(name, 0)
    os.write(fd, text.encode("utf-8"))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


class IsolationMissing(RuntimeError):
    """`require_isolation` was asked for and a guarantee does not hold on this machine."""


@dataclass
class _Confined:
    """How one harness process starts under one of the two confinement strategies."""

    argv: list[str]  # before the harness's own command line (bubblewrap's, or nothing)
    python: str
    harness: str
    cwd: str
    home: str  # where the inputs lie, as the harness sees it
    confine: list[str]  # the exec chain's last tools (exec_chain.py)
    groups: tuple = ()  # the cgroups it joins
    keep: list[int] = field(default_factory=list)  # descriptors it inherits, beyond the files
    env: dict[str, str] = field(default_factory=dict)


class LocalSandbox(TwoPhaseSandbox):
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
        super().__init__(max_parallel)
        self._tmp_root = tmp_root
        self._lock = threading.Lock()
        self._live: dict[int, tuple[int | None, str]] = {}  # harness pid -> (uid, token)
        self._closed = False
        if is_root() or self.isolation.bwrap:
            # Adopt orphans to reap them: this machine's PID 1 reaps lazily, and a zombie
            # still counts against its uid's RLIMIT_NPROC and its cgroup's pids.max. With
            # bubblewrap the only orphan is each namespace's init (bwrap exits on its status).
            set_subreaper()

    def close(self) -> None:
        """Stop accepting work and kill whatever is still running."""
        with self._lock:  # paired with _spawn: a harness is either listed here or sees _closed
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

    @contextmanager
    def _slot(self, req: EvalRequest) -> Iterator[tuple[EvalRequest, int | None]]:
        """A slot uid (as root) for the candidate, and the request as the harness sees it."""
        if self._closed:
            raise RuntimeError("the sandbox is closed")
        with uid_slot() as uid:
            if uid is not None and not self.isolation.bwrap:  # no capability: views it can reach
                req = reachable.request(req)
            yield req, uid

    @contextmanager
    def session(self, req: EvalRequest) -> Iterator[Session]:
        """A slot uid (as root) for the candidate, and its twin for the trusted score()."""
        with self._slot(req) as (req, uid):
            trusted = None if uid is None else score_uid(uid)  # not the candidate's uid

            def launch(mode: str, payload: dict, files: dict[str, str]) -> ProcRun:
                return self._launch(req, uid if mode == "run" else trusted, mode, payload, files)

            yield req, launch

    def serve(self, request: EvalRequest, serving: Serving) -> ProcRun:
        """A GEPA script's worker (evaluators/stateful.py) under a candidate's slot uid and
        confinement, its request's limits but for the time, which each call has instead."""
        req = absolute(replace(request, limits=lifetime(request.limits)))
        with self._slot(req) as (inside, uid):
            files = program_files(inside)
            return self._launch(inside, uid, "serve", inside.to_json(), files, serving)

    def _launch(
        self,
        req: EvalRequest,
        uid: int | None,
        mode: str,
        payload: dict,
        files: dict[str, str],
        serving: Serving | None = None,
    ) -> ProcRun:
        """Run the harness once; kill everything it started; clean up.

        The result, the preamble and the output come back in files the host
        opened and passed down as descriptors: the candidate never gets a host
        path to write to, nor a folder to plant links in.
        """
        # The request and the data seed never lie in a file: the harness reads each from a
        # descriptor and closes it before the evaluator (and so any candidate) runs.
        inputs = {k: v for k, v in files.items() if k != DATA_SEED_FILE}
        secret = {"src": json.dumps(payload)}
        if DATA_SEED_FILE in files and mode == "run":
            secret["seed"] = files[DATA_SEED_FILE]
        tools = toolchain.resolve(req.tools)  # once: its binds and its PATH agree
        with ExitStack() as stack:
            outs = _Outputs(
                *(stack.enter_context(tempfile.TemporaryFile(dir=self._tmp_root)) for _ in range(5))
            )
            fds = {k: _memfd(k, text) for k, text in secret.items()}
            for fd in fds.values():
                stack.callback(os.close, fd)
            if self.isolation.bwrap:
                how = self._in_namespaces(stack, req, uid, inputs, outs.info, tools.roots)
            else:
                how = self._without_namespaces(stack, req, uid, inputs)
            how.keep += fds.values()
            if "seed" in fds:
                how.env[SEED_FD_ENV] = str(fds["seed"])
            if serving is not None:
                how.keep += serving.fds
                how.env[SERVE_FDS_ENV] = ",".join(map(str, serving.fds))
            stop = serving.stop if serving is not None else None
            return self._spawn(req, uid, mode, f"fd:{fds['src']}", how, outs, tools, stop)
        raise AssertionError("unreachable")  # for the type checker: ExitStack may swallow

    def _in_namespaces(
        self,
        stack: ExitStack,
        req: EvalRequest,
        uid: int | None,
        inputs: dict,
        info_f,
        tool_roots: tuple[str, ...],
    ) -> _Confined:
        """Bubblewrap: the inputs as memfds, hidden files masked, seccomp, cgroups."""
        fds = {name: _memfd(name, text) for name, text in inputs.items()}
        masks = {path: _memfd("hidden", "") for path in req.hidden if os.path.isfile(path)}
        for fd in [*fds.values(), *masks.values()]:
            stack.callback(os.close, fd)
        seccomp = filter_fd() if self.isolation.seccomp else None
        if seccomp is not None:
            stack.callback(os.close, seccomp)
        # cargo, g++ outside /usr: read-only too
        readable = [INSIDE, *tool_roots, req.problem_dir, *req.includes]
        readable += [p for p in (req.data_dir, req.crates) if p]
        if uid is not None and (why := bubblewrap.unreadable(readable)):
            raise PermissionError(why)
        argv = bubblewrap.command(
            self.isolation,
            readable=readable,
            hidden=masks,
            inputs=fds,
            limits_file_mb=req.limits.max_file_mb,
            uid=uid,
            seccomp_fd=seccomp,
            info_fd=info_f.fileno(),
            binds=((bench, BENCHMARK_MOUNT),) if (bench := req.benchmark_dir()) else (),
        )
        return _Confined(
            argv,
            sys.executable,
            HARNESS,
            cwd="/",
            home=SCRATCH,
            confine=exec_chain.no_new_privs(),  # bubblewrap drops to the uid itself
            groups=cgroups.slot_groups(uid, req.limits.memory_mb, req.limits.max_procs)
            if uid
            else (),
            keep=[
                *fds.values(),
                *masks.values(),
                info_f.fileno(),
                *([seccomp] if seccomp is not None else []),
            ],
            env={"EVOLVE_PIDNS": "1", PRIVATE_TMP_ENV: "1"},  # its own /tmp and /dev/shm
        )

    def _without_namespaces(
        self, stack: ExitStack, req: EvalRequest, uid: int | None, inputs: dict
    ) -> _Confined:
        """The fallback: a scratch folder, rlimits, a slot uid with no capability, a watchdog."""
        parent = self._tmp_root if uid is None else reachable.scratch_parent(self._tmp_root)
        scratch = make_dir("scratch", parent)  # named after us: see leftovers.py
        stack.callback(remove_tree, scratch)
        write_tree(scratch, inputs)  # a tree's folders made, never through a link
        python, harness = sys.executable, HARNESS
        env: dict[str, str] = {}
        if uid is not None:
            crates = [req.crates] if req.crates else []
            if why := bubblewrap.unreadable([req.problem_dir, *req.includes, *crates]):
                raise PermissionError(why)
            os.chown(scratch, uid, uid)
            python, harness, env = reachable.launcher(HARNESS)
            # what the slot uid leaves in the shared temp folders goes too
            tmp_dirs = (
                *OWNED_TMP_DIRS,
                self._tmp_root or tempfile.gettempdir(),
                os.path.dirname(scratch),
            )
            stack.callback(remove_owned, uid, tmp_dirs)
        # nothing else kills the evaluation if we die: the watchdog does (exec_chain.py)
        confine = [*exec_chain.watchdog(req.limits.timeout_s), *exec_chain.drop_to(uid)]
        return _Confined([], python, harness, scratch, scratch, confine, env=dict(env))

    def _spawn(
        self,
        req: EvalRequest,
        uid: int | None,
        mode: str,
        src: str,
        how: _Confined,
        outs: _Outputs,
        tools: toolchain.Toolchain,
        stop: threading.Event | None = None,
    ) -> ProcRun:
        """Start the harness as `how` says, wait for it within the deadline (or until `stop`),
        kill whatever it left, and read back what it wrote."""
        limits, token = req.limits, secrets.token_hex(16)
        bwrap = self.isolation.bwrap is not None
        keep = [outs.result.fileno(), *how.keep]
        env = {**sandbox_env(req, how.home, token, tools), **how.env}
        if mode == "run":
            keep.append(outs.status.fileno())
            env[STATUS_FD_ENV] = str(outs.status.fileno())
        argv = [
            *how.argv,
            how.python,
            "-s",
            how.harness,
            mode,
            src,
            f"fd:{outs.result.fileno()}",
        ]
        nproc = limits.max_procs  # the slot uid's own tasks (root)
        if uid is None:  # ours, with what already runs, and the fallback's watchdog
            nproc += tasks_of_uid(os.getuid()) + (0 if bwrap else 1)
        # No preexec_fn (not safe while other threads run): the exec chain confines it.
        # Its parent-death signals (bwrap's --die-with-parent, setpriv's --pdeathsig) fire
        # when this *thread* exits: it stays here until the process is reaped.
        chain = [
            *exec_chain.join_cgroups(how.groups),
            *exec_chain.rlimits(limits, nproc, cgroup=bool(how.groups)),
            *how.confine,
        ]
        proc = subprocess.Popen(
            [*chain, *argv],
            cwd=how.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=outs.out,
            stderr=outs.err,
            pass_fds=keep,
            start_new_session=True,
        )
        with self._lock:
            self._live[proc.pid] = (uid, token)
            closed = self._closed
        if closed:  # close() ran while this evaluation was starting: stop it at once
            os.killpg(proc.pid, signal.SIGKILL)
        init, init_pid = (namespace_init(outs.info, proc) if bwrap else None) or (None, None)
        try:
            finished = wait_exit(proc, limits.timeout_s, stop)
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
                    os.close(init)
                with self._lock:
                    self._live.pop(proc.pid, None)
                oom = cgroups.oom_kills(how.groups) > 0
                if how.groups:
                    cgroups.wait_empty(how.groups)
        return _collect(proc.returncode, not finished, strays, mode, bwrap, limits, outs, oom)


@dataclass
class _Outputs:
    """The files the host opened for one harness process and passes down as descriptors."""

    result: BinaryIO
    status: BinaryIO
    out: BinaryIO
    err: BinaryIO
    info: BinaryIO


def _collect(
    rc: int,
    timed_out: bool,
    strays: int,
    mode: str,
    bwrap: bool,
    limits: Limits,
    outs: _Outputs,
    oom: bool,
) -> ProcRun:
    """What the harness left in its files, and how it ended."""
    data, note = read_result_file(outs.result)
    if bwrap and data is not None:  # counted by the harness before exit
        # (the namespace killed them; the scan may still see some)
        n = data.pop("strays", 0)
        strays = max(strays, n if type(n) is int and 0 < n < 1 << 20 else 0)
    outs.status.seek(0)
    preamble = read_preamble(outs.status.read(PREAMBLE_MAX_BYTES)) if mode == "run" else None
    why = _chain_error(outs.err) if data is None and rc > 0 else None
    if why and not why.startswith("bwrap:") and (mode == "score" or preamble is None):
        # a tool of the exec chain failed: nothing of the candidate ever ran
        raise RuntimeError(f"the sandbox could not start the harness: {why}")
    if bwrap and rc == 1 and data is None:
        note = (note + "; " if note else "") + (why or "the sandbox could not start")
    if bwrap and data is None and 128 < rc < 128 + signal.NSIG:
        rc = 128 - rc  # bubblewrap exits 128 + N for a child killed by signal N
    return ProcRun(
        data,
        rc,
        timed_out,
        tail(outs.out, limits.max_output_kb),
        tail(outs.err, limits.max_output_kb),
        strays,
        note,
        preamble,
        oom,
    )


def _chain_error(err_f) -> str | None:
    """The last complaint of bubblewrap or a tool of the exec chain (`setpriv: ...`), if any."""
    err_f.seek(0)
    lines = [
        ln
        for ln in err_f.read(65536).decode("utf-8", "replace").splitlines()
        if ln.startswith(("bwrap:", *(f"{t}:" for t in exec_chain.TOOLS)))
    ]
    return lines[-1] if lines else None
