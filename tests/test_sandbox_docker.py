"""DockerSandbox against the real engine: the container policy, the warm pool, its
recovery and clean-up, the image's tag, the default backend, and whole runs.

The hostile-candidate suite for both backends is tests/test_hostile.py; candidates aimed
at the Docker sandbox itself (its agent, the trusted score process, the next candidate's
container, the recorded status, the controller) are in tests/test_isolation_docker.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import evaluators.docker.sandbox as ds
from evaluators.docker import image
from evaluators.docker.sandbox import LABEL, OWNER_LABEL, DockerSandbox, reap_leftovers
from evaluators.machine import cpu_share, machine_sandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from evolve.testing.cli_helpers import BINPACK, ROOT, archive_json, block, evolve, popen, run_args
from evolve.testing.scripted_llm import Reply, ScriptedLLM, binpack_reply
from tests.support.docker_support import (  # noqa: F401  (docker_image: the session fixture)
    assert_pool_clean,
    docker_image,
    engine,
    labeled,
    processes,
    wait_gone,
)

FIXTURES = Path(__file__).parent / "fixtures"
DIRECT = FIXTURES / "sandbox_native" / "direct"
SORTING = FIXTURES / "sandbox_native" / "sorting"
OPENEVOLVE = FIXTURES / "sandbox_openevolve" / "basic"
LIMITS = Limits(timeout_s=3.0, memory_mb=512, max_procs=24, max_file_mb=8, max_output_kb=8)
GOOD = "def solve():\n    return 0.5\n"
SLEEP = "import time\ndef solve():\n    time.sleep({s})\n    return 1.0\n"


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


@pytest.fixture(scope="module")
def sandbox(docker_image):  # noqa: F811
    sb = DockerSandbox(max_parallel=3, run_id=f"test-docker-{os.getpid()}", image=docker_image)
    yield sb
    sb.close()
    assert wait_gone(sb.client, sb.run_id, 60) == []


def in_background(fn, *args) -> tuple[threading.Thread, list]:
    out: list = []
    t = threading.Thread(target=lambda: out.append(fn(*args)))
    t.start()
    return t, out


def wait_for(cond, timeout_s: float = 120.0) -> None:
    """Poll until cond(); the limit only guards against hanging the suite."""
    end = time.monotonic() + timeout_s
    while not cond():
        assert time.monotonic() < end, "timed out waiting"
        time.sleep(0.02)


# ---- both formats, both modes -------------------------------------------------------


def test_native_and_trusted_score(sandbox: DockerSandbox) -> None:
    res = sandbox.evaluate(request(GOOD))
    assert (res.status, res.score, res.metrics) == (Status.OK, 0.5, {"value": 0.5})
    res = sandbox.evaluate(request("def solve(xs):\n    return sorted(xs)\n", SORTING))
    assert (res.status, res.score, res.metrics) == (Status.OK, 1.0, {"correct": 10.0})
    assert res.artifacts["note"] == "in-sandbox" and res.artifacts["checked_by"] == "score()"


@pytest.mark.parametrize(
    "stage,score", [(None, 0.75), ("evaluate_stage2", 1.75), ("evaluate_stage3", 1.5)]
)
def test_openevolve(sandbox: DockerSandbox, stage: str | None, score: float) -> None:
    """stage3 runs the candidate in the evaluator's own subprocess, helper from PYTHONPATH."""
    res = sandbox.evaluate(request("def run():\n    return 0.75\n", OPENEVOLVE, stage=stage))
    assert (res.status, res.score) == (Status.OK, score), res.artifacts


def test_an_evaluation_gets_its_fair_share_of_the_engines_cpus(docker_image) -> None:  # noqa: F811
    """Machine cores over the --parallel evaluations, at least one, as the local sandbox
    (no CPU limit) shares them: a score that counts seconds agrees across backends."""
    cores = engine().info()["NCPU"]
    assert cpu_share(cores, 1) == cores and cpu_share(cores, 2 * cores) == 1.0
    for parallel in (1, 2 * cores):
        sb = machine_sandbox("docker", parallel, run_id=f"test-share-{os.getpid()}-{parallel}")
        try:
            assert sb.evaluate(request(GOOD)).status == Status.OK
            (c,) = [sb.client.api.inspect_container(c) for c in sb.containers()]
            assert c["HostConfig"]["NanoCpus"] == int(cpu_share(cores, parallel) * 1e9)
        finally:
            sb.close()


