"""PID 1 of a warm sandbox container: runs one harness process per request from the host.

    python3 -s /opt/evolve/agent.py        # the container's command; talks over stdin/stdout

Why an agent and not `docker exec` per evaluation: an exec costs 70-120 ms of
runc and engine work on its own, more than a whole local evaluation. The agent
starts once per container (and imports numpy once), then for each request it
wipes the writable places, forks a child that runs evaluators/inside/harness.py
(`run` or `score` mode) with rlimits, its output going to files the agent
opened, enforces the deadline, SIGKILLs every other process in the container,
checks that nothing of it drifted, and answers with one JSON line: exit status,
the result file (base64, size-capped), the harness's preamble, the output tails,
how many strays it killed and whether the container is clean again.

The agent is the memory image every harness (and so every candidate) starts
from, so it never holds what a launch printed or returned: a short-lived child
reads the result and output files and writes the answer (`report`). A train
candidate thus finds nothing of the evaluation before it (a held-out score, its
output) however it walks its memory; the host also never gives a container that
ran one split an evaluation of another (sandbox.py's pool key).

Trust: three uids, none shared between trusted and untrusted code.
- 10000, the agent. The container starts it as root with only CAP_SETUID,
  CAP_SETGID, CAP_KILL and CAP_SETPCAP (the host drops every other one, and
  sets no-new-privileges); it becomes uid/gid 10000 at once, keeping exactly
  those four, and is not dumpable. A candidate can thus neither signal it (nor
  could it: the kernel never delivers a handler-less signal to a PID
  namespace's init from inside), nor prlimit, renice, re-pin or ptrace it, nor
  read its /proc files, nor reach /out (its own, 0700), where the harness's
  result and output files lie: the harness gets them as open descriptors.
- 10001, `run` mode: the harness, the problem's evaluate() and the candidate,
  in /scratch (its HOME, 0700) and /tmp.
- 10002, `score` mode: the trusted score(), in /score (its HOME, 0700).
  It runs only once every process of the run is gone and everything the run
  could write is wiped, so the candidate never shares a moment with it.
Each child drops the capability bounding set and ambient set, its
supplementary groups, sets gid and uid, clears its capabilities and sets
no_new_privs before anything else runs; the rlimits it set stay.

Between launches the agent empties /scratch, /score, /tmp, /out, /dev/shm,
/dev/mqueue and System V IPC (as the uid that owns each, in a short-lived
child: the agent has no right to other uids' files), and compares its own
rlimits, niceness, scheduling, CPU affinity, OOM score, ids and capabilities
with what they were at start: any drift, a process left or a failed wipe makes
the answer not clean (the host then replaces the container), and a launch
refuses to start on a container that is not clean.

A `serve` launch (a GEPA script's worker: evaluators/stateful.py) runs as the `run`
uid and lives until the host ends it (it removes the container) or the worker exits;
meanwhile inside/serve_relay.py relays its frames with the host, and afterwards the
agent answers not clean: such a container never takes another launch.

Its stdin/stdout (the host's channel) are closed in every child. The host
re-checks everything it answers. When the host goes away (its controller
killed outright), stdin reaches EOF: a running evaluation is killed at once, as
at its deadline (which the agent enforces itself, whoever is left), and the
agent exits, which stops the container (and removes it: the host creates it
with auto-remove).

stdlib only, like harness.py, which lies next to it in the image.
"""

from __future__ import annotations

import base64
import ctypes
import fcntl
import json
import mmap
import os
import resource
import select
import shutil
import signal
import sys
import termios
import time
import traceback

