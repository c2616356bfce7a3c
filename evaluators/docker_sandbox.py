"""DockerSandbox: every evaluation in a warm, locked-down container of a pool.

Same contract as LocalSandbox (evaluators/local.py): the harness runs the
evaluator next to the candidate (`run` mode) and, for a native problem with a
trusted score(), once more in a clean process that never saw the candidate
(`score` mode); local_result.py turns what each left behind into an EvalResult.

Container policy (every container of the pool, created by `_create`):
no network; memory and memory+swap limited; a CPU quota; a pids limit; a
read-only root filesystem; tmpfs /tmp, /scratch and /out (size- and
inode-limited, and charged to the memory limit, so a disk fill never reaches
the host's disk); user 10001; all capabilities dropped; no-new-privileges; a
private IPC namespace; only the environment built here. The problem folder is
mounted read-only at /problem, the data folder at /data, and a per-container
input folder at /in holds the candidate and the request, read-only inside.

Warm pool: up to `max_parallel` containers run evolve's agent
(docker/agent.py) as PID 1; each evaluation checks one out, so concurrent
evaluations never share a container. Per launch the agent wipes the writable
places, forks the harness with rlimits, kills it at the deadline, SIGKILLs
every process left and answers over the container's attached stdin/stdout.
The host enforces its own deadline on top; a container that misbehaved (its
deadline passed, something survived, the wipe failed, it died) is destroyed
and replaced. Containers carry the label `evolve=<run id>` and their owner
process: close() removes them, a dead owner's leftovers are removed when the
next sandbox starts, and if the controller is killed outright the agent sees
its stdin close and stops the container, which the engine then removes.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import shutil
import socket
import tempfile
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

from evaluators.image import find_image, wanted_image
from evaluators.local_result import MISSING, ProcRun, has_score_fn, to_result
from evaluators.sandbox import INVALID, OK, SANDBOX_ERROR, EvalRequest, EvalResult, Limits

AGENT_CMD = ["python3", "-s", "/opt/evolve/agent.py"]
USER = "10001:10001"
PROBLEM, DATA, IN, INCLUDE = "/problem", "/data", "/in", "/include"
LABEL = "evolve"  # its value is the run id
OWNER_LABEL = "evolve.owner"  # host:pid:start-time of the controller process
HOST_PREFIX = "evolve-docker-"
GRACE_S = 10.0  # beyond the agent's own deadline, before the host gives up on the container
START_TIMEOUT_S = 60.0
AGENT_MB = 128  # the agent (python + numpy) and slack, on top of the evaluation's memory
SCRATCH_MB, TMP_MB, INODES = 256, 64, 16384
_THREADS_1 = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
_reaped = False
_reap_lock = threading.Lock()


def _start_time(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def owner_id(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_start_time(pid)}"


def owner_alive(owner: str) -> bool:
    """Whether the process that created a container still runs (True when unknowable)."""
    host, _, rest = owner.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True
    return bool(start) and _start_time(int(pid)) == start


def reap_leftovers(client, tmp_root: str | None = None) -> int:
    """Remove the containers and host folders of evolve processes that died; how many containers."""
    n = 0
    for c in client.api.containers(all=True, filters={"label": LABEL}):
        owner = (c.get("Labels") or {}).get(OWNER_LABEL)
        if owner and not owner_alive(owner):
            try:
                client.api.remove_container(c["Id"], force=True)
                n += 1
            except Exception:
                pass  # removed meanwhile (auto-remove)
    root = tmp_root or tempfile.gettempdir()
    for name in os.listdir(root):
        if name.startswith(HOST_PREFIX):
            pid, _, start = name[len(HOST_PREFIX) :].partition("-")
            start = start.split("-")[0]
            if pid.isdigit() and not owner_alive(f"{socket.gethostname()}:{pid}:{start}"):
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    return n


def _check_name(name: str) -> str:
    if not name or name in (".", "..") or "/" in name or "\0" in name or name.endswith(".json"):
        raise ValueError(f"program_name must be a plain file name, got {name!r}")
    return name


def _inside(include: str) -> str:
    """Where an included file lies in the container (evaluators/kit.py's `include` looks there)."""
    return f"{INCLUDE}/{os.path.basename(include)}"


def _parse_result(text: object, note: object, max_bytes: int) -> tuple[dict | None, str | None]:
    """The agent's copy of RESULT.json, checked like local_result.read_result checks the file."""
    if not isinstance(text, str):
        return None, note if isinstance(note, str) else None
    if len(text) > max_bytes:
        return None, "the result file is not a regular file of allowed size"
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        return None, f"malformed result file: {type(e).__name__}"
    return (data, None) if isinstance(data, dict) else (None, "malformed result file")


class _Box:
    """One warm container and the attached stream to its agent."""

    def __init__(self, key: tuple, cid: str, sock, in_dir: str) -> None:
        self.key, self.cid, self.in_dir = key, cid, in_dir
        self._io = sock  # keeps the HTTP response (and so the socket) alive
        self.sock = getattr(sock, "_sock", sock)
        self.sock.settimeout(None)
        self._buf = b""
        self._out = b""
        self.err = b""  # the agent's stderr, last 8 KiB
        self.broken = False
        self.timed_out = False

    def _pump(self, deadline: float) -> bool:
        """Read what is there into stdout/stderr; False at EOF or the deadline."""
        left = deadline - time.monotonic()
        if left <= 0:
            self.timed_out = True
            return False
        try:  # a socket closed by close() on another thread: fileno() -1, ValueError
            ready, _, _ = select.select([self.sock], [], [], left)
            if not ready:
                return True
            chunk = self.sock.recv(1 << 20)
        except (OSError, ValueError):
            chunk = b""
        if not chunk:
            return False
        self._buf += chunk
        while len(self._buf) >= 8:  # the engine's frames: stream, 0, 0, 0, size (4 bytes)
            size = int.from_bytes(self._buf[4:8], "big")
            if len(self._buf) < 8 + size:
                break
            stream, payload = self._buf[0], self._buf[8 : 8 + size]
            self._buf = self._buf[8 + size :]
            if stream == 2:
                self.err = (self.err + payload)[-8192:]
            else:
                self._out += payload
        return True

    def read(self, timeout_s: float) -> dict | None:
        """The agent's next answer; None when it died, garbled, or missed the deadline."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._out:
            if not self._pump(deadline):
                self.broken = True
                return None
        line, _, self._out = self._out.partition(b"\n")
        try:
            answer = json.loads(line)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            self.broken = True
            return None
        return answer

    def call(self, msg: dict, timeout_s: float) -> dict | None:
        try:
            self.sock.sendall(json.dumps(msg).encode() + b"\n")
        except OSError:
            self.broken = True
            return None
        return self.read(timeout_s)

    def stale(self) -> bool:
        """An idle agent says nothing: anything readable means it died or misbehaved."""
        if self.broken:
            return True
        try:
            ready, _, _ = select.select([self.sock], [], [], 0)
        except (OSError, ValueError):
            return True
        return bool(ready)


class DockerSandbox:
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
        self.max_parallel = max(1, max_parallel)
        self.run_id = run_id or f"adhoc-{os.getpid()}-{os.urandom(3).hex()}"
        self.cpus = cpus
        self.owner = owner_id()
        self._slots = threading.BoundedSemaphore(self.max_parallel)
        self._lock = threading.Lock()
        self._idle: list[_Box] = []
        self._boxes: set[_Box] = set()
        self._creating = 0  # decided to create, not yet in _boxes
        self._closed = False
        global _reaped
        with _reap_lock:
            if not _reaped:
                reap_leftovers(self.client, tmp_root)
                _reaped = True
        pid, start = os.getpid(), _start_time(os.getpid())
        self._host_root = tempfile.mkdtemp(prefix=f"{HOST_PREFIX}{pid}-{start}-", dir=tmp_root)
        os.chmod(self._host_root, 0o755)
        atexit.register(self.close)

    # ---- the Sandbox interface ----------------------------------------------

    def evaluate(self, request: EvalRequest) -> EvalResult:
        with self._slots:
            t0 = time.monotonic()
            try:
                result = self._evaluate(request)
            except Exception as e:
                result = EvalResult(
                    SANDBOX_ERROR,
                    artifacts={
                        "error": f"docker sandbox failed: {e!r}",
                        "traceback": traceback.format_exc()[-8000:],
                    },
                )
            result.wall_s = time.monotonic() - t0
        return result

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

    def _evaluate(self, req: EvalRequest) -> EvalResult:
        req = replace(
            req,
            problem_dir=os.path.abspath(req.problem_dir),
            data_dir=req.data_dir and os.path.abspath(req.data_dir),
            includes=tuple(os.path.abspath(p) for p in req.includes),
        )
        name = _check_name(req.program_name)
        scored = req.fmt == "native" and has_score_fn(req.problem_dir)
        box = self._checkout(req)
        try:
            inside = replace(
                req,
                problem_dir=PROBLEM,
                data_dir=DATA if req.data_dir else None,
                includes=tuple(_inside(p) for p in req.includes),
            )
            run = self._launch(box, req.limits, "run", inside.to_json(), {name: req.program_code})
            result, outputs = to_result(run, req.limits, "evaluate()", check_score=not scored)
            if not scored or result.status != OK:
                return result
            if outputs is MISSING:
                result.status = INVALID
                result.artifacts["error"] = (
                    "evaluate() returned no 'outputs' for the trusted score()"
                )
                return result
            payload = {
                "problem_dir": PROBLEM,
                "split": req.split,
                "outputs": outputs,
                "limits": req.to_json()["limits"],
            }
            run = self._launch(box, req.limits, "score", payload, {})
            final, _ = to_result(run, req.limits, "score()", check_score=True, prefix="score_")
            final.artifacts = {**result.artifacts, **final.artifacts}  # the trusted side wins
            return final
        finally:
            self._checkin(box)

    def _launch(
        self, box: _Box, limits: Limits, mode: str, payload: dict, files: dict[str, str]
    ) -> ProcRun:
        """One harness process in the box's container; the agent cleans up after it."""
        for old in os.listdir(box.in_dir):
            os.unlink(os.path.join(box.in_dir, old))
        src = "REQ.json" if mode == "run" else "OUTPUTS.json"
        for fname, text in {**files, src: json.dumps(payload)}.items():
            path = os.path.join(box.in_dir, fname)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            os.chmod(path, 0o644)
        msg = {
            "op": "launch",
            "mode": mode,
            "src": src,
            "program": next(iter(files), None),
            "timeout_s": limits.timeout_s,
            "memory_mb": limits.memory_mb,
            "max_file_mb": limits.max_file_mb,
            "max_output_kb": limits.max_output_kb,
        }
        answer = box.call(msg, limits.timeout_s + GRACE_S)
        if answer is None:
            if box.timed_out:  # the agent did not reclaim it: the container goes, and all in it
                return ProcRun(None, -9, True, "", "", 0, None)
            if self._closed:
                raise RuntimeError("the sandbox was closed during the evaluation")
            return ProcRun(
                None, -9, False, "", box.err.decode("utf-8", "replace"), 0, self._death_note(box)
            )
        if "rc" not in answer:
            box.broken = True
            raise RuntimeError(f"the sandbox agent failed: {answer.get('error')}")
        if not answer.get("clean"):
            box.broken = True
        data, note = _parse_result(
            answer.get("result"), answer.get("note"), limits.max_file_mb * 2**20
        )
        return ProcRun(
            data,
            int(answer["rc"]),
            bool(answer.get("timed_out")),
            str(answer.get("stdout") or ""),
            str(answer.get("stderr") or ""),
            int(answer.get("strays") or 0),
            note,
        )

    def _death_note(self, box: _Box) -> str:
        try:
            state = self.client.api.inspect_container(box.cid)["State"]
        except Exception:
            return "the sandbox container died"
        oom = ", out of memory" if state.get("OOMKilled") else ""
        return f"the sandbox container died (exit code {state.get('ExitCode')}{oom})"

    # ---- the pool -----------------------------------------------------------

    def _key(self, req: EvalRequest) -> tuple:
        lim = req.limits
        return (
            req.problem_dir,
            req.data_dir,
            req.includes,
            lim.memory_mb,
            lim.max_procs,
            lim.max_file_mb,
        )

    def _checkout(self, req: EvalRequest) -> _Box:
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

    def _checkin(self, box: _Box) -> None:
        with self._lock:
            if not box.broken and not self._closed and box in self._boxes:
                self._idle.append(box)
                return
        self._drop(box)

    def _drop(self, box: _Box) -> None:
        with self._lock:
            self._boxes.discard(box)
        self._destroy(box)

    def _destroy(self, box: _Box) -> None:
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

    def _create(self, key: tuple) -> _Box:
        from docker.types import LogConfig, Mount

        problem_dir, data_dir, includes, memory_mb, max_procs, max_file_mb = key
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

        def tmpfs(mb: int, mode: str = "0700") -> str:
            return f"rw,nosuid,nodev,noexec,size={mb}m,nr_inodes={INODES},uid=10001,gid=10001,mode={mode}"

        mem = f"{memory_mb + AGENT_MB}m"
        api = self.client.api
        host_config = api.create_host_config(
            network_mode="none",
            read_only=True,
            cap_drop=["ALL"],
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
                "/scratch": tmpfs(SCRATCH_MB),
                "/tmp": tmpfs(TMP_MB, "1777"),
                "/out": tmpfs(3 * max_file_mb + 8),
            },
        )
        labels = {LABEL: self.run_id, OWNER_LABEL: self.owner}
        cid = api.create_container(
            self.image,
            command=AGENT_CMD,
            user=USER,
            environment=env,
            working_dir="/scratch",
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
            box = _Box(key, cid, sock, in_dir)
            with self._lock:
                if self._closed:
                    raise RuntimeError("the sandbox is closed")
                self._boxes.add(box)
            api.start(cid)
            hello = box.read(START_TIMEOUT_S)
            if not hello or not hello.get("ready"):
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
