"""DockerSandbox: every evaluation in a warm, locked-down container of a pool.

Same contract as LocalSandbox (evaluators/local/sandbox.py): the harness runs the
evaluator next to the candidate (`run` mode) and, for a native problem with a
trusted score(), once more in a clean process that never saw the candidate
(`score` mode); evaluators/harness_result.py turns what each left behind into an
EvalResult.

Container policy (every container of the pool, created by `_create`):
no network; memory and memory+swap limited; a CPU quota; a pids limit; a
read-only root filesystem; tmpfs /scratch (uid 10001), /score (uid 10002), /out
(uid 10000, all 0700) and /tmp (1777), size- and inode-limited, and charged to
the memory limit, so a disk fill never reaches the host's disk; every
capability dropped but the four the agent needs to run each harness as
another uid (SETUID, SETGID, SETPCAP, KILL), which no harness keeps;
no-new-privileges; a private IPC namespace; only the environment built here.
The problem folder is mounted read-only at /problem, the data folder at /data
(whole, for every split), and a per-container input folder at /in holds the
candidate, read-only inside. The request and the data seed never lie in a file: they
follow the launch line on the agent's channel, and the harness reads each from a
memfd it closes before any candidate code runs.

Uids (docker/agent.py has the details): the agent starts as root and at once
becomes 10000, keeping only those capabilities; the `run` harness (and so the
candidate) runs as 10001 and the trusted `score` harness as 10002, each with
no capability at all, so the candidate can neither signal nor prlimit nor
renice the agent nor reach the trusted side's files.

Warm pool: up to `max_parallel` containers run evolve's agent
(docker/agent.py) as PID 1; each evaluation checks one out, so concurrent
evaluations never share a container, and a container serves one split: a
held-out re-scoring never runs where train candidates run. Per launch the agent wipes the writable
places, forks the harness with rlimits, kills it at the deadline, SIGKILLs
every process left, checks its own state (rlimits, niceness, affinity, ids,
capabilities) against what it was at start and answers over the container's
attached stdin/stdout. The host enforces its own deadline on top; a container
that misbehaved (its deadline passed, something survived, the wipe failed, the
agent's state drifted, it died) is destroyed and replaced, and a launch the
agent refuses (its container is not clean) is retried in a fresh container,
so no candidate is charged for another's sabotage. Containers carry the label
`evolve=<run id>` and their owner process (host, pid, start time, boot id:
evaluators/liveness.py's owner_id): close() removes them; if the controller is killed
outright the agent sees its stdin close, kills a running evaluation at once and
stops the container, which the engine then removes; whatever a dead owner left
(containers, its host folder) is removed when the next sandbox starts, or by
the next `evolve` command (evaluators/machine.py's sweep).
"""

from __future__ import annotations

import atexit
import base64
import binascii
import json
import os
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace

from evaluators import tree
from evaluators.docker.agent_link import Box
from evaluators.docker.image import find_image, wanted_image
from evaluators.docker.worker_relay import relay
from evaluators.harness_result import RESULT_MAX_BYTES, ProcRun, read_preamble
from evaluators.inside.caches import CRATES_ENV
from evaluators.inside.layout import write_tree
from evaluators.liveness import owner_alive, owner_id
from evaluators.local import leftovers
from evaluators.sandbox import BENCHMARK_MOUNT, DATA_SEED_FILE, EvalRequest
from evaluators.serving import Serving, lifetime
from evaluators.two_phase import Session, TwoPhaseSandbox, absolute, program_files

AGENT_CMD = ["python3", "-s", "/opt/evolve/agent.py"]
USER = "0:0"  # only to start: the agent becomes AGENT_UID before it reads a request
AGENT_UID, RUN_UID, SCORE_UID = 10000, 10001, 10002
AGENT_CAPS = ["SETUID", "SETGID", "SETPCAP", "KILL"]
PROBLEM, DATA, IN, INCLUDE = "/problem", "/data", "/in", "/include"
CRATES = "/crates"  # the crates fetched for the problem (evolve/problem/crates.py), read-only
TREE_DIR = "tree"  # /in/tree: a tree's files, which the agent lays out in the scratch
LABEL = "evolve"  # its value is the run id
OWNER_LABEL = "evolve.owner"  # host:pid:start:boot of the controller (liveness.owner_id)
GRACE_S = 10.0  # beyond the agent's own deadline, before the host gives up on the container
START_TIMEOUT_S = 60.0
AGENT_MB = 128  # the agent (python + numpy) and slack, on top of the evaluation's memory
SCRATCH_MB, TMP_MB, SCORE_MB, INODES = 256, 64, 64, 16384
LAUNCH_TRIES = 3  # a launch refused by a container in doubt goes to a fresh one
_THREADS_1 = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_reaped = False
_reap_lock = threading.Lock()