AGENT_UID, RUN_UID, SCORE_UID = 10000, 10001, 10002
SCRATCH, TMP, IN = "/scratch", "/tmp", "/in"
OUT = "/out"  # 10000, 0700: the harness's result and output files
SCORE_DIR = "/score"  # 10002, 0700: HOME and cwd of the trusted score process
SHARED = (TMP, "/dev/shm", "/dev/mqueue")  # sticky, writable by every uid
HOMES = {RUN_UID: SCRATCH, SCORE_UID: SCORE_DIR}  # each launch uid's own folder
HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness.py")
STATUS_FD_ENV = "EVOLVE_STATUS_FD"  # harness.py: run mode's "evaluator loaded" line
SEED_FD_ENV = "EVOLVE_DATA_SEED_FD"  # harness.py: the run's data seed, as a descriptor
RESULT_FD, STATUS_FD, REQ_FD, SEED_FD = 3, 4, 5, 6  # in the harness child
SERVE_IN_FD, SERVE_OUT_FD = 7, 8  # serve mode: the worker's channel (inside/serve_relay.py)
SERVE_FDS_ENV = "EVOLVE_SERVE_FDS"  # harness.py's
RESULT_MAX_BYTES = 16 * 2**20  # the host may ask for less
PREAMBLE_MAX_BYTES = 64 * 1024
SETUP_FAILED = 121  # the harness child's exit code when it failed before the harness ran
KILL_WAIT_S = 5.0
WIPE_WAIT_S = 20.0

_PR_SET_DUMPABLE, _PR_SET_KEEPCAPS, _PR_CAPBSET_DROP = 4, 8, 24
_PR_SET_NO_NEW_PRIVS, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 38, 47, 4
_CAP_KILL, _CAP_SETGID, _CAP_SETUID, _CAP_SETPCAP = 5, 6, 7, 8
AGENT_CAPS = (1 << _CAP_KILL) | (1 << _CAP_SETGID) | (1 << _CAP_SETUID) | (1 << _CAP_SETPCAP)
_CAP_V3 = 0x20080522
_IPC_RMID = 0
_CAP_FIELDS = ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs")

_libc = ctypes.CDLL(None, use_errno=True)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    ]


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _prctl(option: int, arg: int = 0, arg3: int = 0) -> None:
    _check(_libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(arg3), 0, 0), f"prctl({option})")


def _capset(caps: int) -> None:
    """Effective = permitted = `caps` (low 32 capabilities), inheritable empty."""
    header = _CapHeader(_CAP_V3, 0)
    data = (_CapData * 2)()
    data[0].effective = data[0].permitted = caps
    _check(_libc.capset(ctypes.byref(header), data), "capset")


def _status_fields() -> dict[str, str]:
    with open("/proc/self/status") as f:
        rows = (line.split(":", 1) for line in f if ":" in line)
        return {k: v.strip() for k, v in rows if k in _CAP_FIELDS}


