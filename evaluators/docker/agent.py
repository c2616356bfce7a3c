"""PID 1 of a warm sandbox container: runs one harness process per request from the host.

    python3 -s /opt/evolve/agent.py        # the container's command; talks over stdin/stdout

Why an agent and not `docker exec` per evaluation: an exec costs 70-120 ms of
runc and engine work on its own, more than a whole local evaluation. The agent
starts once per container (and imports numpy once), then for each request it
wipes the writable directories, forks a child that runs evaluators/harness.py
(`run` or `score` mode) with rlimits and the output redirected to files,
enforces the deadline, SIGKILLs every other process in the container, and
answers with one JSON line: exit status, the result file's text, the output
tails, how many strays it killed and whether the container is clean again.

Trust: the agent runs as the same uid as the candidate (the container has no
capabilities), but a candidate can neither signal it (the kernel never
delivers a signal without a handler to a PID namespace's init from inside,
and it installs none) nor ptrace it or open its /proc files (it is not
dumpable), and its stdin/stdout (the host's channel) are closed in every
child. The host re-checks everything it answers, as it does for the local
sandbox. When the host goes away, stdin reaches EOF and the agent exits, which
stops the container (and removes it: the host creates it with auto-remove).

stdlib only, like harness.py, which lies next to it in the image.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import select
import shutil
import signal
import stat
import sys
import time
import traceback

SCRATCH, OUT, IN = "/scratch", "/out", "/in"
WIPED = (SCRATCH, "/tmp", OUT, "/dev/shm", "/dev/mqueue")  # every place a candidate can write
HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "harness.py")
KILL_WAIT_S = 5.0
_PR_SET_DUMPABLE = 4
_IPC_RMID = 0

_libc = ctypes.CDLL(None, use_errno=True)


def _say(obj: dict) -> None:
    data = (json.dumps(obj) + "\n").encode()
    while data:
        data = data[os.write(1, data) :]


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
    first = [pid for pid, zombie in _others() if not zombie and pid != skip]
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # every process we may signal, never PID 1 (us)
        except ProcessLookupError:
            pass
        _reap()
        if not _others():
            return len(first), True
        if time.monotonic() > end:
            return len(first), False
        time.sleep(0.002)


def _rm_contents(root: str) -> None:
    """Empty a directory, whatever the candidate did to the permissions inside."""

    def fix(func, path, _exc):
        parent = os.path.dirname(path)
        for p in (parent, path):
            try:
                os.chmod(p, 0o700)
            except OSError:
                pass
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)

    for entry in os.scandir(root):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, onerror=fix)
        else:
            os.unlink(entry.path)


def _clear_ipc() -> None:
    """Remove System V IPC objects a candidate left in the container's IPC namespace."""
    for kind, fn, extra in (("shm", "shmctl", ()), ("msg", "msgctl", ()), ("sem", "semctl", (0,))):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            ipc_id = int(row.split()[1])
            getattr(_libc, fn)(ipc_id, *extra, _IPC_RMID, None)


def wipe() -> str | None:
    """Empty every writable place; None when done, else why not."""
    try:
        os.chmod(SCRATCH, 0o700)
        for d in WIPED:
            if os.path.isdir(d):
                _rm_contents(d)
        _clear_ipc()
    except Exception as e:
        return f"cannot wipe the scratch space: {e!r}"
    return None


def tail(path: str, max_kb: int) -> str:
    """The last max_kb KiB of a captured stream, marked when cut (as evaluators/local_result.py)."""
    n = max_kb * 1024
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            return ""
        size = f.seek(0, os.SEEK_END)
        f.seek(max(0, size - n))
        data = f.read(n)
    text = data.decode("utf-8", "replace")
    return f"[... {size - n} bytes cut ...]\n{text}" if size > n else text


