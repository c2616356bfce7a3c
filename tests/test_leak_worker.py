"""What a candidate can still learn: nothing of its request, nothing of an earlier evaluation.

A hostile candidate (`PROBE`) of a native problem that runs it in the kit's worker walks
every frame it can reach (its own chain, every thread's), every object the garbage
collector tracks and what those refer to (base64 decoded too), /proc/self/{environ,cmdline}
and those of its parent and PID 1, and every byte of its own memory it can read
(/proc/self/maps + /proc/self/mem; under Landlock, where /proc is closed, its heap and the
windows around every object it knows of, read through write(2) to a pipe, which fails on
an unmapped page instead of faulting). It looks for canaries: a value passed only in the
request's `env`, the path of a data file of another split (`hidden`), and what an earlier
evaluation printed or returned. Canaries are `ZQXJ<kind><16 hex>`; the probe searches for
the pattern, so its own source never matches.

Run on the local sandbox (bubblewrap where it exists) and on Docker (where also a train
candidate after a held-out evaluation must get another container, and a candidate running
in the harness itself, unconfined, must not read the agent's /proc files).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)

LIMITS = Limits(timeout_s=120.0, memory_mb=1024, max_procs=32, max_file_mb=16, max_output_kb=16)

PROBE = r'''
import base64, ctypes, gc, os, re, sys

PAT = re.compile(rb"ZQXJ(?:env|hid|out|res)[0-9a-f]{16}")
B64 = re.compile(r"[A-Za-z0-9+/=\s]{24,}")


class _Seen:
    def __init__(self):
        self.found, self.notes, self.bytes = {}, [], 0

    def scan(self, data, where):
        if isinstance(data, str):
            data = data.encode("utf-8", "replace")
        self.bytes += len(data)
        for m in PAT.finditer(data):
            self.found.setdefault(m.group().decode(), where)


def _values(o):
    """The strings and bytes an object holds, one level down."""
    if isinstance(o, (str, bytes, bytearray)):
        yield o
    elif isinstance(o, dict):
        for k, v in list(o.items()):
            yield from (x for x in (k, v) if isinstance(x, (str, bytes, bytearray)))
    elif isinstance(o, (list, tuple, set, frozenset)):
        yield from (x for x in list(o) if isinstance(x, (str, bytes, bytearray)))


def _texts(seen, texts, where):
    batch, size = [], 0
    for t in texts:
        b = t.encode("utf-8", "replace") if isinstance(t, str) else bytes(t)
        batch.append(b)
        size += len(b)
        if isinstance(t, str) and len(t) >= 24 and B64.fullmatch(t):
            try:
                batch.append(base64.b64decode("".join(t.split()), validate=True))
            except ValueError:
                pass
        if size > 1 << 20:
            seen.scan(b"\0".join(batch), where)
            batch, size = [], 0
    seen.scan(b"\0".join(batch), where)


def _frames(seen):
    frames = [sys._getframe()] + list(sys._current_frames().values())
    texts, done = [], set()
    for f in frames:
        while f is not None and id(f) not in done:
            done.add(id(f))
            for scope in (f.f_locals, f.f_globals):
                for v in list(scope.values()):
                    for x in _values(v):
                        texts.append(x)
                    if isinstance(v, (dict, list, tuple)):
                        for w in list(v.values() if isinstance(v, dict) else v)[:1000]:
                            texts.extend(_values(w))
            f = f.f_back
    _texts(seen, texts, "frames")


def _objects(seen):
    def texts():
        for o in gc.get_objects():
            yield from _values(o)
            for r in gc.get_referents(o):
                if isinstance(r, (str, bytes, bytearray)):
                    yield r
    _texts(seen, texts(), "gc")


def _proc(seen):
    for pid in ("self", str(os.getppid()), "1"):
        for name in ("environ", "cmdline"):
            path = f"/proc/{pid}/{name}"
            try:
                with open(path, "rb") as f:
                    seen.scan(f.read(), path)
                seen.notes.append(f"read {path}")
            except OSError as e:
                seen.notes.append(f"{path}: {type(e).__name__}")
    for pid in (str(os.getppid()), "1"):
        try:
            with open(f"/proc/{pid}/mem", "rb") as f:
                f.read(1)
            seen.notes.append(f"read /proc/{pid}/mem")
        except OSError as e:
            seen.notes.append(f"/proc/{pid}/mem: {type(e).__name__}")


def _maps_memory(seen):
    """Every readable mapping, through /proc/self/mem; False where /proc is closed."""
    try:
        with open("/proc/self/maps") as f:
            maps = f.read().splitlines()
        mem = open("/proc/self/mem", "rb", buffering=0)
    except OSError as e:
        seen.notes.append(f"/proc/self/maps or mem: {type(e).__name__}")
        return False
    with mem:
        for line in maps:
            span, perms = line.split()[:2]
            if not perms.startswith("r"):
                continue
            lo, hi = (int(x, 16) for x in span.split("-"))
            _read_span(seen, lo, hi, lambda a, n: os.pread(mem.fileno(), n, a))
    seen.notes.append("scanned /proc/self/mem")
    return True


def _read_span(seen, lo, hi, read):
    tail = b""
    for a in range(lo, hi, 1 << 16):
        try:
            chunk = read(a, min(1 << 16, hi - a))
        except (OSError, OverflowError, ValueError):
            chunk = b""
        if not chunk:
            tail = b""
            continue
        seen.scan(tail + chunk, "memory")
        tail = chunk[-64:]


def _raw_memory(seen):
    """Without /proc: the heap (down from the program break) and the 1 MiB windows around
    every object the collector knows, read by write(2) into a pipe (EFAULT, not a crash)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.write.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_size_t]
    libc.write.restype = ctypes.c_ssize_t
    libc.sbrk.restype = ctypes.c_void_p
    r, w = os.pipe()

    def read(addr, n):
        k = libc.write(w, addr, n)
        out = b""
        while len(out) < max(k, 0):
            out += os.read(r, k - len(out))
        return out

    try:  # the top of the stack: argv and environ as the kernel shows them in /proc
        stack = ctypes.c_void_p.in_dll(libc, "__libc_stack_end").value or 0
    except ValueError:
        stack = 0
    hi = stack & ~4095
    while stack and read(hi, 1):
        hi += 4096
    if stack:
        _read_span(seen, stack & ~4095, hi, read)
        seen.notes.append(f"scanned the stack's top ({(hi - stack) >> 10} KiB)")
    windows = {id(o) >> 20 for o in gc.get_objects()}
    brk = libc.sbrk(0) or 0
    lo = brk
    while lo > (1 << 16) and read(lo - (1 << 16), 1):
        lo -= 1 << 16
    if brk > lo:
        _read_span(seen, lo, brk, read)
    for wdw in sorted(windows):
        _read_span(seen, wdw << 20, (wdw + 1) << 20, read)
    os.close(r)
    os.close(w)
    seen.notes.append(f"scanned the heap ({(brk - lo) >> 20} MiB) and {len(windows)} windows")