def _say(obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


# ---- privileges ---------------------------------------------------------------------


def become_agent() -> None:
    """From root with the container's four capabilities to uid 10000 keeping them."""
    if os.getuid() != 0:
        raise RuntimeError(f"the agent must start as root (uid 0), not uid {os.getuid()}")
    _prctl(_PR_SET_KEEPCAPS, 1)
    os.setgroups([])
    os.setresgid(AGENT_UID, AGENT_UID, AGENT_UID)
    os.setresuid(AGENT_UID, AGENT_UID, AGENT_UID)
    _prctl(_PR_SET_KEEPCAPS, 0)  # inherited: a child's setuid must not keep anything
    _capset(AGENT_CAPS)
    _prctl(_PR_SET_DUMPABLE, 0)  # no ptrace, no /proc/1/{mem,fd,environ}


def drop_to(uid: int) -> None:
    """In a child: become `uid` with nothing else, for good (needs CAP_SETPCAP first)."""
    cap = 0
    while _libc.prctl(_PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0) == 0:
        cap += 1  # EINVAL past the kernel's last capability
    _libc.prctl(_PR_CAP_AMBIENT, ctypes.c_ulong(_PR_CAP_AMBIENT_CLEAR_ALL), 0, 0, 0)
    os.setgroups([])
    os.setresgid(uid, uid, uid)
    os.setresuid(uid, uid, uid)
    _capset(0)  # a change between two non-root uids keeps capabilities: clear them
    _prctl(_PR_SET_NO_NEW_PRIVS, 1)
    got = _status_fields()
    zero = all(int(got.get(k, "1"), 16) == 0 for k in _CAP_FIELDS[:5])
    ids = os.getresuid() == os.getresgid() == (uid, uid, uid) and not os.getgroups()
    if not (zero and ids and got.get("NoNewPrivs") == "1"):
        raise RuntimeError(f"could not drop privileges to {uid}: {got}")


def snapshot() -> dict:
    """What a candidate must never be able to change about the agent."""
    state: dict[str, object] = {
        name: list(resource.getrlimit(getattr(resource, name)))
        for name in sorted(dir(resource))
        if name.startswith("RLIMIT_")
    }
    state["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    state["scheduler"] = os.sched_getscheduler(0)
    state["sched_priority"] = os.sched_getparam(0).sched_priority
    state["affinity"] = sorted(os.sched_getaffinity(0))
    with open("/proc/self/oom_score_adj") as f:
        state["oom_score_adj"] = f.read().strip()
    state["ids"] = [list(os.getresuid()), list(os.getresgid()), os.getgroups()]
    state.update(_status_fields())
    return state


_START: dict = {}


def drift() -> str | None:
    """Why the agent is no longer as it started; None when it is."""
    try:
        now = snapshot()
    except Exception as e:
        return f"cannot check the agent's state: {e!r}"
    changed = [f"{k} {_START[k]} -> {now.get(k)}" for k in _START if now.get(k) != _START[k]]
    return "the agent's state changed: " + "; ".join(changed) if changed else None


# ---- processes ----------------------------------------------------------------------


def _others() -> list[tuple[int, bool]]:
    """(pid, zombie) of every process in the container but this one."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or name == "1":
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        found.append((int(name), state in (b"Z", b"X")))
    return found


def _reap() -> list[tuple[int, int]]:
    """Reap every exited child (orphans are re-parented to us, PID 1)."""
    out: list[tuple[int, int]] = []
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return out
        if pid == 0:
            return out
        out.append((pid, status))


def kill_all(skip: int | None = None) -> tuple[int, bool]:
    """SIGKILL everything but us until nothing is left; (processes killed but `skip`, clean)."""
    end = time.monotonic() + KILL_WAIT_S
    # live ones now, and whatever a round of SIGKILL still found (a pid-hopping process can
    # slip between the reads of one /proc scan, never past a kill of every process)
    killed = {pid for pid, zombie in _others() if not zombie and pid != skip}
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # CAP_KILL: every process, never PID 1 (us)
        except ProcessLookupError:
            pass
        _reap()
        left = _others()
        if not left:
            return len(killed), True
        killed.update(pid for pid, _zombie in left if pid != skip)
        if time.monotonic() > end:
            return len(killed), False
        time.sleep(0.002)


# ---- the writable places ------------------------------------------------------------


def _rm_contents(root: str, uid: int | None = None) -> None:
    """Empty a directory (only the entries `uid` owns, if given), whatever the modes inside."""

    def fix(func, path, _exc):
        for p in (os.path.dirname(path), path):
            try:
                os.chmod(p, 0o700)
            except OSError:
                pass
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)

    for entry in os.scandir(root):
        if uid is not None and entry.stat(follow_symlinks=False).st_uid != uid:
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, onerror=fix)
        else:
            os.unlink(entry.path)


def _ipc_objects(kind: str) -> list[dict[str, str]]:
    """The System V IPC objects of one kind in the container's IPC namespace, by column."""
    try:
        with open(f"/proc/sysvipc/{kind}") as f:
            header, *rows = f.read().splitlines()
    except (OSError, ValueError):
        return []
    names = header.split()
    return [dict(zip(names, row.split(), strict=False)) for row in rows]


def _clear_ipc(uid: int) -> None:
    """Remove the System V IPC objects `uid` created or owns."""
    for kind, fn, extra in (("shm", "shmctl", ()), ("msg", "msgctl", ()), ("sem", "semctl", (0,))):
        for obj in _ipc_objects(kind):
            if str(uid) in (obj.get("uid"), obj.get("cuid")):
                ipc_id = int(obj.get("shmid") or obj.get("msqid") or obj.get("semid") or -1)
                getattr(_libc, fn)(ipc_id, *extra, _IPC_RMID, None)


def _ipc_left() -> int:
    return sum(len(_ipc_objects(kind)) for kind in ("shm", "msg", "sem"))


def _wipe_child(uid: int) -> None:
    """In a child: as `uid`, empty its own folder and remove what it left in the shared ones."""
    code = 1
    try:
        null = os.open("/dev/null", os.O_RDWR)
        os.dup2(null, 0)  # not the host's channel (stderr stays: the host logs it)
        os.dup2(null, 1)
        os.closerange(3, 65536)
        drop_to(uid)
        home = HOMES[uid]
        os.chmod(home, 0o700)
        _rm_contents(home)
        for d in SHARED:
            if os.path.isdir(d):
                _rm_contents(d, uid)
        _clear_ipc(uid)
        code = 0 if not os.listdir(home) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def wipe(uids: tuple[int, ...] = (RUN_UID, SCORE_UID)) -> str | None:
    """Empty every writable place (of `uids`: those that ran since the last wipe, which
    is all a process of theirs could have written); None when done, else why not."""
    global _wiped
    _wiped = False
    try:
        _rm_contents(OUT)
        for uid in uids:
            pid = os.fork()
            if pid == 0:
                _wipe_child(uid)
            status = _wait_pid(pid, WIPE_WAIT_S)
            if status != 0:
                return f"cannot wipe the places of uid {uid} (wait status {status})"
        left = [f"{d}/{n}" for d in (OUT, *SHARED) if os.path.isdir(d) for n in os.listdir(d)]
        if left:
            return f"cannot wipe {', '.join(left[:5])}"
        if _ipc_left():
            return "System V IPC objects are left"
    except Exception as e:
        return f"cannot wipe the scratch space: {e!r}"
    _wiped = True
    return None


_wiped = False  # every place is empty, and no process has run since


def _wait_pid(pid: int, timeout_s: float) -> int | None:
    """A short-lived trusted child's wait status; None (and killed) past the timeout."""
    fd = os.pidfd_open(pid)
    try:
        if not select.select([fd], [], [], timeout_s)[0]:
            os.kill(pid, signal.SIGKILL)
        return os.waitpid(pid, 0)[1] if select.select([fd], [], [], timeout_s)[0] else None
    finally:
        os.close(fd)


# ---- one launch ---------------------------------------------------------------------


def tail(fd: int, max_kb: int) -> str:
    """The last max_kb KiB of a captured stream, marked when cut (as evaluators/harness_result.py)."""
    n = max_kb * 1024
    size = os.fstat(fd).st_size
    data = os.pread(fd, n, max(0, size - n))
    text = data.decode("utf-8", "replace")
    return f"[... {size - n} bytes cut ...]\n{text}" if size > n else text


def read_result(fd: int, max_bytes: int) -> tuple[str | None, str | None]:
    """(the result file, base64, or None; a note on why it is unusable). Never reads more
    than max_bytes: the size is checked first."""
    size = os.fstat(fd).st_size
    if size == 0:
        return None, None
    if size > max_bytes:
        return None, f"the result file is too large ({size} bytes; at most {max_bytes})"
    data = bytearray()
    while len(data) < size and (chunk := os.pread(fd, size - len(data), len(data))):
        data += chunk
    return base64.b64encode(data).decode("ascii"), None


def _lay_out(paths: list[str], home: str) -> None:
    """A tree's files, from /in/tree/ into the scratch at their paths (as the run uid, before
    anything of the candidate runs; inside/layout.py never follows a link)."""
    import layout  # evaluators/inside/layout.py, beside this file in the image

    files = {}
    for path in paths:
        with open(os.path.join(IN, "tree", path), "rb") as f:
            files[path] = f.read()
    layout.write_tree(home, files)


def _child(req: dict, fds: dict[int, int]) -> None:
    """In the forked child: confine, redirect, then become the harness. Never returns."""
    code, ready = 70, False
    try:
        mode = req["mode"]
        uid = SCORE_UID if mode == "score" else RUN_UID  # serve: a GEPA worker, the candidate's
        home = HOMES[uid]
        os.setsid()
        high = {target: fcntl.fcntl(fd, fcntl.F_DUPFD, 32) for target, fd in fds.items()}
        for target, fd in high.items():
            os.dup2(fd, target)
        os.closerange(max(high) + 1, 65536)  # nothing of the host's channel survives
        mem = int(req["address_space_bytes"])  # used only where the container has no limit
        cpu = int(-(-float(req["timeout_s"]) // 1)) + 1
        fsize = int(req["max_file_mb"]) * 2**20
        if _memory_cgroup() is None:
            resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        drop_to(uid)
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # its own /proc files, owned by itself
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")  # the harness, never the agent, goes first on OOM
        except OSError:
            pass
        os.chdir(home)
        if req.get("tree"):
            _lay_out(req["tree"], home)
        elif req.get("program"):
            os.symlink(f"{IN}/{req['program']}", f"{home}/{req['program']}")
        os.environ["HOME"] = os.environ["TMPDIR"] = home
        if STATUS_FD in fds:
            os.environ[STATUS_FD_ENV] = str(STATUS_FD)
        if SEED_FD in fds:
            os.environ[SEED_FD_ENV] = str(SEED_FD)
        if SERVE_IN_FD in fds:
            os.environ[SERVE_FDS_ENV] = f"{SERVE_IN_FD},{SERVE_OUT_FD}"
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # A fresh interpreter would draw fresh seeds; `random` reseeds itself after a
        # fork, numpy's global generator (imported by the agent) does not.
        if (np_random := sys.modules.get("numpy.random")) is not None:
            np_random.seed()
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        import harness  # preloaded by the agent: a fresh copy of the module state

        sys.argv = [HARNESS, mode, f"fd:{REQ_FD}", f"fd:{RESULT_FD}"]
        ready = True  # from here on the harness reports its own failures
        code = harness.main(sys.argv)
    except BaseException as e:
        try:
            traceback.print_exc()
        except BaseException:
            pass
        if not ready:  # nothing of the candidate ran: this failure is the sandbox's own
            code = SETUP_FAILED
            try:
                error = {"error": f"the sandbox could not start the harness: {e!r}"}
                failure = {"status": "sandbox_error", "score": None, "artifacts": error}
                os.pwrite(RESULT_FD, json.dumps(failure).encode(), 0)
            except BaseException:
                pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def _host_gone() -> bool:
    """Whether the host's stream (our stdin) reached its end: readable, nothing to read."""
    n = bytearray(4)
    try:
        fcntl.ioctl(0, termios.FIONREAD, n)
    except OSError:
        return True
    return int.from_bytes(n, sys.byteorder) == 0


def _wait(pid: int, timeout_s: float) -> tuple[int | None, bool]:
    """Wait for the harness, reaping orphans meanwhile; (wait status, timed out). A host
    that went away (its controller died) ends the wait as the deadline would."""
    fd = os.pidfd_open(pid)
    end = time.monotonic() + timeout_s
    watch_host = True
    try:
        while True:
            for p, status in _reap():
                if p == pid:
                    return status, False
            left = end - time.monotonic()
            if left <= 0:
                return None, True
            ready, _, _ = select.select([fd] + ([0] if watch_host else []), [], [], min(left, 0.5))
            if 0 in ready:
                if _host_gone():
                    return None, True
                watch_host = False  # the host never writes during a launch; read it later
    finally:
        os.close(fd)


def _open_out(name: str) -> int:
    return os.open(f"{OUT}/{name}", os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)


def read_secret(name: str, size: int) -> int:
    """`size` bytes of the host's stream straight into a memfd (through a mapping of it,
    never a buffer of ours: the agent's memory, which every later harness starts from,
    holds nothing of a request or a data seed)."""
    fd = os.memfd_create(name, os.MFD_CLOEXEC)
    if size:
        os.ftruncate(fd, size)
        with mmap.mmap(fd, size) as mapped:
            got = 0
            while got < size:
                with memoryview(mapped)[got:] as rest:
                    n = os.readv(0, [rest])
                if n == 0:
                    os.close(fd)
                    raise EOFError("the host's stream ended inside a request")
                got += n
    return fd


def read_line(limit: int = 1 << 20) -> bytes:
    """One request line, a byte at a time: no read-ahead ever buffers what follows it."""
    line = bytearray()
    while len(line) < limit:
        byte = os.read(0, 1)
        if not byte:
            break
        line += byte
        if byte == b"\n":
            break
    return bytes(line)


def launch(req: dict, secrets: dict[str, int]) -> dict | None:
    """One harness process; None once a reporter child has answered the host (`report`).
    `secrets` are the request's and the data seed's memfds (closed here, whatever happens)."""
    try:
        return _launch(req, secrets)
    finally:
        for fd in secrets.values():
            os.close(fd)


# The container's own memory cgroup (its limit is the evaluation's, plus the agent's
# share): v2's files, then v1's.
_CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.events"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.oom_control"),
)


def _memory_cgroup() -> str | None:
    """The file that counts the container's OOM kills, where a memory limit is set on
    its cgroup (then no address-space limit is needed); None without one."""
    for limit, events in _CGROUP_FILES:
        try:
            with open(limit) as f:
                value = f.read().strip()
        except OSError:
            continue
        if value.isdigit() and int(value) < 2**60:  # v1 writes "unlimited" as a huge number
            return events
    return None


def _oom_kills() -> int:
    """The `oom_kill N` count of the container's memory cgroup (0 where unreadable)."""
    events = _memory_cgroup()
    try:
        with open(events or "") as f:
            lines = f.read().splitlines()
    except OSError:
        return 0
    for line in lines:
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


def _launch(req: dict, secrets: dict[str, int]) -> dict | None:
    global _wiped
    t0 = time.monotonic()
    why = drift()
    if why is None:  # nothing runs between launches: the last launch's wipe still holds
        leftover, clean = kill_all()
        if leftover or not clean:
            why = f"{leftover} processes were running before the launch"
        elif not _wiped:
            why = wipe()
    if why is not None:  # never run anything in a container in doubt: the host replaces it
        return {"refused": why, "clean": False}
    _wiped = False
    max_result = min(int(req.get("max_result_bytes") or RESULT_MAX_BYTES), RESULT_MAX_BYTES)
    fds = {0: os.open("/dev/null", os.O_RDONLY | os.O_CLOEXEC)}
    fds.update({1: _open_out("stdout"), 2: _open_out("stderr"), RESULT_FD: _open_out("result")})
    if req["mode"] == "run":
        fds[STATUS_FD] = _open_out("status")  # the harness's "evaluator loaded" line
    child_fds = {**fds, REQ_FD: secrets["src"]}
    if "seed" in secrets:
        child_fds[SEED_FD] = secrets["seed"]
    serving = req["mode"] == "serve"
    if serving:  # (worker's read end, ours), (ours, worker's write end)
        up, down = os.pipe(), os.pipe()
        child_fds.update({SERVE_IN_FD: up[0], SERVE_OUT_FD: down[1]})
    try:
        ooms = _oom_kills()
        pid = os.fork()
        if pid == 0:
            _child(req, child_fds)
        if serving:
            import serve_relay  # evaluators/inside/serve_relay.py, beside this file

            os.close(up[0])
            os.close(down[1])
            try:
                status, timed_out = serve_relay.relay(
                    pid, float(req["timeout_s"]), up[1], down[0], _reap
                )
            finally:
                os.close(up[1])
                os.close(down[0])
        else:
            status, timed_out = _wait(pid, float(req["timeout_s"]))
        strays, clean = kill_all(skip=pid)  # at the deadline the harness itself is no stray
        if status is None:  # the deadline: kill_all reaped it
            rc = -signal.SIGKILL
        else:
            rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        uid = SCORE_UID if req["mode"] == "score" else RUN_UID
        why = wipe((uid,)) if clean else "processes survived SIGKILL"  # our descriptors stay
        if serving and why is None:  # its frames passed through our memory: never again
            why = "a container that served a worker takes no other launch"
        preamble = STATUS_FD in fds and os.fstat(fds[STATUS_FD]).st_size > 0
        if rc == SETUP_FAILED and (req["mode"] == "score" or not preamble):
            why = why or "the harness could not be set up"  # not a candidate's exit: it never ran
        why = why or drift()
        meta: dict[str, object] = {"rc": rc, "timed_out": timed_out, "strays": strays}
        meta["oom"] = _oom_kills() > ooms
        meta["clean"] = why is None
        if why:
            meta["error"] = why
        meta["agent_s"] = time.monotonic() - t0
        report(meta, fds, int(req["max_output_kb"]), max_result)
    finally:
        for fd in fds.values():
            os.close(fd)
    return None


def report(meta: dict, fds: dict[int, int], max_kb: int, max_result: int) -> None:
    """Answer the host from a short-lived child: the result file, the output tails and the
    preamble are read there, never here. The agent, whose memory image every later harness
    starts from, so holds nothing of what a launch printed or returned (a held-out score,
    an earlier candidate's output)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            result, note = read_result(fds[RESULT_FD], max_result)
            answer = {**meta, "result_b64": result, "note": note}
            answer["stdout"], answer["stderr"] = tail(fds[1], max_kb), tail(fds[2], max_kb)
            if STATUS_FD in fds:
                preamble = os.pread(fds[STATUS_FD], PREAMBLE_MAX_BYTES + 1, 0)
                if preamble and len(preamble) <= PREAMBLE_MAX_BYTES:
                    answer["preamble"] = preamble.decode("utf-8", "replace")
            data = json.dumps(answer).encode()  # the agent ends the line once we are gone
            code = 2  # from here on a failure may leave half a line: the agent must not answer
            while data:
                data = data[os.write(1, data) :]
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            os._exit(code)
    status = _wait_pid(pid, WIPE_WAIT_S)
    if status == 0:
        os.write(1, b"\n")  # the answer is complete only now that its writer is reaped
    elif status is not None and os.WIFEXITED(status) and os.WEXITSTATUS(status) == 1:
        _say({"error": "the agent could not read what the launch left", "clean": False})
    else:  # half an answer may be out: the host cannot read this channel again
        raise SystemExit("the agent's reporter failed mid-answer")


def setup() -> None:
    """Once, before the first launch: the agent's uid and its folders."""
    become_agent()
    os.chmod(OUT, 0o700)  # the engine copies the image's folder modes over the tmpfs options
    os.chmod(TMP, 0o1777)
    why = wipe()
    if why:
        raise RuntimeError(why)


def main() -> int:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no handler: undeliverable from inside
    try:
        setup()
    except Exception as e:
        _say({"ready": False, "error": f"agent setup failed: {e!r}"})
        return 1
    sys.path.insert(0, HERE)
    import harness  # noqa: F401  (preloaded for the children)

    try:
        import numpy  # noqa: F401  (the evaluators' main dependency, imported once)
    except ImportError:
        pass
    _START.update(snapshot())  # what drift() compares with, from now on
    version = ".".join(map(str, sys.version_info[:3]))
    _say({"ready": True, "python": version, "uid": os.getuid(), "pid": os.getpid()})
    while True:
        line = read_line()
        if not line:
            return 0  # the host went away: stop the container
        answer: dict | None
        try:
            req = json.loads(line)
            if req.get("op") == "launch":
                sizes = req.get("secrets") or {}
                secrets = {name: read_secret(name, int(sizes[name])) for name in sizes}
                answer = launch(req, secrets)  # None: a reporter child answered
            elif req.get("op") == "ping":
                answer = {"pong": True}
            else:
                answer = {"error": f"unknown request {req.get('op')!r}", "clean": False}
        except Exception as e:
            answer = {
                "error": f"agent failed: {e!r}",
                "traceback": traceback.format_exc()[-4000:],
                "clean": False,
            }
        if answer is not None:
            _say(answer)
        del answer, line


if __name__ == "__main__":
    sys.exit(main())
