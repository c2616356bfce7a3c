"""LocalSandbox against real subprocesses: happy paths for both formats and a hostile suite.

Every hostile candidate must end as a recorded failure (or an honest score),
leave no process behind, and not break the next evaluation in the same sandbox.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evaluators.local import cgroups, exec_chain
from evaluators.local.process_tree import TOKEN_VAR
from evaluators.local.sandbox import LocalSandbox
from evaluators.local.uids import UID_BASE, UID_SLOTS
from evaluators.sandbox import AS_HEADROOM_MB, EvalRequest, EvalResult, Limits, Status

FIXTURES = Path(__file__).parent / "fixtures"
DIRECT = FIXTURES / "sandbox_native" / "direct"  # score = solve()'s return value
SORTING = FIXTURES / "sandbox_native" / "sorting"  # has a trusted score()
OPENEVOLVE = FIXTURES / "sandbox_openevolve" / "basic"
LIMITS = Limits(timeout_s=2.0, memory_mb=512, max_procs=24, max_file_mb=8, max_output_kb=8)
ROOT = os.geteuid() == 0
GOOD = "def solve():\n    return 0.5\n"


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sandbox_tmp")


@pytest.fixture(scope="module")
def sandbox(tmp_root: Path):
    sb = LocalSandbox(max_parallel=4, tmp_root=str(tmp_root))
    yield sb
    sb.close()


def request(code: str, problem: Path = DIRECT, limits: Limits = LIMITS, **kw) -> EvalRequest:
    fmt = "openevolve" if problem == OPENEVOLVE else "native"
    return EvalRequest(
        problem_dir=str(problem),
        program_code=code,
        program_name="cand.py",
        split="train",
        fmt=fmt,
        limits=limits,
        **kw,
    )


def _procs() -> dict[int, tuple[int, str, int, bytes]]:
    """pid -> (ppid, state, real uid, environ) of every process we can read."""
    out = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            env = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        field = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        out[int(pid)] = (
            int(field["PPid"]),
            field["State"].split()[0],
            int(field["Uid"].split()[0]),
            env,
        )
    return out


def _descendants(procs: dict[int, tuple[int, str, int, bytes]]) -> set[int]:
    mine = {os.getpid()}
    for _ in range(64):  # transitive closure of the parent links
        mine |= {pid for pid, p in procs.items() if p[0] in mine}
    return mine


def _live_tokens() -> set[bytes]:
    """The sandbox tokens of our live processes: one per evaluation in flight (other
    sessions on this machine may be running sandboxes of their own)."""
    procs, key = _procs(), f"{TOKEN_VAR}=".encode()
    mine = _descendants(procs)
    return {
        var
        for pid, (_, state, _, env) in procs.items()
        if state != "Z" and pid in mine
        for var in env.split(b"\0")
        if var.startswith(key)
    }


def _alive_sandbox_pids() -> list[int]:
    """Live processes of our evaluations: by slot uid or sandbox token. As root the
    sandbox adopts orphans (subreaper), so only our descendants count: other
    sessions on this machine may be running sandboxes of their own."""
    procs, found = _procs(), []
    mine = _descendants(procs)
    for pid, (_, state, uid, env) in procs.items():
        if state == "Z" or (ROOT and pid not in mine):
            continue
        if UID_BASE <= uid < UID_BASE + 2 * UID_SLOTS or f"{TOKEN_VAR}=".encode() in env:
            found.append(pid)
    return found


def assert_recovered(sandbox: LocalSandbox, tmp_root: Path) -> None:
    """Nothing of the last evaluation survives, and the next one works."""
    assert _alive_sandbox_pids() == []
    assert list(tmp_root.iterdir()) == []
    res = sandbox.evaluate(request(GOOD))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts


def hostile(sandbox: LocalSandbox, tmp_root: Path, code: str, **kw) -> EvalResult:
    res = sandbox.evaluate(request(code, **kw))
    assert res.score is None or res.status == Status.OK
    assert_recovered(sandbox, tmp_root)
    return res


# ---- happy paths ----------------------------------------------------------------


def test_native_direct_ok(sandbox: LocalSandbox) -> None:
    res = sandbox.evaluate(request(GOOD))
    assert (res.status, res.score, res.metrics) == (Status.OK, 0.5, {"value": 0.5})
    assert res.artifacts["split"] == "train" and res.eval_s > 0


def test_native_score_fn_merges_artifacts(sandbox: LocalSandbox) -> None:
    res = sandbox.evaluate(request("def solve(xs):\n    return sorted(xs)\n", SORTING))
    assert (res.status, res.score, res.metrics) == (Status.OK, 1.0, {"correct": 10.0})
    assert res.artifacts["note"] == "in-sandbox" and res.artifacts["checked_by"] == "score()"


def test_native_invalid_uses_evaluator_error(sandbox: LocalSandbox) -> None:
    code = "VALID = False\nERROR = 'wrong shape'\n" + GOOD
    res = sandbox.evaluate(request(code))
    assert (res.status, res.score, res.artifacts["error"]) == (Status.INVALID, None, "wrong shape")


@pytest.mark.parametrize(
    "stage,score,metric",
    [
        (None, 0.75, {"combined_score": 0.75, "scaled": 1.5}),
        ("evaluate_stage1", 0.375, {"combined_score": 0.375, "stage": 1.0}),
        ("evaluate_stage2", 1.75, {"a": 0.75, "b": 2.75}),  # mean of the numeric metrics
        (
            "evaluate_stage3",
            1.5,
            {"combined_score": 1.5},
        ),  # candidate in the evaluator's subprocess
    ],
)
def test_openevolve_stages(
    sandbox: LocalSandbox, stage: str | None, score: float, metric: dict
) -> None:
    res = sandbox.evaluate(request("def run():\n    return 0.75\n", OPENEVOLVE, stage=stage))
    assert (res.status, res.score, res.metrics) == (Status.OK, score, metric), res.artifacts
    assert "label" not in res.metrics  # non-numeric metrics become artifacts
    if stage == "evaluate_stage1":
        assert res.artifacts["stage_note"] == "cheap screen"


def test_openevolve_error_metric_never_scores(sandbox: LocalSandbox) -> None:
    res = sandbox.evaluate(request("def run():\n    raise ValueError('bad input')\n", OPENEVOLVE))
    assert (res.status, res.score, res.artifacts["error"]) == (
        Status.RUNTIME_ERROR,
        None,
        "bad input",
    )


def test_concurrent_evaluations(sandbox: LocalSandbox, tmp_root: Path) -> None:
    """Four evaluations are in flight at once: each candidate waits for a `go` file that
    the test writes only once it has seen all four running (run one after another, the
    first would wait until its deadline)."""
    gate = Path(tempfile.mkdtemp(prefix="sandbox-gate-"))  # readable by every slot uid
    gate.chmod(0o755)
    code = (
        "import os, time\nGO = os.path.join(os.environ['EVOLVE_DATA_DIR'], 'go')\n"
        "def solve():\n    while not os.path.exists(GO):\n        time.sleep(0.02)\n"
        "    return float(os.getuid())\n"
    )
    req = request(
        code, limits=Limits(timeout_s=300, memory_mb=512, max_procs=24), data_dir=str(gate)
    )
    most = 0
    try:
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(sandbox.evaluate, req) for _ in range(4)]
            end = time.monotonic() + 240  # a guard only: the candidates wait for the file
            while most < 4 and time.monotonic() < end and not any(f.done() for f in futures):
                most = max(most, len(_live_tokens()))
                time.sleep(0.02)
            (gate / "go").touch()
            results = [f.result() for f in futures]
    finally:
        shutil.rmtree(gate)
    assert most == 4, f"at most {most} evaluations ran at once"
    assert all(r.status == Status.OK for r in results), [r.artifacts for r in results]
    if ROOT:  # each parallel evaluation has its own uid, so its own NPROC budget
        assert len({r.score for r in results}) == 4
    assert_recovered(sandbox, tmp_root)


# ---- hostile candidates ---------------------------------------------------------


def test_infinite_loop_times_out(sandbox: LocalSandbox, tmp_root: Path) -> None:
    res = hostile(sandbox, tmp_root, "def solve():\n    while True:\n        pass\n")
    # the loop never ends by itself: the wall-clock deadline fired, and hostile() checked
    # that nothing of it is left
    assert res.status == Status.TIMEOUT and "wall-clock timeout of 2 s" in res.artifacts["error"]


def test_sigterm_ignored_still_killed(sandbox: LocalSandbox, tmp_root: Path) -> None:
    code = (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "def solve():\n    time.sleep(100)\n"
    )
    assert hostile(sandbox, tmp_root, code).status == Status.TIMEOUT


def test_fork_bomb(sandbox: LocalSandbox, tmp_root: Path) -> None:
    code = (
        "import os\ndef solve():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n"
    )
    assert hostile(sandbox, tmp_root, code).status == Status.TIMEOUT


def test_fork_limit_enforced(sandbox: LocalSandbox, tmp_root: Path) -> None:
    code = (
        "import os, time\ndef solve():\n    n = 0\n    try:\n        while n < 500:\n"
        "            if os.fork() == 0:\n                time.sleep(60)\n                os._exit(0)\n"
        "            n += 1\n    except OSError:\n        pass\n    return float(n)\n"
    )
    res = hostile(sandbox, tmp_root, code)
    assert res.status == Status.OK and res.score < LIMITS.max_procs  # stopped by RLIMIT_NPROC
    assert "killed" in res.artifacts["cleanup"]  # the sleeping children did not survive


def test_memory_bomb(sandbox: LocalSandbox, tmp_root: Path) -> None:
    """Written memory: the cgroup's OOM killer as root, else RLIMIT_AS's MemoryError; a long
    deadline, since writing 512 MB is slow on a loaded machine."""
    code = 'def solve():\n    x = b"x" * (10 * 2**30)\n    return 1.0\n'
    res = hostile(sandbox, tmp_root, code, limits=dataclasses.replace(LIMITS, timeout_s=30.0))
    assert res.status == Status.RUNTIME_ERROR, res.artifacts
    assert "memory limit (512 MB) exceeded" in res.artifacts["error"]


RESERVE = (
    "import mmap\n"
    "def solve():\n"
    "    # what JAX, XLA or the JVM do at start-up: map far more than they touch\n"
    "    held = mmap.mmap(-1, 8 * 2**30)\n"
    "    held[:4096] = b'x' * 4096\n"
    "    return 0.5\n"
)


def test_reserved_address_space_is_not_memory(sandbox: LocalSandbox, tmp_root: Path) -> None:
    """A memory cgroup counts what is used, so 8 GB mapped but untouched passes a 512 MB
    limit; the address-space limit is only the fallback where no cgroup exists."""
    if cgroups.layout() is None:
        pytest.skip("no memory cgroup here (not root): the address-space fallback applies")
    res = hostile(sandbox, tmp_root, RESERVE)
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts


def test_address_space_fallback_has_headroom() -> None:
    """Without a cgroup the limit is RLIMIT_AS with documented headroom: twice the
    memory limit plus AS_HEADROOM_MB."""
    assert LIMITS.address_space_bytes() == (2 * 512 + AS_HEADROOM_MB) * 2**20
    argv = exec_chain.rlimits(LIMITS, 10, cgroup=False)
    assert any(a.startswith("--as=") for a in argv)
    assert not any(a.startswith("--as=") for a in exec_chain.rlimits(LIMITS, 10, cgroup=True))


def test_oom_kill_counts_are_read_from_either_cgroup_version() -> None:
    v2 = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n"
    v1 = "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n"
    assert cgroups.read_oom_kill(v2) == 2 and cgroups.read_oom_kill(v1) == 1
    assert cgroups.read_oom_kill("oom 5\n") == 0


def test_output_flood_is_capped(sandbox: LocalSandbox, tmp_root: Path) -> None:
    code = (
        "import sys\ndef solve():\n    chunk = 'x' * (1 << 20) + '\\n'\n    for _ in range(400):\n"
        "        sys.stdout.write(chunk)\n        sys.stderr.write(chunk)\n    return 1.0\n"
    )
    res = hostile(sandbox, tmp_root, code)
    assert res.status == Status.RUNTIME_ERROR and "file size limit (8 MB)" in res.artifacts["error"]
    cap = LIMITS.max_output_kb * 1024 + 100  # the tail plus the "bytes cut" marker
    assert 0 < len(res.artifacts["stdout"]) <= cap and len(res.artifacts.get("stderr", "")) <= cap


def test_printed_fake_score_is_ignored(sandbox: LocalSandbox, tmp_root: Path) -> None:
    fake = "print('{\"combined_score\": 1e9}')\nprint('score: 999')\n"
    res = hostile(sandbox, tmp_root, fake + "def solve():\n    return 0.25\n")
    assert (res.status, res.score) == (Status.OK, 0.25)
    oe = sandbox.evaluate(request(fake + "def run():\n    return 0.75\n", OPENEVOLVE))
    assert (oe.status, oe.score) == (Status.OK, 0.75) and "1e9" in oe.artifacts["stdout"]


def test_secrets_do_not_leak(sandbox: LocalSandbox, tmp_root: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-do-not-leak")
    code = (
        "import json, os\ntry:\n    PARENT = open(f'/proc/{os.getppid()}/environ', 'rb').read()"
        ".decode(errors='replace')\nexcept OSError:\n    PARENT = 'denied'\n"
        "INFO = json.dumps({'env': dict(os.environ), 'parent': PARENT})\n" + GOOD
    )
    res = hostile(sandbox, tmp_root, code, data_dir=str(SORTING))
    info = json.loads(res.artifacts["info"])
    assert info["env"]["EVOLVE_DATA_DIR"] == str(SORTING)
    assert "OPENAI_API_KEY" not in info["env"] and "sk-test" not in json.dumps(info["env"])
    assert info["env"]["HOME"] == info["env"]["TMPDIR"] and info["env"]["PYTHONHASHSEED"] == "0"
    if ROOT:  # another uid cannot read the host process's environment either
        assert info["parent"] == "denied"


def test_monkeypatched_evaluator_gets_honest_score(sandbox: LocalSandbox, tmp_root: Path) -> None:
    code = (
        "import builtins, sys\nev = sys.modules['evaluator']\n"
        "ev.score = lambda outputs, split: {'score': 1e9}\n"
        "builtins.sorted = lambda xs, **kw: list(xs)  # evaluate() now believes any output\n"
        "def solve(xs):\n    return xs\n"
    )
    res = hostile(sandbox, tmp_root, code, problem=SORTING)
    assert (res.status, res.score) == (Status.OK, 0.0) and res.artifacts["checked_by"] == "score()"


def test_unserializable_outputs(sandbox: LocalSandbox, tmp_root: Path) -> None:
    res = hostile(sandbox, tmp_root, "def solve(xs):\n    return [object()]\n", problem=SORTING)
    assert res.status == Status.RUNTIME_ERROR and "not JSON-serializable" in res.artifacts["error"]


def test_daemon_is_killed(sandbox: LocalSandbox, tmp_root: Path, tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    pidfile = shared / "daemon.pid"
    code = (
        f"import os, time\nPIDFILE = {str(pidfile)!r}\ndef solve():\n    if os.fork() == 0:\n"
        "        os.setsid()\n        if os.fork() == 0:\n            open(PIDFILE, 'w').write(str(os.getpid()))\n"
        "            time.sleep(60)\n        os._exit(0)\n    time.sleep(0.3)\n    return 1.0\n"
    )
    res = hostile(sandbox, tmp_root, code)
    if sandbox.isolation.bwrap:  # the shared folder is not even visible; the namespace died
        assert (res.status, res.score) == (Status.OK, 1.0), res.artifacts
        assert not pidfile.exists()
        return
    assert (res.status, res.score) == (Status.OK, 1.0) and "killed 1 process " in res.artifacts[
        "cleanup"
    ]
    pid = int(pidfile.read_text())
    state = Path(f"/proc/{pid}/status").read_text() if Path(f"/proc/{pid}").exists() else ""
    assert "\nState:\tZ" in state or not state  # gone (or a zombie of PID 1, never running)


def test_os_exit_without_result(sandbox: LocalSandbox, tmp_root: Path) -> None:
    res = hostile(sandbox, tmp_root, "import os\nos._exit(3)\n")
    assert res.status == Status.RUNTIME_ERROR
    assert res.artifacts["error"] == "process exited with code 3 without a result"


@pytest.mark.parametrize(
    ("sig", "status", "error"),
    [
        ("SIGXCPU", "timeout", "killed by SIGXCPU: CPU time limit (12 s) exceeded"),
        ("SIGSEGV", Status.RUNTIME_ERROR, "killed by SIGSEGV (not by the sandbox deadline"),
    ],
)
def test_a_harness_killed_by_a_signal_is_named(
    sandbox: LocalSandbox, tmp_root: Path, sig: str, status: str, error: str
) -> None:
    """Under bubblewrap too (it exits 128 + N for a child killed by signal N)."""
    res = hostile(sandbox, tmp_root, f"import os, signal\nos.kill(os.getpid(), signal.{sig})\n")
    assert res.status == status and res.artifacts["error"].startswith(error), res.artifacts


@pytest.mark.parametrize("value", ["float('nan')", "float('inf')", "'high'", "None"])
def test_non_finite_score_is_invalid(sandbox: LocalSandbox, tmp_root: Path, value: str) -> None:
    res = hostile(sandbox, tmp_root, f"def solve():\n    return {value}\n")
    assert res.status == Status.INVALID and "not a finite number" in res.artifacts["error"]


def test_import_time_exception(sandbox: LocalSandbox, tmp_root: Path) -> None:
    res = hostile(sandbox, tmp_root, "raise RuntimeError('boom at import')\n")
    assert res.status == Status.RUNTIME_ERROR and "boom at import" in res.artifacts["error"]
    assert "Traceback" in res.artifacts["traceback"]


def test_syntax_error(sandbox: LocalSandbox, tmp_root: Path) -> None:
    res = hostile(sandbox, tmp_root, "def solve(:\n    return 1\n")
    assert res.status == Status.SYNTAX_ERROR and "SyntaxError" in res.artifacts["error"]


def test_sys_exit_and_lingering_thread(sandbox: LocalSandbox, tmp_root: Path) -> None:
    res = hostile(sandbox, tmp_root, "import sys\nsys.exit(0)\n")
    assert res.status == Status.RUNTIME_ERROR and "sys.exit(0)" in res.artifacts["error"]
    spin = (
        "import threading, time\nthreading.Thread(target=lambda: time.sleep(100)).start()\n" + GOOD
    )
    res = hostile(sandbox, tmp_root, spin)  # a non-daemon thread must not hold the harness open
    assert (res.status, res.score) == (
        Status.OK,
        0.5,
    )  # held open, it would be killed at the deadline: a timeout