# ---- the container policy -----------------------------------------------------------


def test_container_policy(sandbox: DockerSandbox) -> None:
    assert sandbox.evaluate(request(GOOD, data_dir=str(SORTING))).status == Status.OK
    info = [sandbox.client.api.inspect_container(c) for c in sandbox.containers()]
    c = next(i for i in info if any(m["Destination"] == "/data" for m in i["Mounts"]))
    hc, cfg = c["HostConfig"], c["Config"]
    assert hc["NetworkMode"] == "none" and hc["ReadonlyRootfs"] and hc["CapDrop"] == ["ALL"]
    assert sorted(hc["CapAdd"]) == sorted(ds.AGENT_CAPS)  # the agent's; no harness keeps any
    assert hc["SecurityOpt"] == ["no-new-privileges"] and hc["IpcMode"] == "private"
    assert hc["Memory"] == hc["MemorySwap"] == (512 + ds.AGENT_MB) * 2**20
    assert hc["NanoCpus"] == 10**9 and hc["PidsLimit"] == LIMITS.max_procs + 2
    assert set(hc["Tmpfs"]) == {"/scratch", "/score", "/tmp", "/out"}
    assert all("size=" in opts and "noexec" in opts for opts in hc["Tmpfs"].values())
    owners = {d: opts.split("uid=")[1].split(",")[0] for d, opts in hc["Tmpfs"].items()}
    assert owners == {"/scratch": "10001", "/score": "10002", "/tmp": "10000", "/out": "10000"}
    assert {m["Destination"]: m["RW"] for m in c["Mounts"]} == {
        "/problem": False,
        "/in": False,
        "/data": False,
    }
    assert cfg["User"] == "0:0" and cfg["Labels"][LABEL] == sandbox.run_id  # the agent drops it
    assert cfg["Labels"][OWNER_LABEL] == ds.owner_id()
    env = dict(e.split("=", 1) for e in cfg["Env"])
    assert set(env) <= {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONHASHSEED",
        "PYTHONPATH",
        "EVOLVE_PRIVATE_TMP",
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "EVOLVE_DATA_DIR",
    }


def test_inside_view(sandbox: DockerSandbox) -> None:
    code = textwrap.dedent("""\
        import json, os
        status = dict(l.split(':', 1) for l in open('/proc/self/status').read().splitlines())
        def can_write(path):
            try:
                open(path, 'w').close()
                return True
            except OSError:
                return False
        INFO = json.dumps({
            'ids': [os.getuid(), os.geteuid(), os.getgid()],
            'cap_eff': status['CapEff'].strip(), 'cap_bnd': status['CapBnd'].strip(),
            'cap_prm': status['CapPrm'].strip(), 'groups': os.getgroups(),
            'agent': [l.split()[1:3] for l in open('/proc/1/status') if l.startswith(('Uid', 'Gid'))],
            'no_new_privs': status['NoNewPrivs'].strip(),
            'ifaces': sorted(os.listdir('/sys/class/net')),
            'writable': {p: can_write(p) for p in ('/usr/x', '/in/x', '/problem/x', '/scratch/x', '/tmp/x',
                                                   '/out/x', '/score/x')},
            'cwd': os.getcwd(), 'program': os.path.realpath('cand.py'),
        })
        def solve():
            return 1.0
        """)
    res = sandbox.evaluate(request(code))
    info = json.loads(res.artifacts["info"])
    assert info["ids"] == [10001, 10001, 10001] and info["groups"] == []
    assert info["cap_eff"] == info["cap_prm"] == info["cap_bnd"] == "0000000000000000"
    assert info["no_new_privs"] == "1"
    assert info["agent"] == [
        ["10000", "10000"],
        ["10000", "10000"],
    ]  # PID 1: not the candidate's uid
    assert info["ifaces"] == ["lo"]
    assert info["writable"] == {
        "/usr/x": False,
        "/in/x": False,
        "/problem/x": False,
        "/scratch/x": True,
        "/tmp/x": True,
        "/out/x": False,
        "/score/x": False,
    }
    assert info["cwd"] == "/scratch" and info["program"] == "/in/cand.py"