def reap_containers(client=None) -> int:
    """Remove the containers of evolve processes that died; how many. Their agents stop by
    themselves once the controller's stream closes; this is for whatever did not."""
    if client is None:
        import docker

        client = docker.from_env(timeout=10)
    n = 0
    for c in client.api.containers(all=True, filters={"label": LABEL}):
        owner = (c.get("Labels") or {}).get(OWNER_LABEL)
        if owner and not owner_alive(owner):
            try:
                client.api.remove_container(c["Id"], force=True)
                n += 1
            except Exception:
                pass  # removed meanwhile (auto-remove)
    return n


def reap_leftovers(client, tmp_root: str | None = None) -> int:
    """Remove the containers and temp folders of evolve processes that died; how many
    containers."""
    n = reap_containers(client)
    leftovers.sweep(tmp_root)  # the folders: the containers went just now
    return n


def _inside(include: str) -> str:
    """Where an included file lies in the container (the kit's `include` looks there)."""
    return f"{INCLUDE}/{os.path.basename(include)}"


def _hidden_inside(path: str, problem_dir: str, data_dir: str | None) -> list[str]:
    """Where a host data file shows in the container: under /data, and under /problem
    when the data folder is the problem's own data/."""
    return [
        f"{mount}/{os.path.relpath(path, root)}"
        for root, mount in ((data_dir, DATA), (problem_dir, PROBLEM))
        if root and os.path.commonpath([path, root]) == root
    ]


