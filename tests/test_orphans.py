"""No orphans: a controller killed with SIGKILL mid-evaluation leaves nothing running past
the evaluation's deadline, on every backend, and the next `evolve` command removes what
it left in the temp folder; `evolve resume` then finishes the run.

The candidate execs `sleep` under a unique marker (argv[0]) in the harness process and in
a forked child, far past a short deadline; the test kills the controller while both
sleep and looks for survivors by that marker and among the controller's descendants.
"""

from __future__ import annotations

import itertools
import os
import signal
import socket
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from evaluators.local.reachable import SCRATCH_ROOT
from evolve.testing.cli_helpers import archive_json, evolve, popen, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem
from tests.support.docker_support import docker_image  # noqa: F401  (a session fixture)

TIMEOUT_S = 5  # the evaluation's deadline
SLEEP_S = 120  # what the candidate sleeps, far past it
MARGIN_S = 30  # after the deadline: generous, for a loaded machine (a limit, never a timing)
SLEEPER = """def f(x):
    import os
    if os.fork() == 0:
        os.execv("/bin/sleep", ["{mark}-child", "{s}"])
    os.execv("/bin/sleep", ["{mark}-main", "{s}"])
"""


def _block(body: str) -> Reply:
    return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


class Script:
    """First the sleeper, then ordinary candidates (each different: no duplicates)."""

    def __init__(self, mark: str) -> None:
        self.sleeper = _block(SLEEPER.format(mark=mark, s=SLEEP_S))
        self.count = itertools.count(1)
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> Reply:
        with self.lock:
            k = next(self.count)
        return self.sleeper if k == 1 else _block(f"def f(x):\n    return x + {k}\n")


def _marked(mark: str) -> list[psutil.Process]:
    """Live (not zombie) processes whose command line carries the marker."""
    found = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and mark in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


def _running(procs: list[psutil.Process]) -> list[psutil.Process]:
    """Those of `procs` still running: the same process (pid and start time), not a zombie."""
    alive = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                alive.append(p)
        except psutil.Error:
            pass
    return alive


def _owned_dirs(tmp: Path, pid: int) -> list[str]:
    """Temp folders named after the process `pid` (evaluators/local/leftovers.py)."""
    return [n for n in os.listdir(tmp) if n.startswith("evolve-") and f"-{pid}-" in n]


def _kill_mid_evaluation(tmp_path: Path, backend: str, env: dict) -> None:
    mark = f"zzorphan{uuid.uuid4().hex[:12]}"
    try:
        _check(tmp_path, backend, env, mark)
    finally:  # a failed check leaves no sleeper behind
        for p in _marked(mark):
            p.kill()


def _check(tmp_path: Path, backend: str, env: dict, mark: str) -> None:
    problem = toy_problem(tmp_path / "toy", timeout_s=TIMEOUT_S)
    runs, tmp = tmp_path / "runs", tmp_path / "tmp"
    tmp.mkdir()
    env = {**env, "TMPDIR": str(tmp)}  # the controller's temp folder: what the sweep scans
    run_id = f"orphans-{backend}"
    sandbox = "docker" if backend == "docker" else "local"
    args = ("--sandbox", sandbox, "--parallel", "1", "--llm-parallel", "1", "--run-id", run_id)
    with ScriptedLLM(Script(mark)) as srv:
        ctl = popen(
            *run_args(srv.base_url, runs, *args, problem=problem, iterations=3), extra_env=env
        )
        guard = time.monotonic() + 180  # a guard only: the seed, then the sleeper
        while len(_marked(mark)) < 2:
            assert ctl.poll() is None, ctl.communicate()
            assert time.monotonic() < guard, "the sleeping candidate never started"
            time.sleep(0.05)
        family = psutil.Process(ctl.pid).children(recursive=True) + _marked(mark)
        ctl.send_signal(signal.SIGKILL)  # mid-evaluation: no chance to clean anything up
        ctl.communicate()

        # whoever is left, nothing of the evaluation outlives its deadline
        limit = time.monotonic() + TIMEOUT_S + MARGIN_S
        while (_marked(mark) or _running(family)) and time.monotonic() < limit:
            time.sleep(0.2)
        survivors = [(p.pid, p.info["cmdline"]) for p in _marked(mark)]
        assert survivors == [], survivors
        assert [p.pid for p in _running(family)] == []
        if backend != "bwrap":  # the fallback's scratch, Docker's host folder
            # (as root, out of the slot uid's reach under pytest's 0700 tmp_path, the fallback's
            # scratch goes to evaluators/local/reachable.py's SCRATCH_ROOT)
            kept = _owned_dirs(tmp, ctl.pid) or _owned_dirs(Path(SCRATCH_ROOT), ctl.pid)
            assert kept, os.listdir(tmp)

        # the next command sweeps the dead controller's folders; the run resumes and finishes
        r = evolve("resume", run_id, "--runs-dir", runs, "--no-progress", extra_env=env)
        assert r.returncode == 0, r.stderr
    run = next(x for x in archive_json(runs, "runs") if x["run_id"] == run_id)
    assert run["status"] == "finished" and run["iterations_done"] == 3, run
    assert _owned_dirs(tmp, ctl.pid) == []
    if os.path.isdir(SCRATCH_ROOT):  # swept there too
        assert _owned_dirs(Path(SCRATCH_ROOT), ctl.pid) == []
    if backend == "docker":
        import docker

        owner = f"{socket.gethostname()}:{ctl.pid}:"
        left = docker.from_env(timeout=60).api.containers(all=True, filters={"label": "evolve"})
        owners = [(c.get("Labels") or {}).get("evolve.owner", "") for c in left]
        assert [o for o in owners if o.startswith(owner)] == []


def test_bubblewrap_evaluation_dies_with_its_controller(tmp_path):
    from evaluators.local.bubblewrap import probe

    if probe().bwrap is None:
        pytest.skip("bubblewrap cannot create namespaces here")
    _kill_mid_evaluation(tmp_path, "bwrap", {})


def test_fallback_evaluation_dies_with_its_controller(tmp_path):
    """No namespaces: the watchdog (evaluators/local/exec_chain.py) kills the process group."""
    _kill_mid_evaluation(tmp_path, "fallback", {"EVOLVE_LOCAL_ISOLATION": "off"})


def test_docker_evaluation_dies_with_its_controller(tmp_path, docker_image):  # noqa: F811
    _kill_mid_evaluation(tmp_path, "docker", {})


def test_sweep_never_touches_a_live_owners_folder(tmp_path):
    from evaluators import liveness
    from evaluators.local import leftovers

    mine = Path(leftovers.make_dir("scratch", str(tmp_path)))
    dead = psutil.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"evolve-scratch-{liveness.boot_id()}-{dead.pid}-1-abcdefgh"
    (stale / "locked").mkdir(parents=True)
    (stale / "locked").chmod(0)  # what a candidate may leave
    start = liveness.start_ticks(os.getpid())  # our very pid and start, of an earlier boot
    reboot = tmp_path / f"evolve-scratch-deadbeef-{os.getpid()}-{start}-abcdefgh"
    reboot.mkdir()
    other = tmp_path / "evolve-notes"  # not ours by name
    other.mkdir()
    removed = leftovers.sweep(str(tmp_path))
    assert sorted(removed) == sorted([str(stale), str(reboot)])
    assert mine.is_dir() and other.is_dir()