# ---- the warm pool ------------------------------------------------------------------


def test_warm_containers_are_reused_and_wiped(sandbox: DockerSandbox) -> None:
    write = (
        "import os\nopen(os.path.join(os.environ['HOME'], 'left.txt'), 'w').write('x')\n"
        "open('/tmp/left.txt', 'w').write('x')\n" + GOOD
    )
    probe = (
        "import os\nLEFT = [p for p in (os.path.join(os.environ['HOME'], 'left.txt'), '/tmp/left.txt')"
        " if os.path.exists(p)]\nINFO = repr(LEFT)\ndef solve():\n    return float(len(LEFT))\n"
    )
    assert sandbox.evaluate(request(write)).status == Status.OK
    before = set(sandbox.containers())
    for _ in range(3):
        res = sandbox.evaluate(request(probe))
        assert (res.status, res.score) == (Status.OK, 0.0), res.artifacts
    assert set(sandbox.containers()) == before  # no new container for the same problem
    assert_pool_clean(sandbox)


def test_concurrent_evaluations_get_their_own_container(docker_image) -> None:  # noqa: F811
    """Three evaluations in flight at once, each in its own container: each candidate waits
    for a `go` file that the test writes once it has seen three containers busy (run one
    after another, the first would wait until its deadline)."""
    gate = Path(tempfile.mkdtemp(prefix="docker-gate-"))  # the data folder: readable inside
    gate.chmod(0o755)
    code = (
        "import os, time\nMARK = os.path.join(os.environ['HOME'], 'mine')\n"
        "GO = os.path.join(os.environ['EVOLVE_DATA_DIR'], 'go')\n"
        "def solve():\n    busy = os.path.exists(MARK)\n    open(MARK, 'w').close()\n"
        "    while not os.path.exists(GO):\n        time.sleep(0.02)\n"
        "    return 0.0 if busy else 1.0\n"
    )
    limits = dataclasses.replace(LIMITS, timeout_s=300)
    # a pool of its own: the data folder is part of a container's key, and the shared pool's
    # containers are what the next tests inspect
    sandbox = DockerSandbox(
        max_parallel=3, run_id=f"test-concurrent-{os.getpid()}", image=docker_image
    )
    most = 0
    try:
        with ThreadPoolExecutor(3) as pool:  # three warm containers, started
            list(pool.map(sandbox.evaluate, [request(GOOD, limits=limits, data_dir=str(gate))] * 3))
            futures = [
                pool.submit(sandbox.evaluate, request(code, limits=limits, data_dir=str(gate)))
                for _ in range(3)
            ]
            end = time.monotonic() + 240  # a guard only: the candidates wait for the file
            while most < 3 and time.monotonic() < end and not any(f.done() for f in futures):
                most = max(
                    most, sum(len(processes(sandbox.client, c)) > 1 for c in sandbox.containers())
                )
                time.sleep(0.05)
            (gate / "go").touch()
            results = [f.result() for f in futures]
        assert len(sandbox.containers()) <= sandbox.max_parallel
    finally:
        sandbox.close()
        shutil.rmtree(gate)
    assert most == 3, f"at most {most} evaluations ran at once"
    assert [(r.status, r.score) for r in results] == [(Status.OK, 1.0)] * 3, [
        r.artifacts for r in results
    ]
    assert wait_gone(sandbox.client, sandbox.run_id, 60) == []  # (the limit is a guard only)


def test_container_killed_while_idle_is_replaced(sandbox: DockerSandbox) -> None:
    assert sandbox.evaluate(request(GOOD)).status == Status.OK
    for cid in sandbox.containers():
        sandbox.client.api.kill(cid)
    res = sandbox.evaluate(request(GOOD))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts


