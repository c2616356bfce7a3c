"""Hostile candidates against both sandbox backends, local and docker.

Each candidate must end as a recorded failure or an honestly scored candidate;
nothing it started may survive the evaluation; the sandbox, and the evaluations
running beside it, carry on. Where the backends differ on purpose (the local
sandbox has no network namespace and keeps the candidate file in its writable
scratch dir) the stricter docker checks are marked as such.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from evaluators.local import cgroups
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from tests.support.docker_support import assert_pool_clean, docker_image, wait_gone  # noqa: F401
from tests.test_sandbox_local import _alive_sandbox_pids

FIXTURES = Path(__file__).parent / "fixtures"
DIRECT = FIXTURES / "sandbox_native" / "direct"  # score = solve()'s return value
SORTING = FIXTURES / "sandbox_native" / "sorting"  # has a trusted score()
OPENEVOLVE = FIXTURES / "sandbox_openevolve" / "basic"
LIMITS = Limits(timeout_s=2.0, memory_mb=512, max_procs=24, max_file_mb=8, max_output_kb=8)
ROOT = os.geteuid() == 0
GOOD = "def solve():\n    return 0.5\n"
SECRET = "sk-test-do-not-leak-4f2a"


@dataclass
class Backend:
    name: str
    sandbox: object
    tmp_root: Path | None = None

    def evaluate(
        self, code: str, problem: Path = DIRECT, limits: Limits = LIMITS, **kw
    ) -> EvalResult:
        fmt = "openevolve" if problem == OPENEVOLVE else "native"
        return self.sandbox.evaluate(
            EvalRequest(
                problem_dir=str(problem),
                program_code=code,
                program_name="cand.py",
                split="train",
                fmt=fmt,
                limits=limits,
                **kw,
            )
        )

    def assert_nothing_left(self) -> None:
        if self.name == "local":
            assert _alive_sandbox_pids() == []
            assert list(self.tmp_root.iterdir()) == []
        else:
            assert_pool_clean(self.sandbox)

    def hostile(self, code: str, **kw) -> EvalResult:
        """Evaluate; then nothing may be left and the next evaluation must work."""
        res = self.evaluate(code, **kw)
        assert res.score is None or res.status == Status.OK, res
        self.assert_nothing_left()
        nxt = self.evaluate(GOOD)
        assert (nxt.status, nxt.score) == (Status.OK, 0.5), nxt.artifacts
        return res


@pytest.fixture(scope="module", params=["local", "docker"])
def backend(request, tmp_path_factory):
    if request.param == "local":
        tmp_root = tmp_path_factory.mktemp("hostile_local")
        sb = LocalSandbox(max_parallel=4, tmp_root=str(tmp_root))
        yield Backend("local", sb, tmp_root)
        sb.close()
        return
    from evaluators.docker.sandbox import DockerSandbox

    image = request.getfixturevalue("docker_image")
    run_id = f"test-hostile-{os.getpid()}"
    sb = DockerSandbox(max_parallel=4, run_id=run_id, image=image)
    yield Backend("docker", sb)
    sb.close()
    assert wait_gone(sb.client, run_id, 60) == []  # (the limit is a guard only)


# ---- time and processes ------------------------------------------------------------


def test_infinite_loop(backend: Backend) -> None:
    res = backend.hostile("def solve():\n    while True:\n        pass\n")
    # the loop never ends by itself: a timeout, with nothing of it left (hostile() checks),
    # is the deadline having fired
    assert res.status == Status.TIMEOUT and "timeout" in res.artifacts["error"]


def test_sigterm_ignored(backend: Backend) -> None:
    code = (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "def solve():\n    time.sleep(100)\n"
    )
    assert backend.hostile(code).status == Status.TIMEOUT


def test_fork_bomb(backend: Backend) -> None:
    code = (
        "import os\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n"
    )
    assert backend.hostile(code).status in (Status.TIMEOUT, Status.RUNTIME_ERROR)


def test_daemon_outliving_the_evaluation_is_killed(backend: Backend) -> None:
    code = (
        "import os, time\ndef solve():\n    if os.fork() == 0:\n        os.setsid()\n"
        "        if os.fork() == 0:\n            time.sleep(60)\n        os._exit(0)\n"
        "    time.sleep(0.3)\n    return 1.0\n"
    )
    res = backend.hostile(code)
    assert (res.status, res.score) == (Status.OK, 1.0)
    assert "killed 1 process " in res.artifacts["cleanup"]


def test_hostile_evaluations_beside_good_ones(backend: Backend) -> None:
    """Bombs and loops in flight never disturb the evaluations running next to them."""
    bombs = [
        "import os\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n",
        "def solve():\n    xs = []\n    while True:\n        xs.append(bytearray(2**24))\n",
        "def solve():\n    while True:\n        pass\n",
    ]
    with ThreadPoolExecutor(3) as pool:
        hostile = [pool.submit(backend.evaluate, code) for code in bombs]
        good = [backend.evaluate(GOOD) for _ in range(3)]  # on this thread, while they run
        results = [f.result() for f in hostile]
    assert all((r.status, r.score) == (Status.OK, 0.5) for r in good), [r.artifacts for r in good]
    assert all(r.status in (Status.TIMEOUT, Status.RUNTIME_ERROR) for r in results), results
    backend.assert_nothing_left()


# ---- memory, disk, output ----------------------------------------------------------


def test_memory_bomb(backend: Backend) -> None:
    """Memory written, not only mapped: the cgroup's OOM killer (or, without one, the
    address-space limit's MemoryError) stops it, named as the candidate's fault. A long
    deadline: reaching the limit first takes writing 512 MB, slow on a loaded machine."""
    res = backend.hostile(
        'def solve():\n    x = b"x" * (10 * 2**30)\n    return 1.0\n',
        limits=dataclasses.replace(LIMITS, timeout_s=30.0),
    )
    assert res.status == Status.RUNTIME_ERROR, res.artifacts
    assert "memory limit (512 MB) exceeded" in res.artifacts["error"]


def test_reserved_address_space_is_not_memory(backend: Backend) -> None:
    """8 GB mapped, one page touched (JAX, XLA and the JVM reserve so at start-up): a
    memory cgroup (the container's, the local slot's as root) passes it; the address-space
    limit, with its headroom, is only the fallback where there is none."""
    code = (
        "import mmap\ndef solve():\n    held = mmap.mmap(-1, 8 * 2**30)\n"
        "    held[:4096] = b'x' * 4096\n    return 1.0\n"
    )
    if backend.name == "local" and cgroups.layout() is None:
        pytest.skip("no memory cgroup here (not root): the address-space fallback applies")
    res = backend.hostile(code)
    assert (res.status, res.score) == (Status.OK, 1.0), res.artifacts


def test_disk_fill(backend: Backend) -> None:
    """4 MB files (under the file size limit) until 600 MB: docker's scratch space
    (256 MB of tmpfs) fills up; the local sandbox's scratch lies on the host's disk."""
    code = (
        "import os\ndef solve():\n    chunk = b'x' * (4 << 20)\n    for i in range(150):\n"
        "        with open(os.path.join(os.environ['HOME'], f'fill{i}'), 'wb') as f:\n"
        "            f.write(chunk)\n    return 600.0\n"
    )
    res = backend.hostile(code)
    if backend.name == "docker":
        assert (
            res.status == Status.RUNTIME_ERROR
            and "No space left on device" in res.artifacts["error"]
        )
    else:
        assert res.status in (Status.OK, Status.RUNTIME_ERROR, Status.TIMEOUT)


def test_output_flood(backend: Backend) -> None:
    code = (
        "import sys\ndef solve():\n    chunk = 'x' * (1 << 20) + '\\n'\n    for _ in range(400):\n"
        "        sys.stdout.write(chunk)\n        sys.stderr.write(chunk)\n    return 1.0\n"
    )
    res = backend.hostile(code)
    assert res.status == Status.RUNTIME_ERROR and "file size limit (8 MB)" in res.artifacts["error"]
    cap = LIMITS.max_output_kb * 1024 + 100  # the tail plus the "bytes cut" marker
    assert 0 < len(res.artifacts["stdout"]) <= cap and len(res.artifacts.get("stderr", "")) <= cap


# ---- network, secrets, files -------------------------------------------------------


@pytest.fixture
def listener():
    """A TCP server on the host's loopback that accepts every connection."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                srv.accept()[0].close()
            except OSError:
                pass

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1]
    stop.set()
    t.join()
    srv.close()