def _parse_result(b64: object, note: object, max_bytes: int) -> tuple[dict | None, str | None]:
    """The agent's copy of the result file (base64), checked like harness_result.read_result
    checks the file: size-capped before a byte is decoded."""
    if not isinstance(b64, str):
        return None, note if isinstance(note, str) else None
    if len(b64) > 4 * (max_bytes // 3 + 1):
        return None, f"the result file is too large (at most {max_bytes} bytes)"
    try:
        raw = base64.b64decode(b64, validate=True)
        data = json.loads(raw)
    except (binascii.Error, ValueError, RecursionError) as e:
        return None, f"malformed result file: {type(e).__name__}"
    return (data, None) if isinstance(data, dict) else (None, "malformed result file")


class _Refused(Exception):
    """The agent would not launch: its container is not clean (not the candidate's doing)."""


class DockerSandbox(TwoPhaseSandbox):
    """Runs candidates in a pool of up to `max_parallel` warm containers of the sandbox image."""

    name = "docker"

    def __init__(
        self,
        max_parallel: int = 1,
        run_id: str | None = None,
        image: str | None = None,
        cpus: float = 1.0,
        client=None,
        tmp_root: str | None = None,
    ) -> None:
        import docker

        self.client = client or docker.from_env(timeout=120)
        self.client.ping()
        self.image = image or find_image(self.client)
        if self.image is None:
            raise RuntimeError(
                f"the sandbox image {wanted_image()} is not built: run `evolve sandbox build`"
            )
        super().__init__(max_parallel)
        self.run_id = run_id or f"adhoc-{os.getpid()}-{os.urandom(3).hex()}"
        self.cpus = cpus
        self.owner = owner_id()
        self._lock = threading.Lock()
        self._idle: list[Box] = []
        self._boxes: set[Box] = set()
        self._creating = 0  # decided to create, not yet in _boxes
        self._closed = False
        global _reaped
        with _reap_lock:
            if not _reaped:
                reap_leftovers(self.client, tmp_root)
                _reaped = True
        self._host_root = leftovers.make_dir("docker", tmp_root)  # named after its owner
        os.chmod(self._host_root, 0o755)
        self._empty = os.path.join(self._host_root, "empty")  # what hidden data files show
        with open(self._empty, "w"):
            pass
        os.chmod(self._empty, 0o444)
        atexit.register(self.close)

    # ---- the Sandbox interface ----------------------------------------------

    def close(self) -> None:
        """Stop accepting work and remove every container of this sandbox, busy or idle."""
        with self._lock:
            self._closed = True
            boxes = list(self._boxes)
            self._boxes.clear()
            self._idle.clear()
        if boxes:
            with ThreadPoolExecutor(min(8, len(boxes))) as pool:
                list(pool.map(self._destroy, boxes))
        try:  # anything created but not yet registered (a close during a start)
            mine = self.client.api.containers(
                all=True, filters={"label": f"{OWNER_LABEL}={self.owner}"}
            )
        except Exception:
            mine = []
        for c in mine:
            if (c.get("Labels") or {}).get(LABEL) == self.run_id:
                try:
                    self.client.api.remove_container(c["Id"], force=True)
                except Exception:
                    pass
        shutil.rmtree(self._host_root, ignore_errors=True)

    def containers(self) -> list[str]:
        """Ids of the pool's containers (tests and diagnostics)."""
        with self._lock:
            return [b.cid for b in self._boxes]

    # ---- one evaluation -----------------------------------------------------

    @contextmanager
    def session(self, req: EvalRequest) -> Iterator[Session]:
        """A warm container of the pool, replaced by a fresh one when in doubt."""
        boxes = [self._checkout(req)]  # the one in use, replaced when in doubt
        try:
            inside = self._inside(req)

            def launch(mode: str, payload: dict, files: dict[str, str]) -> ProcRun:
                return self._launch(boxes, req, mode, payload, files)

            yield inside, launch
        finally:
            for box in boxes:
                self._checkin(box)

    def _inside(self, req: EvalRequest) -> EvalRequest:
        """The request with its paths as the container shows them."""
        return replace(
            req,
            problem_dir=PROBLEM,
            data_dir=DATA if req.data_dir else None,
            includes=tuple(_inside(p) for p in req.includes),
            crates=CRATES if req.crates else None,
        )

    def _launch(
        self, boxes: list[Box], req: EvalRequest, mode: str, payload: dict, files: dict[str, str]
    ) -> ProcRun:
        """One harness process in a clean container: boxes[0], or a fresh one in its place
        if that one is in doubt (a run that left it unclean, a launch it refused)."""
        for _ in range(LAUNCH_TRIES):
            if boxes[-1].broken:
                self._drop(boxes.pop())
                boxes.append(self._checkout(req))
            try:
                return self._launch_in(boxes[-1], req, mode, payload, files)
            except _Refused:
                boxes[-1].broken = True
        raise RuntimeError(f"{LAUNCH_TRIES} sandbox containers in a row were not clean")

    def _launch_in(
        self, box: Box, req: EvalRequest, mode: str, payload: dict, files: dict[str, str]
    ) -> ProcRun:
        """One harness process in the box's container; the agent cleans up after it."""
        msg, body = self._start(box, req, mode, payload, files)
        answer = box.call(msg, req.limits.timeout_s + GRACE_S, body)
        return self._finished(box, answer)

    def _start(
        self, box: Box, req: EvalRequest, mode: str, payload: dict, files: dict[str, str]
    ) -> tuple[dict, bytes]:
        """The files laid out in the box's /in, and the launch's line and body. A tree's
        files go to /in/tree/ at their paths, and the agent copies them into the scratch."""
        limits = req.limits
        for old in os.listdir(box.in_dir):
            path = os.path.join(box.in_dir, old)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.unlink(path)
        # The request and the data seed travel after the launch line: the agent hands them
        # to the harness as descriptors it closes before any candidate code runs.
        secrets = {"src": json.dumps(payload).encode()}
        if mode == "run" and DATA_SEED_FILE in files:
            secrets["seed"] = files[DATA_SEED_FILE].encode()
        files = {k: v for k, v in files.items() if k != DATA_SEED_FILE}
        is_tree = bool(files) and tree.is_tree(req.program_code)
        paths = list(files) if is_tree else []
        if paths:
            os.mkdir(os.path.join(box.in_dir, TREE_DIR), 0o755)
            write_tree(os.path.join(box.in_dir, TREE_DIR), {p: files[p] for p in paths})
        for fname, text in files.items():
            if fname in paths:
                continue
            path = os.path.join(box.in_dir, fname)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(path, 0o644)
        msg = {
            "op": "launch",
            "mode": mode,
            "secrets": {name: len(data) for name, data in secrets.items()},
            "program": req.program_name if is_tree else next(iter(files), None),
            "tree": paths,
            "timeout_s": limits.timeout_s,
            "memory_mb": limits.memory_mb,
            "address_space_bytes": limits.address_space_bytes(),
            "max_file_mb": limits.max_file_mb,
            "max_output_kb": limits.max_output_kb,
            "max_result_bytes": RESULT_MAX_BYTES,
        }
        return msg, b"".join(secrets.values())

    def _finished(self, box: Box, answer: dict | None) -> ProcRun:
        """What the agent answered of a launch (None: no answer) as the harness's run."""
        if answer is None:
            if box.timed_out:  # the agent did not reclaim it: the container goes, and all in it
                return ProcRun(None, -9, True, "", "", 0, None)
            if self._closed:
                raise RuntimeError("the sandbox was closed during the evaluation")
            return ProcRun(
                None, -9, False, "", box.err.decode("utf-8", "replace"), 0, self._death_note(box)
            )
        if "refused" in answer:
            raise _Refused(str(answer["refused"]))
        if "rc" not in answer:
            box.broken = True
            raise RuntimeError(f"the sandbox agent failed: {answer.get('error')}")
        if not answer.get("clean"):
            box.broken = True  # drift, a survivor, a failed wipe: never used again
        data, note = _parse_result(answer.get("result_b64"), answer.get("note"), RESULT_MAX_BYTES)
        preamble = answer.get("preamble")
        return ProcRun(
            data,
            int(answer["rc"]),
            bool(answer.get("timed_out")),
            str(answer.get("stdout") or ""),
            str(answer.get("stderr") or ""),
            int(answer.get("strays") or 0),
            note,
            read_preamble(preamble.encode()) if isinstance(preamble, str) else None,
            answer.get("oom") is True,
        )

    def serve(self, request: EvalRequest, serving: Serving) -> ProcRun:
        """A GEPA script's worker (evaluators/stateful.py) in a container of its own, under a
        candidate's uid, rlimits and container policy, its request's limits but for the
        time, which each call has instead. The container is never used again."""
        req = absolute(replace(request, limits=lifetime(request.limits)))
        box = self._checkout(req)
        try:
            inside = self._inside(req)
            msg, body = self._start(box, req, "serve", inside.to_json(), program_files(inside))
            answer = (
                relay(box, serving) if box.send(json.dumps(msg).encode() + b"\n" + body) else None
            )
            if answer is None and serving.stop.is_set():
                return ProcRun(None, -9, True, "", "", 0, "ended by the host")
            return self._finished(box, answer)
        finally:
            box.broken = True
            self._drop(box)

    def _death_note(self, box: Box) -> str:
        try:
            state = self.client.api.inspect_container(box.cid)["State"]
        except Exception:
            return "the sandbox container died"
        oom = ", out of memory" if state.get("OOMKilled") else ""
        return f"the sandbox container died (exit code {state.get('ExitCode')}{oom})"

    # ---- the pool -----------------------------------------------------------

    def _key(self, req: EvalRequest) -> tuple:
        """What a warm container is for. The split too: held-out re-scoring never shares a
        container with train evaluations, whatever a container might keep between them."""
        lim = req.limits
        return (
            req.problem_dir,
            req.data_dir,
            req.includes,
            req.hidden,
            lim.memory_mb,
            lim.max_procs,
            lim.max_file_mb,
            req.split,
            bool(req.tools),
            req.crates,
            req.benchmark_dir(),
        )

    def _checkout(self, req: EvalRequest) -> Box:
        key = self._key(req)
        while True:
            victim = None
            with self._lock:
                if self._closed:
                    raise RuntimeError("the sandbox is closed")
                box = next((b for b in self._idle if b.key == key), None)
                if box is not None:
                    self._idle.remove(box)
                else:
                    if len(self._boxes) + self._creating >= self.max_parallel and self._idle:
                        victim = self._idle.pop(0)  # warm for another problem or limits
                        self._boxes.discard(victim)
                    self._creating += 1
            if victim is not None:
                self._destroy(victim)
            if box is None:
                try:
                    return self._create(key)
                finally:
                    with self._lock:
                        self._creating -= 1
            if not box.stale():
                return box
            self._drop(box)

    def _checkin(self, box: Box) -> None:
        with self._lock:
            if not box.broken and not self._closed and box in self._boxes:
                self._idle.append(box)
                return
        self._drop(box)

    def _drop(self, box: Box) -> None:
        with self._lock:
            self._boxes.discard(box)
        self._destroy(box)

    def _destroy(self, box: Box) -> None:
        try:  # wakes an evaluation waiting on this box (close() during a run) with EOF
            box.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            box.sock.close()
        except OSError:
            pass
        try:
            self.client.api.remove_container(box.cid, force=True)
        except Exception:
            pass  # already gone (auto-remove) or being removed
        shutil.rmtree(box.in_dir, ignore_errors=True)

    def _create(self, key: tuple) -> Box:
        from docker.types import LogConfig, Mount

        (
            problem_dir,
            data_dir,
            includes,
            hidden,
            memory_mb,
            max_procs,
            max_file_mb,
            _split,
            tools,
            crates,
            benchmark,
        ) = key
        in_dir = tempfile.mkdtemp(prefix="in-", dir=self._host_root)
        os.chmod(in_dir, 0o755)
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": "/scratch",
            "TMPDIR": "/scratch",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONHASHSEED": "0",
            "PYTHONPATH": PROBLEM,
            "EVOLVE_PRIVATE_TMP": "1",  # /tmp and /dev/shm are the container's own, wiped
            **dict.fromkeys(_THREADS_1, "1"),
        }
        mounts = [
            Mount(PROBLEM, problem_dir, type="bind", read_only=True),
            Mount(IN, in_dir, type="bind", read_only=True),
        ]
        if data_dir:
            env["EVOLVE_DATA_DIR"] = DATA
            mounts.append(Mount(DATA, data_dir, type="bind", read_only=True))
        if includes:
            env["EVOLVE_INCLUDE_DIR"] = INCLUDE
            mounts += [Mount(_inside(p), p, type="bind", read_only=True) for p in includes]
        if benchmark:  # a SkyDiscover folder's evaluator/, where its scripts expect it
            mounts.append(Mount(BENCHMARK_MOUNT, benchmark, type="bind", read_only=True))
        if crates:
            env[CRATES_ENV] = CRATES
            mounts.append(Mount(CRATES, crates, type="bind", read_only=True))
        for path in hidden:  # another split's data: an empty file in its place
            if os.path.isfile(path):
                for inside in _hidden_inside(path, problem_dir, data_dir):
                    mounts.append(Mount(inside, self._empty, type="bind", read_only=True))

        def tmpfs(mb: int, uid: int, mode: str = "0700", run: bool = False) -> str:
            opts = f"size={mb}m,nr_inodes={INODES},uid={uid},gid={uid},mode={mode}"
            return f"rw,nosuid,nodev,{'exec' if run else 'noexec'},{opts}"

        mem = f"{memory_mb + AGENT_MB}m"
        api = self.client.api
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
            cap_add=AGENT_CAPS,
            security_opt=["no-new-privileges"],
            mem_limit=mem,
            memswap_limit=mem,
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=max_procs + 2,
            ipc_mode="private",
            shm_size="64m",
            auto_remove=True,
            mounts=mounts,
            log_config=LogConfig(type="none"),
            tmpfs={
                # the candidate's HOME and cwd; where a problem's tools (cargo, g++) build
                # the program they then run, it may hold programs (nosuid all the same)
                "/scratch": tmpfs(SCRATCH_MB, RUN_UID, run=tools),
                "/score": tmpfs(SCORE_MB, SCORE_UID),  # the trusted score()'s
                "/tmp": tmpfs(TMP_MB, AGENT_UID, "1777"),
                "/out": tmpfs(3 * max_file_mb + 8, AGENT_UID),  # the agent's: result, output
            },
        )
        labels = {LABEL: self.run_id, OWNER_LABEL: self.owner}
        cid = api.create_container(
            self.image,
            command=AGENT_CMD,
            user=USER,
            environment=env,
            working_dir="/",
            hostname="sandbox",
            labels=labels,
            stdin_open=True,
            detach=False,
            host_config=host_config,
        )["Id"]
        box = None
        try:
            sock = api.attach_socket(
                cid, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            box = Box(key, cid, sock, in_dir)
            with self._lock:
                if self._closed:
                    raise RuntimeError("the sandbox is closed")
                self._boxes.add(box)
            api.start(cid)
            hello = box.read(START_TIMEOUT_S)
            if not hello or not hello.get("ready") or hello.get("uid") != AGENT_UID:
                err = box.err.decode("utf-8", "replace")[-2000:]
                raise RuntimeError(
                    f"the sandbox agent did not start in {self.image}: {err or hello}"
                )
            return box
        except BaseException:
            if box is not None:
                self._drop(box)
            else:
                try:
                    api.remove_container(cid, force=True)
                except Exception:
                    pass
                shutil.rmtree(in_dir, ignore_errors=True)
            raise