def read_result(path: str, max_bytes: int) -> tuple[str | None, str | None]:
    """The result file's text without following links or blocking on a FIFO; (text, note)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return None, None
    except OSError as e:
        return None, f"unreadable result file: {e.strerror}"
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > max_bytes:
            return None, "the result file is not a regular file of allowed size"
        return f.read(max_bytes + 1).decode("utf-8", "replace"), None


def _child(req: dict, src: str, dst: str) -> None:
    """In the forked child: confine, redirect, then become the harness. Never returns."""
    code = 70
    try:
        os.setsid()
        os.chdir(SCRATCH)
        null = os.open("/dev/null", os.O_RDONLY)
        out = os.open(f"{OUT}/stdout", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        err = os.open(f"{OUT}/stderr", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((null, 0), (out, 1), (err, 2)):
            os.dup2(fd, target)
        os.closerange(3, 65536)  # nothing of the host's channel survives
        mem = int(req["memory_mb"]) * 2**20
        cpu = int(-(-float(req["timeout_s"]) // 1)) + 1
        fsize = int(req["max_file_mb"]) * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        try:
            with open("/proc/self/oom_score_adj", "w") as f:
                f.write("1000")  # the candidate, never the agent, goes first on OOM
        except OSError:
            pass
        _libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        # A fresh interpreter would draw fresh seeds; `random` reseeds itself after a
        # fork, numpy's global generator (imported by the agent) does not.
        if (np_random := sys.modules.get("numpy.random")) is not None:
            np_random.seed()
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", closefd=False)  # noqa: SIM115
        import harness  # preloaded by the agent: a fresh copy of the module state

        sys.argv = [HARNESS, req["mode"], src, dst]
        code = harness.main(sys.argv)
    except BaseException:
        try:
            traceback.print_exc()
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        os._exit(code)


def _wait(pid: int, timeout_s: float) -> tuple[int | None, bool]:
    """Wait for the harness, reaping orphans meanwhile; (wait status, timed out)."""
    fd = os.pidfd_open(pid)
    end = time.monotonic() + timeout_s
    try:
        while True:
            for p, status in _reap():
                if p == pid:
                    return status, False
            left = end - time.monotonic()
            if left <= 0:
                return None, True
            select.select([fd], [], [], min(left, 0.5))
    finally:
        os.close(fd)


def launch(req: dict) -> dict:
    t0 = time.monotonic()
    leftover, clean = kill_all()
    note = wipe()
    if note or not clean or leftover:
        return {
            "error": note or f"{leftover} processes were running before the launch",
            "clean": False,
        }
    src = f"{IN}/{req['src']}"
    dst = f"{OUT}/RESULT.json"
    if req.get("program"):
        os.symlink(f"{IN}/{req['program']}", f"{SCRATCH}/{req['program']}")
    pid = os.fork()
    if pid == 0:
        _child(req, src, dst)
    status, timed_out = _wait(pid, float(req["timeout_s"]))
    strays, clean = kill_all(skip=pid)  # at the deadline the harness itself is no stray
    if status is None:  # the deadline: kill_all reaped it
        rc = -signal.SIGKILL
    else:
        rc = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
    result, result_note = read_result(dst, int(req["max_file_mb"]) * 2**21)
    kb = int(req["max_output_kb"])
    answer: dict[str, object] = {
        "rc": rc,
        "timed_out": timed_out,
        "strays": strays,
        "result": result,
        "note": result_note,
        "stdout": tail(f"{OUT}/stdout", kb),
        "stderr": tail(f"{OUT}/stderr", kb),
    }
    note = wipe()
    answer["clean"] = clean and note is None
    if note:
        answer["error"] = note
    answer["agent_s"] = time.monotonic() - t0
    return answer


def main() -> int:
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)  # no ptrace, no /proc/1/{mem,fd,environ}
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # no handler: undeliverable from inside
    sys.path.insert(0, HERE)
    import harness  # noqa: F401  (preloaded for the children)

    try:
        import numpy  # noqa: F401  (the evaluators' main dependency, imported once)
    except ImportError:
        pass
    version = ".".join(map(str, sys.version_info[:3]))
    _say({"ready": True, "python": version, "uid": os.getuid(), "pid": os.getpid()})
    stdin = sys.stdin.buffer
    while True:
        line = stdin.readline()
        if not line:
            return 0  # the host went away: stop the container
        try:
            req = json.loads(line)
            if req.get("op") == "launch":
                answer = launch(req)
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
        _say(answer)


if __name__ == "__main__":
    sys.exit(main())