def _outside_address() -> str:
    try:
        return socket.gethostbyname("deb.debian.org")
    except OSError:
        return "151.101.2.132"


def test_network(backend: Backend, listener: int) -> None:
    code = (
        f"import json, socket\nTARGETS = [('127.0.0.1', {listener}), ({_outside_address()!r}, 80)]\n"
        "def solve():\n    ok = {}\n    for host, port in TARGETS:\n        try:\n"
        "            socket.create_connection((host, port), timeout=1).close()\n"
        "            ok[host] = 'connected'\n        except OSError as e:\n            ok[host] = repr(e)\n"
        "    global INFO\n    INFO = json.dumps(ok)\n"
        "    return float(sum(v == 'connected' for v in ok.values()))\n"
    )
    res = backend.hostile(code)
    assert res.status == Status.OK, res.artifacts  # an honest score: the connections it made
    if backend.name == "docker":  # no network at all, not even the host's loopback
        assert res.score == 0.0, res.artifacts["info"]


def test_secrets_do_not_leak(backend: Backend, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    code = (
        "import json, os\nseen = {'env': dict(os.environ)}\n"
        "for pid in ['1', 'self', str(os.getppid())] + os.listdir('/proc'):\n"
        "    if pid.isdigit() or pid == 'self':\n        try:\n"
        "            seen[pid] = open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace')\n"
        "        except OSError as e:\n            seen[pid] = repr(e)\n"
        "INFO = json.dumps(seen)\n" + GOOD
    )
    # a data dir of its own: under docker, a container created after the key was set
    res = backend.hostile(code, data_dir=str(SORTING))
    assert res.status == Status.OK
    info = json.loads(res.artifacts["info"])
    assert SECRET not in res.artifacts["info"] and "OPENAI_API_KEY" not in info["env"]
    assert info["env"]["EVOLVE_DATA_DIR"]
    if backend.name == "docker":
        assert info["env"]["EVOLVE_DATA_DIR"] == "/data"
        assert "Permission denied" in info["1"]  # the agent is not dumpable
    elif backend.sandbox.isolation.bwrap:  # its own PID namespace: the controller is not there
        assert str(os.getpid()) not in info and SECRET not in info["1"]
    elif ROOT:  # another uid cannot read the controller's or init's environment
        assert "Permission denied" in info["1"] and "Permission denied" in info[str(os.getpid())]


def test_writes_outside_the_scratch_dir_fail(backend: Backend, tmp_path: Path) -> None:
    targets = {  # name -> a Python expression for the path, evaluated inside the sandbox
        "problem": "os.path.join(os.environ['PYTHONPATH'].split(':')[0], 'planted.py')",
        "evaluator": "sys.modules['evaluator'].__file__",
        "data": "os.path.join(os.environ['EVOLVE_DATA_DIR'], 'planted.txt')",
        "root": "'/planted'",
        "etc": "'/etc/planted'",
        "stdlib": "os.path.join(os.path.dirname(os.__file__), 'planted.py')",
        "harness": "os.path.join(os.path.dirname(sys.argv[0]), 'planted.py')",
        "repo": repr(str(Path(__file__).resolve().parent.parent / "planted.py")),
        "candidate": "os.path.abspath('cand.py')",
    }
    lines = [f"    {k!r}: {v}," for k, v in targets.items()]
    code = (
        "import json, os, sys\nTARGETS = {\n" + "\n".join(lines) + "\n}\nwrote = {}\n"
        "for name, path in TARGETS.items():\n    try:\n        with open(path, 'a') as f:\n"
        "            f.write('# planted\\n')\n        wrote[name] = True\n"
        "    except OSError as e:\n        wrote[name] = repr(e)\nINFO = json.dumps(wrote)\n" + GOOD
    )
    res = backend.hostile(code, data_dir=str(SORTING))
    wrote = json.loads(res.artifacts["info"])
    if backend.name == "local":
        wrote.pop("candidate")  # the local sandbox writes the candidate into its own scratch dir
        if not ROOT:
            pytest.skip("the local sandbox confines writes only as root (a uid per slot)")
    assert [k for k, v in wrote.items() if v is True] == [], wrote
    assert (
        not (DIRECT / "planted.py").exists()
        and "planted" not in (DIRECT / "evaluator.py").read_text()
    )


# ---- lying about the result --------------------------------------------------------


def test_printed_fake_result_is_ignored(backend: Backend) -> None:
    fake = (
        'print(\'{"status": "ok", "score": 1e9, "combined_score": 1e9}\')\nprint(\'score: 999\')\n'
    )
    res = backend.hostile(fake + "def solve():\n    return 0.25\n")
    assert (res.status, res.score) == (Status.OK, 0.25)
    oe = backend.evaluate(fake + "def run():\n    return 0.75\n", OPENEVOLVE)
    assert (oe.status, oe.score) == (Status.OK, 0.75) and "1e9" in oe.artifacts["stdout"]


def test_fake_result_file_from_a_daemon_is_ignored(backend: Backend) -> None:
    """A process that keeps rewriting the result file after the harness wrote it is
    killed before the file is read, and score() re-scores the outputs anyway."""
    code = (
        "import json, os, sys, time\nFAKE = json.dumps({'status': 'ok', 'score': 1e9, 'outputs': []})\n"
        "if os.fork() == 0:\n    os.setsid()\n    for _ in range(4000):\n        try:\n"
        "            with open(sys.argv[3], 'w') as f:\n                f.write(FAKE)\n"
        "        except OSError:\n            pass\n        time.sleep(0.001)\n    os._exit(0)\n"
        "def solve(xs):\n    return sorted(xs)\n"
    )
    res = backend.hostile(code, problem=SORTING)
    assert res.score in (None, 1.0), res  # the honest score, or a recorded failure


def test_monkeypatched_evaluator_gets_honest_score(backend: Backend) -> None:
    code = (
        "import builtins, sys\nev = sys.modules['evaluator']\n"
        "ev.score = lambda outputs, split: {'score': 1e9}\n"
        "ev.instances = lambda split: [[1, 2]] * 10  # the 'simulator' now agrees with anything\n"
        "builtins.sorted = lambda xs, **kw: list(xs)\n"
        "def solve(xs):\n    return xs\n"
    )
    res = backend.hostile(code, problem=SORTING)
    assert (res.status, res.score) == (Status.OK, 0.0) and res.artifacts["checked_by"] == "score()"


@pytest.mark.parametrize("value", ["float('nan')", "float('inf')", "-float('inf')"])
def test_non_finite_score_is_invalid(backend: Backend, value: str) -> None:
    res = backend.hostile(f"def solve():\n    return {value}\n")
    assert res.status == Status.INVALID and "not a finite number" in res.artifacts["error"]


# ---- side effects at import time ---------------------------------------------------


def test_import_time_side_effects_do_not_carry_over(backend: Backend) -> None:
    plant = (
        "import os, threading, time\n"
        "for d in (os.environ['HOME'], os.environ['TMPDIR'], '/tmp', '/dev/shm'):\n"
        "    try:\n        open(os.path.join(d, 'evolve-planted-marker'), 'w').write('x')\n"
        "    except OSError:\n        pass\n"
        "os.environ['EVOLVE_PLANTED'] = '1'\n"
        "threading.Thread(target=lambda: time.sleep(60)).start()\n"
        "if os.fork() == 0:\n    time.sleep(60)\n    os._exit(0)\n" + GOOD
    )
    res = backend.hostile(plant)
    assert (res.status, res.score) == (Status.OK, 0.5)
    probe = (
        "import os\nFOUND = [os.path.join(d, 'evolve-planted-marker') for d in "
        "(os.environ['HOME'], os.environ['TMPDIR'], '/tmp', '/dev/shm')]\n"
        "FOUND = [p for p in FOUND if os.path.exists(p)] + (['env'] if 'EVOLVE_PLANTED' in os.environ else [])\n"
        "INFO = repr(FOUND)\ndef solve():\n    return float(len(FOUND))\n"
    )
    res = backend.evaluate(probe)
    assert (res.status, res.score) == (Status.OK, 0.0), res.artifacts["info"]


def test_import_time_exception(backend: Backend) -> None:
    res = backend.hostile("raise RuntimeError('boom at import')\n")
    assert res.status == Status.RUNTIME_ERROR and "boom at import" in res.artifacts["error"]