def test_container_dying_mid_evaluation_is_a_recorded_failure(sandbox: DockerSandbox) -> None:
    assert sandbox.evaluate(request(GOOD)).status == Status.OK
    t, out = in_background(sandbox.evaluate, request(SLEEP.format(s=30)))
    wait_for(lambda: any(len(processes(sandbox.client, c)) > 1 for c in sandbox.containers()))
    victim = next(c for c in sandbox.containers() if len(processes(sandbox.client, c)) > 1)
    sandbox.client.api.kill(victim)
    t.join(120)  # a guard only: the candidate sleeps 30 s, the evaluation ends with its container
    assert not t.is_alive(), "the evaluation outlived its container"
    res: EvalResult = out[0]
    assert res.status == Status.RUNTIME_ERROR and "container died" in res.artifacts["error"], (
        res.artifacts
    )
    assert victim not in sandbox.containers()
    assert sandbox.evaluate(request(GOOD)).status == Status.OK


def test_unreclaimable_container_is_destroyed_at_the_host_deadline(
    sandbox: DockerSandbox, monkeypatch
) -> None:
    """A frozen container (its agent cannot act at the deadline) goes, and the evaluation
    is a timeout; the next one gets a fresh container."""
    monkeypatch.setattr(ds, "GRACE_S", 1.0)
    limits = Limits(timeout_s=1.0, memory_mb=512, max_procs=24, max_file_mb=8, max_output_kb=8)
    assert sandbox.evaluate(request(GOOD, limits=limits)).status == Status.OK
    t, out = in_background(sandbox.evaluate, request(SLEEP.format(s=30), limits=limits))
    wait_for(lambda: any(len(processes(sandbox.client, c)) > 1 for c in sandbox.containers()))
    frozen = next(c for c in sandbox.containers() if len(processes(sandbox.client, c)) > 1)
    sandbox.client.api.pause(frozen)
    t.join(120)  # a guard only: paused, the candidate would never finish by itself
    assert not t.is_alive(), "the host deadline never fired"
    res: EvalResult = out[0]
    assert res.status == Status.TIMEOUT, res
    assert frozen not in sandbox.containers()
    assert (
        wait_for(lambda: frozen not in [c["Id"] for c in sandbox.client.api.containers(all=True)])
        is None
    )
    assert sandbox.evaluate(request(GOOD, limits=limits)).status == Status.OK


# ---- clean-up: close, dead runs, a controller killed outright ------------------------


def test_close_removes_every_container(docker_image) -> None:  # noqa: F811
    sb = DockerSandbox(max_parallel=2, run_id=f"test-close-{os.getpid()}", image=docker_image)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(sb.evaluate, [request(GOOD), request(GOOD, SORTING)]))
    assert len(labeled(sb.client, sb.run_id)) == 2
    t, out = in_background(sb.evaluate, request(SLEEP.format(s=30)))  # busy while closing
    wait_for(lambda: any(len(processes(sb.client, c)) > 1 for c in sb.containers()))
    sb.close()
    t.join(120)  # a guard only
    assert not t.is_alive()
    assert out[0].status != Status.OK and out[0].score is None
    assert wait_gone(sb.client, sb.run_id, 120) == []  # (the limit is a guard only)
    assert sb.evaluate(request(GOOD)).status == "sandbox_error"  # closed for good


def test_leftovers_of_dead_runs_are_removed_at_start(docker_image) -> None:  # noqa: F811
    client = engine()
    dead = subprocess.Popen(["true"])
    dead.wait()
    owners = {"dead": f"{ds.socket.gethostname()}:{dead.pid}:1", "alive": ds.owner_id()}
    ids = {}
    for kind, owner in owners.items():
        ids[kind] = client.api.create_container(
            docker_image,
            ["python3", "-c", "pass"],
            labels={LABEL: f"test-{kind}", OWNER_LABEL: owner},
        )["Id"]
    try:
        assert reap_leftovers(client) >= 1
        left = {c["Id"] for c in client.api.containers(all=True, filters={"label": LABEL})}
        assert ids["dead"] not in left and ids["alive"] in left
    finally:
        for cid in ids.values():
            try:
                client.api.remove_container(cid, force=True)
            except Exception:
                pass