def probe():
    seen = _Seen()
    _frames(seen)
    _objects(seen)
    _proc(seen)
    if not _maps_memory(seen):
        _raw_memory(seen)
    return {"found": seen.found, "notes": seen.notes, "bytes": seen.bytes,
            "echo": globals().get("ECHO")}
'''

EVALUATOR = """
import json
from evaluators import kit


def _run(probe, split):
    seen = probe()
    return {"n": 1}, {"seen": json.dumps(seen)}


def evaluate(program_path, split):
    result = kit.evaluate(program_path, split, "probe", _run)
    result.setdefault("score", 1.0)
    return result
"""

# The same probe, imported into the harness's own process (no worker, no Landlock).
IN_HARNESS_EVALUATOR = """
import importlib.util, json


def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"score": 1.0, "artifacts": {"seen": json.dumps(m.probe())}}
"""


def canary(kind: str) -> str:
    return f"ZQXJ{kind}{secrets.token_hex(8)}"


class Problem:
    """A native problem in a folder every uid may read, its data with a held-out file."""

    def __init__(self, root: Path, evaluator: str = EVALUATOR) -> None:
        self.dir = root / "problem"
        self.data = root / "data"
        for d in (self.dir, self.data):
            d.mkdir()
        (self.dir / "problem.toml").write_text(
            '[problem]\nname = "leak"\nentry = "seed.py"\n'
            '[evaluation]\ntimeout_s = 120\nsplits = ["train", "test"]\n'
        )
        (self.dir / "seed.py").write_text(PROBE)
        (self.dir / "evaluator.py").write_text(evaluator)
        (self.data / "train.json").write_text("[1]")
        self.hidden = self.data / f"{canary('hid')}.json"  # another split's file
        self.hidden.write_text("[2]")
        self.env = canary("env")
        for p in (root, self.dir, self.data):
            p.chmod(0o755)

    def request(self, code: str, split: str = "train", hide: bool = True) -> EvalRequest:
        """`hide`: the held-out file is hidden from train (some problems have no such file)."""
        return EvalRequest(
            problem_dir=str(self.dir),
            program_code=code,
            program_name="cand.py",
            split=split,
            limits=LIMITS,
            data_dir=str(self.data),
            hidden=(str(self.hidden),) if split == "train" and hide else (),
            env={"HF_TOKEN": self.env},
        )


def seen(res: EvalResult) -> dict:
    assert res.status == Status.OK, res.artifacts
    return json.loads(res.artifacts["seen"])


def noisy(problem: Problem) -> tuple[str, dict[str, str]]:
    """A candidate that prints one canary and returns another: an earlier evaluation."""
    out, res = canary("out"), canary("res")
    code = PROBE + f"\nECHO = {res!r}\nprint({out!r}, flush=True)\n"
    return code, {"out": out, "res": res}


def assert_blind(info: dict, *secrets_: str) -> None:
    leaked = {k: v for k, v in info["found"].items() if k in secrets_}
    assert not leaked, f"the candidate found {leaked}; notes: {info['notes']}"
    assert info["bytes"] > 1 << 20, info  # it did look


@pytest.fixture
def root() -> Iterator[Path]:
    """A folder outside pytest's 0700 one, so the sandbox's uids may read the problem."""
    d = Path(tempfile.mkdtemp(prefix="evolve-leak-", dir="/var/tmp"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


# ---- local ------------------------------------------------------------------------


def test_local_worker_learns_nothing(root: Path) -> None:
    problem = Problem(root)
    code, earlier = noisy(problem)
    sb = LocalSandbox(max_parallel=1)
    try:
        first = sb.evaluate(problem.request(code, "test"))
        assert earlier["out"] in first.artifacts.get("stdout", ""), first.artifacts
        info = seen(sb.evaluate(problem.request(PROBE)))
    finally:
        sb.close()
    assert_blind(info, problem.env, problem.hidden.name[:-5], *earlier.values())


ZYGOTE = """
import json, sys, tempfile
from evaluators.inside import worker_client, worker_start
worker_start.zygote()
with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
    f.write("def f():\\n    return 1\\n")
fn = worker_client.Remote(f.name, "f", KeyError, confine=False)  # takes the forked worker, waits for it
assert fn() == 1
seen = {n: open(f"/proc/{fn._proc.pid}/{n}", "rb").read().decode("latin-1") for n in ("environ", "cmdline")}
fn.close()
print(json.dumps(seen))
"""


def test_a_forked_workers_environ_and_cmdline_show_nothing_of_the_harness() -> None:
    """What the kernel shows of the worker (/proc/PID/environ, cmdline; a candidate outside
    Landlock, or one that finds its stack, reads them) keeps nothing of its parent's but the
    variables a fresh worker gets, and the local sandbox's token that finds its processes."""
    secret, token = canary("env"), canary("res")
    env = {"PATH": os.environ["PATH"], "HF_TOKEN": secret, "EVOLVE_SANDBOX_TOKEN": token}
    out = subprocess.run(
        [sys.executable, "-c", ZYGOTE, secret], env=env, capture_output=True, text=True, check=True
    )
    seen = json.loads(out.stdout)
    assert secret not in seen["environ"] and secret not in seen["cmdline"], seen
    assert seen["cmdline"].rstrip("\0") == "evolve-worker"
    assert f"EVOLVE_SANDBOX_TOKEN={token}" in seen["environ"].split("\0")


# ---- docker -----------------------------------------------------------------------


@pytest.fixture
def docker_sb(docker_image):  # noqa: F811
    from evaluators.docker.sandbox import DockerSandbox

    sb = DockerSandbox(max_parallel=1, run_id=f"test-leak-{os.getpid()}", image=docker_image)
    yield sb
    sb.close()


def test_docker_worker_learns_nothing_of_the_last_evaluation(root: Path, docker_sb) -> None:
    """Train after train, in the same warm container: the agent keeps nothing of the first."""
    problem = Problem(root)
    code, earlier = noisy(problem)
    first = docker_sb.evaluate(problem.request(code))
    assert earlier["out"] in first.artifacts.get("stdout", ""), first.artifacts
    assert earlier["res"] in first.artifacts["seen"]
    box = docker_sb.containers()
    info = seen(docker_sb.evaluate(problem.request(PROBE)))
    assert docker_sb.containers() == box  # the same container, warm
    assert_blind(info, problem.env, problem.hidden.name[:-5], *earlier.values())


def test_docker_held_out_never_shares_a_container(root: Path, docker_sb) -> None:
    """As for eplb or txn_scheduling, whose splits hide no file from each other: the same
    request but for its split, and still another container."""
    problem = Problem(root)
    code, earlier = noisy(problem)
    assert docker_sb.evaluate(problem.request(code, "test", hide=False)).status == Status.OK
    held_out = docker_sb.containers()
    info = seen(docker_sb.evaluate(problem.request(PROBE, hide=False)))
    assert_blind(info, problem.env, *earlier.values())
    assert held_out and not set(docker_sb.containers()) & set(held_out)


def test_docker_harness_cannot_read_the_agent(root: Path, docker_sb) -> None:
    """A candidate in the harness's own process (no worker, no Landlock): the agent's memory
    image holds no earlier answer, and its /proc files are closed (another uid, not dumpable)."""
    problem = Problem(root, IN_HARNESS_EVALUATOR)
    code, earlier = noisy(problem)
    assert docker_sb.evaluate(problem.request(code)).status == Status.OK
    info = seen(docker_sb.evaluate(problem.request(PROBE)))
    assert_blind(info, *earlier.values())
    assert "scanned /proc/self/mem" in info["notes"], info["notes"]
    for name in ("environ", "mem"):
        assert f"/proc/1/{name}: PermissionError" in info["notes"], info["notes"]