def test_controller_killed_outright_takes_its_containers_along(docker_image) -> None:  # noqa: F811
    run_id = f"test-sigkill-{os.getpid()}"
    script = textwrap.dedent(f"""\
        import os, signal
        from evaluators.docker.sandbox import DockerSandbox
        from evaluators.sandbox import EvalRequest
        sb = DockerSandbox(run_id={run_id!r}, image={docker_image!r})
        r = sb.evaluate(EvalRequest(problem_dir={str(DIRECT)!r}, program_code={GOOD!r},
                                    program_name='cand.py', split='train'))
        print(r.status, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
        """)
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert proc.returncode == -signal.SIGKILL and proc.stdout.strip() == "ok", proc.stderr
    assert wait_gone(engine(), run_id, 60) == []


# ---- the image ----------------------------------------------------------------------


def test_image_tag_is_a_hash_of_its_inputs(tmp_path: Path, monkeypatch) -> None:
    tags = (image.base_tag(), image.debian_tag(), image.registry_tag())
    assert tags[0].startswith("evolve-sandbox-base:") and tags[1].startswith("evolve-sandbox:")
    assert tags == (image.base_tag(), image.debian_tag(), image.registry_tag())  # stable
    copy = tmp_path / "docker"
    copy.mkdir()
    for f in image.DOCKER_DIR.iterdir():
        if f.is_file():  # not __pycache__
            (copy / f.name).write_bytes(f.read_bytes())
    monkeypatch.setattr(image, "DOCKER_DIR", copy)
    assert (image.base_tag(), image.debian_tag()) == tags[:2]
    (copy / "packages.txt").write_text((copy / "packages.txt").read_text() + "python3-scipy\n")
    assert image.base_tag() != tags[0] and image.debian_tag() != tags[1]
    assert image.registry_tag() == tags[2]  # the registry recipe does not read packages.txt


def test_sandbox_build_is_skipped_when_up_to_date(docker_image) -> None:  # noqa: F811
    r = evolve("sandbox", "build")
    assert r.returncode == 0 and r.stdout.strip() == f"{docker_image} (up to date)", r.stderr


# ---- the default backend and the CLI -------------------------------------------------


def test_default_is_docker_with_a_notice(docker_image, tmp_path: Path) -> None:  # noqa: F811
    prog = tmp_path / "best_fit.py"
    prog.write_text((BINPACK / "baselines" / "best_fit.py").read_text())
    r = evolve("eval", BINPACK, prog, "--split", "quick", "--json")
    assert r.returncode == 0, r.stderr
    notice = [ln for ln in r.stderr.splitlines() if ln.startswith("sandbox: ")]
    assert len(notice) == 1 and notice[0].startswith("sandbox: docker (Docker engine "), r.stderr
    assert notice[0].endswith(f"answered and image {docker_image} exists)")
    docker_out = json.loads(r.stdout)
    local = json.loads(
        evolve("eval", BINPACK, prog, "--split", "quick", "--json", "--sandbox", "local").stdout
    )
    assert (
        docker_out["status"] == local["status"] == Status.OK
        and docker_out["score"] == local["score"]
    )


def test_default_falls_back_to_local_without_the_image(tmp_path: Path) -> None:
    prog = tmp_path / "best_fit.py"
    prog.write_text((BINPACK / "baselines" / "best_fit.py").read_text())
    r = evolve(
        "eval",
        BINPACK,
        prog,
        "--split",
        "quick",
        "--json",
        extra_env={"EVOLVE_SANDBOX_IMAGE": "evolve-sandbox:no-such-image"},
    )
    assert r.returncode == 0, r.stderr
    assert (
        "sandbox: local (Docker image evolve-sandbox:no-such-image is not built; "
        "`evolve sandbox build` builds it)" in r.stderr.splitlines()
    )


def test_run_with_docker_completes_and_leaves_nothing(docker_image, tmp_path: Path) -> None:  # noqa: F811
    hostile = block("import os\ndef priority(item, bins):\n    while True:\n        os.fork()")
    replies = [binpack_reply("funsearch_weibull"), Reply(hostile), binpack_reply("worst_fit")]
    run_id = f"docker-e2e-{os.getpid()}"  # its own: other test sessions may share the engine
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(
            *run_args(
                srv.base_url, tmp_path, "--sandbox", "docker", "--run-id", run_id, iterations=6
            )
        )
    assert r.returncode == 0, r.stderr
    run = archive_json(tmp_path, "runs")[0]
    assert (run["run_id"], run["status"], run["iterations_done"]) == (run_id, "finished", 6)
    best = archive_json(tmp_path, "best", "--run", run_id)
    assert best["iteration"] > 0 and best["test_score"] is not None  # beat the best-fit seed
    assert labeled(engine(), run_id) == []


def _busy(client, run_id: str) -> bool:
    """Whether a container of the run runs more than its agent."""
    import docker.errors

    for cid in labeled(client, run_id):
        try:
            if len(processes(client, cid)) > 1:
                return True
        except docker.errors.APIError:  # created and not started yet, or just removed
            pass
    return False


def test_ctrl_c_removes_the_runs_containers(docker_image, tmp_path: Path, cpu_hog) -> None:  # noqa: F811
    """Under load, and started with SIGINT ignored (as a shell starts a background job),
    the way this once failed: Ctrl-C must stop the run all the same."""
    slow = block("import time\ndef priority(item, bins):\n    time.sleep(60)\n    return -bins")
    client, run_id = engine(), f"docker-int-{os.getpid()}"
    with ScriptedLLM.from_list([Reply(slow)], then=Reply(slow)) as srv:
        proc = popen(
            *run_args(
                srv.base_url, tmp_path, "--sandbox", "docker", "--run-id", run_id, iterations=4
            ),
            ignore_sigint=True,
        )
        try:
            end = time.monotonic() + 240  # a guard: under load the first container starts late
            while time.monotonic() < end and not _busy(client, run_id) and proc.poll() is None:
                time.sleep(0.1)  # until a candidate is being evaluated in a container
            assert labeled(client, run_id), proc.stderr.read() if proc.poll() is not None else ""
            proc.send_signal(signal.SIGINT)
            proc.wait(timeout=120)  # a guard on a loaded machine, never a timing
        finally:
            proc.kill()
    assert proc.returncode == 130, proc.stderr.read()
    assert labeled(client, run_id) == []


def test_the_machine_sandbox_waits_for_a_busy_engine(docker_image) -> None:  # noqa: F811
    """The ping has 5 s, but the sandbox's calls do not: on two loaded cores creating a
    container once took longer, and the seed of a run was recorded as sandbox_error."""
    from evaluators import machine

    client, why = machine.engine()
    assert client is not None, why
    assert client.api.timeout == machine.API_TIMEOUT_S > machine.PING_TIMEOUT_S
    sandbox = machine.machine_sandbox("docker", 1, run_id=f"docker-timeout-{os.getpid()}")
    try:
        assert isinstance(sandbox, DockerSandbox)
        assert sandbox.client.api.timeout == machine.API_TIMEOUT_S
    finally:
        sandbox.close()


@pytest.mark.parametrize(
    "requirements, tools, said",
    [
        (True, (), "layering p's requirements.txt on the Docker image (once)"),
        (False, ("g++",), "layering p's tools g++ on the Docker image (once)"),
        (True, ("g++", "cargo"), "layering p's requirements.txt and tools g++, cargo on the"),
    ],
)
def test_the_layering_notice_names_what_it_layers(requirements, tools, said):
    from evaluators.machine import layering_notice

    assert said in layering_notice("p", requirements, tools)


def test_the_layering_notice_names_a_dockerfiles_packages():
    from evaluators.machine import layering_notice

    said = layering_notice("p", False, (), ("six", "attrs==22.2.0"))
    assert "layering p's evaluator/Dockerfile's pip install six attrs==22.2.0 on the" in said
