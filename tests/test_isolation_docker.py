"""The Docker sandbox against hostile candidates aimed at the sandbox itself: its agent
(PID 1), the trusted score process, the warm container the next candidate gets, the
status the host records, the controller's memory, environment and network.

Every attack is a real candidate evaluated through DockerSandbox on the real engine
(skipped, saying why, without an engine); containment is asserted on what the host
records and on what an honest candidate evaluated next in the same sandbox sees.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import textwrap
from pathlib import Path

import pytest

from evaluators.docker.sandbox import DockerSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from tests.support.docker_support import (  # noqa: F401  (docker_image: the session fixture)
    assert_pool_clean,
    docker_image,
    processes,
    wait_gone,
)

DIRECT = Path(__file__).parent / "fixtures" / "sandbox_native" / "direct"
LIMITS = Limits(timeout_s=5.0, memory_mb=512, max_procs=32, max_file_mb=8, max_output_kb=8)
HONEST = "def solve():\n    return 0.5\n"

# A native problem with a trusted score(): evaluate() reports the candidate's solve() as
# its outputs (and INFO as an artifact); score() re-checks them and says what the
# trusted process saw of its own surroundings.
PROBE_EVALUATOR = """\
import importlib.util, json, os


def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    value = module.solve()
    return {"score": value, "outputs": value, "artifacts": {"info": str(getattr(module, "INFO", ""))}}


def score(outputs, split):
    home = os.environ["HOME"]
    others = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) not in (1, os.getpid()):
            others.append(open(f"/proc/{pid}/cmdline", "rb").read().decode(errors="replace"))
    seen = {"uid": os.getuid(), "home": home, "home_entries": sorted(os.listdir(home)),
            "tmp_entries": sorted(os.listdir("/tmp")), "others": others}
    if not isinstance(outputs, (int, float)):
        return {"valid": False, "artifacts": {"error": "not a number"}}
    return {"score": float(outputs), "artifacts": {"trusted": json.dumps(seen)}}
"""

# What an honest candidate sees of the container it was given: anything left by others.
LOOKAROUND = textwrap.dedent("""\
    import json, os
    def _left():
        procs = []
        for pid in os.listdir('/proc'):
            if pid.isdigit() and int(pid) not in (1, os.getpid()):
                try:
                    procs.append(open(f'/proc/{pid}/cmdline', 'rb').read().decode(errors='replace'))
                except OSError:
                    pass
        ipc = {k: open(f'/proc/sysvipc/{k}').read().splitlines()[1:] for k in ('shm', 'msg', 'sem')}
        files = {d: sorted(os.listdir(d)) for d in ('/tmp', '/dev/shm', '/dev/mqueue', os.environ['HOME'])
                 if os.path.isdir(d)}
        files[os.environ['HOME']] = [f for f in files[os.environ['HOME']] if f != 'cand.py']
        return {'procs': procs, 'ipc': ipc, 'files': files, 'nice': os.getpriority(os.PRIO_PROCESS, 0)}
    LEFT = _left()
    INFO = json.dumps(LEFT)
    def solve():
        return 0.5
    """)
NOTHING_LEFT = {"procs": [], "ipc": {"shm": [], "msg": [], "sem": []}, "nice": 0}


def request(code: str, problem: Path = DIRECT, limits: Limits = LIMITS) -> EvalRequest:
    return EvalRequest(
        problem_dir=str(problem),
        program_code=code,
        program_name="cand.py",
        split="train",
        limits=limits,
    )


def info(res: EvalResult) -> dict:
    return json.loads(res.artifacts["info"])


def assert_next_is_clean(sandbox: DockerSandbox) -> None:
    """An honest candidate next in the same sandbox scores right and finds nothing left."""
    res = sandbox.evaluate(request(LOOKAROUND))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts
    left = info(res)
    assert {k: left[k] for k in NOTHING_LEFT} == NOTHING_LEFT, left
    assert all(v == [] for v in left["files"].values()), left["files"]
    assert "cleanup" not in res.artifacts, res.artifacts
    assert_pool_clean(sandbox)


@pytest.fixture(scope="module")
def sandbox(docker_image):  # noqa: F811
    sb = DockerSandbox(max_parallel=1, run_id=f"test-isolation-{os.getpid()}", image=docker_image)
    yield sb
    sb.close()
    assert wait_gone(sb.client, sb.run_id, 10) == []


@pytest.fixture(scope="module")
def probe(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("probe_problem")
    (d / "evaluator.py").write_text(PROBE_EVALUATOR)
    d.chmod(0o755)
    (d / "evaluator.py").chmod(0o644)
    return d


# ---- the agent (PID 1) ----------------------------------------------------------------

SABOTAGE = textwrap.dedent("""\
    import ctypes, errno, json, os, platform, resource, signal, subprocess
    libc = ctypes.CDLL(None, use_errno=True)

    class Rlimit(ctypes.Structure):
        _fields_ = [('cur', ctypes.c_ulong), ('max', ctypes.c_ulong)]

    def via_libc():
        one = Rlimit(1, 1)
        if libc.prlimit(1, resource.RLIMIT_NPROC, ctypes.byref(one), None) != 0:
            raise OSError(ctypes.get_errno(), 'prlimit')

    def ioprio():
        nr = {'x86_64': 251, 'aarch64': 30}.get(platform.machine())
        if nr is None:
            raise OSError(errno.EPERM, 'unknown architecture: counted as refused')
        if libc.syscall(nr, 1, 1, 3 << 13) != 0:  # IOPRIO_WHO_PROCESS, pid 1, class idle
            raise OSError(ctypes.get_errno(), 'ioprio_set')

    ATTACKS = {
        'prlimit_nproc': lambda: resource.prlimit(1, resource.RLIMIT_NPROC, (1, 1)),
        'prlimit_nofile': lambda: resource.prlimit(1, resource.RLIMIT_NOFILE, (4, 4)),
        'prlimit_as': lambda: resource.prlimit(1, resource.RLIMIT_AS, (2**20, 2**20)),
        'prlimit_libc': via_libc,
        'renice': lambda: os.setpriority(os.PRIO_PROCESS, 1, 19),
        'renice_user': lambda: os.setpriority(os.PRIO_USER, 10000, 19),
        'affinity': lambda: os.sched_setaffinity(1, {0}),
        'scheduler': lambda: os.sched_setscheduler(1, os.SCHED_IDLE, os.sched_param(0)),
        'ioprio': ioprio,
        'sigterm': lambda: os.kill(1, signal.SIGTERM),
        'sigstop': lambda: os.kill(1, signal.SIGSTOP),
    }
    RESULT = {}
    for name, attack in ATTACKS.items():
        try:
            attack()
            RESULT[name] = 'done'
        except OSError as e:
            RESULT[name] = errno.errorcode.get(e.errno, str(e.errno))
    for name, argv in {'prlimit_cmd': ['prlimit', '--pid', '1', '--nproc=1:1'],
                       'renice_cmd': ['renice', '-n', '19', '-p', '1']}.items():
        RESULT[name] = subprocess.run(argv, capture_output=True).returncode
    INFO = json.dumps(RESULT)
    def solve():
        return 1.0
    """)


def test_agent_sabotage_is_refused_and_next_evaluation_scores(sandbox: DockerSandbox) -> None:
    """prlimit, renice, re-pinning, rescheduling or signalling PID 1 all fail with EPERM:
    the agent is another uid. The next honest candidate in the same container scores."""
    assert sandbox.evaluate(request(HONEST)).status == Status.OK
    before = sandbox.containers()
    res = sandbox.evaluate(request(SABOTAGE))
    assert (res.status, res.score) == (Status.OK, 1.0), res.artifacts
    got = info(res)
    cmds = {k: got.pop(k) for k in ("prlimit_cmd", "renice_cmd")}
    assert got == dict.fromkeys(got, "EPERM") and len(got) == 11, got
    assert all(rc != 0 for rc in cmds.values()), cmds
    assert sandbox.containers() == before  # nothing happened to it: kept warm
    assert_next_is_clean(sandbox)


@pytest.mark.parametrize(
    "sabotage",
    [
        "import resource; resource.prlimit(1, resource.RLIMIT_NPROC, (1, 1))",
        "import resource; resource.prlimit(1, resource.RLIMIT_NOFILE, (8, 8))",
        "import os; os.setpriority(os.PRIO_PROCESS, 1, 15)",
        "import os; os.sched_setaffinity(1, {min(os.sched_getaffinity(1))})",
    ],
    ids=["nproc", "nofile", "renice", "affinity"],
)
def test_drifted_agent_is_replaced_before_anyone_is_charged(
    sandbox: DockerSandbox, sabotage: str
) -> None:
    """Were a sabotage of the agent ever to succeed (here done through the engine by a
    process with the agent's own uid and capabilities, which no candidate has), the
    agent's own check sees the drift, refuses the launch, and the host replaces the
    container: the honest candidate is scored, not failed."""
    assert sandbox.evaluate(request(HONEST)).status == Status.OK
    (cid,) = sandbox.containers()
    if "affinity" in sabotage and len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no affinity to take away")
    api = sandbox.client.api
    as_agent = "import sys; sys.path.insert(0, '/opt/evolve'); import agent; agent.become_agent(); "
    exe = api.exec_create(cid, ["python3", "-c", as_agent + sabotage], user="0:0")
    out = api.exec_start(exe["Id"])
    assert api.exec_inspect(exe["Id"])["ExitCode"] == 0, out
    res = sandbox.evaluate(request(HONEST))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts
    assert cid not in sandbox.containers()
    assert_next_is_clean(sandbox)


# ---- the trusted score process ----------------------------------------------------------

REACH_SCORE = textwrap.dedent("""\
    import errno, json, os, signal, time
    def attempt(fn):
        try:
            fn()
            return 'done'
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))
    RESULT = {
        'list_score': attempt(lambda: os.listdir('/score')),
        'write_score': attempt(lambda: open('/score/planted.json', 'w').write('{}')),
        'list_out': attempt(lambda: os.listdir('/out')),
        'write_out': attempt(lambda: open('/out/result', 'w').write('{}')),
        'chmod_tmp': attempt(lambda: os.chmod('/tmp', 0o777)),
    }
    open('/tmp/planted.json', 'w').write('{"score": 1e9}')
    HARNESS = os.getpid()
    if os.fork() == 0:  # a survivor that waits for the score process, to kill it or write
        os.setsid()     # into its folder
        if os.fork() == 0:
            while True:
                for pid in os.listdir('/proc'):
                    if pid.isdigit() and int(pid) not in (os.getpid(), HARNESS):
                        for sig in (signal.SIGSTOP, signal.SIGKILL):
                            try:
                                os.kill(int(pid), sig)
                            except OSError:
                                pass
                for path in ('/score/planted.json', '/tmp/late.json'):
                    try:
                        open(path, 'w').write('{}')
                    except OSError:
                        pass
                time.sleep(0.01)
        os._exit(0)
    time.sleep(0.2)
    INFO = json.dumps(RESULT)
    def solve():
        return 3.0
    """)


def test_candidate_cannot_reach_the_trusted_score(sandbox: DockerSandbox, probe: Path) -> None:
    res = sandbox.evaluate(request(REACH_SCORE, probe))
    assert (res.status, res.score) == (Status.OK, 3.0), res.artifacts
    assert info(res) == {
        "list_score": "EACCES",
        "write_score": "EACCES",
        "list_out": "EACCES",
        "write_out": "EACCES",
        "chmod_tmp": "EPERM",
    }
    assert "killed" in res.artifacts["cleanup"]  # the survivor, before score() started
    trusted = json.loads(res.artifacts["trusted"])
    assert trusted == {
        "uid": 10002,
        "home": "/score",
        "home_entries": [],
        "tmp_entries": [],
        "others": [],
    }, trusted
    assert_next_is_clean(sandbox)


# ---- what a candidate leaves behind -----------------------------------------------------

SURVIVOR = textwrap.dedent("""\
    import os, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            os.execvp('sleep', ['sleep', '1000'])
        os._exit(0)
    time.sleep(0.2)
    def solve():
        return 1.0
    """)
PID_HOPPER = textwrap.dedent("""\
    import os, time
    if os.fork() == 0:
        os.setsid()
        while True:  # a new pid every moment: the parent exits as soon as its child exists
            try:
                if os.fork() != 0:
                    os._exit(0)
            except OSError:
                pass
    time.sleep(0.3)
    def solve():
        return 1.0
    """)


@pytest.mark.parametrize("code", [SURVIVOR, PID_HOPPER], ids=["setsid_sleep", "pid_hopper"])
def test_leftover_processes_are_killed(sandbox: DockerSandbox, code: str) -> None:
    res = sandbox.evaluate(request(code))
    assert (res.status, res.score) == (Status.OK, 1.0), res.artifacts
    assert "killed" in res.artifacts["cleanup"], res.artifacts
    assert_next_is_clean(sandbox)


HARD_TO_WIPE = textwrap.dedent("""\
    import os
    home = os.environ['HOME']
    os.chdir(home)
    for _ in range(3000):  # deeper than a recursive delete goes
        os.mkdir('d')
        os.chdir('d')
    open('f', 'w').write('x')
    os.chmod('.', 0)
    os.chdir(home)
    os.mkdir('locked')
    open('locked/f', 'w').write('x')
    os.chmod('locked', 0)
    os.chmod(home, 0)
    open('/tmp/f', 'w').write('x')
    os.chmod('/tmp/f', 0)
    def solve():
        return 1.0
    """)


def test_what_cannot_be_wiped_costs_a_container_not_a_candidate(sandbox: DockerSandbox) -> None:
    """A tree too deep or too locked to wipe: the container is replaced, if need be, and the
    next candidate finds nothing of it."""
    res = sandbox.evaluate(request(HARD_TO_WIPE))
    assert (res.status, res.score) == (Status.OK, 1.0), res.artifacts
    assert_next_is_clean(sandbox)


IPC_LEAVER = textwrap.dedent("""\
    import ctypes, json, os
    libc = ctypes.CDLL(None, use_errno=True)
    IPC_CREAT = 0o1000
    made = {
        'shm': libc.shmget(0x5EED, 4096, IPC_CREAT | 0o666),
        'msg': libc.msgget(0x5EEE, IPC_CREAT | 0o666),
        'sem': libc.semget(0x5EEF, 1, IPC_CREAT | 0o666),
        'mq': libc.mq_open(b'/evolve-left', os.O_CREAT | os.O_RDWR, 0o666, None),
    }
    open('/dev/shm/left', 'w').write('x')
    INFO = json.dumps(made)
    def solve():
        return 1.0
    """)
IPC_FINDER = LOOKAROUND.replace(
    "LEFT = _left()",
    textwrap.dedent("""\
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    LEFT = _left()
    LEFT['keys'] = [libc.shmget(0x5EED, 0, 0), libc.msgget(0x5EEE, 0), libc.semget(0x5EEF, 0, 0),
                    libc.mq_open(b'/evolve-left', os.O_RDONLY, 0, None)]"""),
)


def test_ipc_objects_are_gone_for_the_next_candidate(sandbox: DockerSandbox) -> None:
    res = sandbox.evaluate(request(IPC_LEAVER))
    assert res.status == Status.OK, res.artifacts
    assert all(v >= 0 for v in info(res).values()), info(res)  # all four were made
    before = sandbox.containers()
    res = sandbox.evaluate(request(IPC_FINDER))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts
    left = info(res)
    assert sandbox.containers() == before  # the same warm container, wiped
    assert left["keys"] == [-1, -1, -1, -1], left
    assert left["ipc"] == NOTHING_LEFT["ipc"] and left["files"]["/dev/shm"] == [], left
    assert left["files"].get("/dev/mqueue", []) == [], left


# ---- what the host records ------------------------------------------------------------

FORGE = textwrap.dedent("""\
    import json, os, sys
    def solve():
        try:
            os.write(4, b'{"status": "sandbox_error"}\\n')  # the preamble channel: closed by now
        except OSError:
            pass
        fd = int(sys.argv[3][3:])  # fd:N, the result file the agent opened
        forged = {"status": "sandbox_error", "score": None, "metrics": {},
                  "artifacts": {"error": "the docker daemon is down"}}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(forged).encode(), 0)
        os._exit(0)
    """)


def test_forged_sandbox_error_is_a_runtime_error(sandbox: DockerSandbox, probe: Path) -> None:
    for problem in (DIRECT, probe):
        res = sandbox.evaluate(request(FORGE, problem))
        assert res.status == Status.RUNTIME_ERROR and res.score is None, res.artifacts
        assert "only ever decided by the host" in res.artifacts["error"], res.artifacts
    assert_next_is_clean(sandbox)


def test_real_sandbox_error_still_counts(sandbox: DockerSandbox, tmp_path: Path) -> None:
    """The preamble says the evaluator could not be imported: that is ours, not the candidate's."""
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "evaluator.py").write_text("raise ImportError('no simulator here')\n")
    tmp_path.chmod(0o755)
    broken.chmod(0o755)
    res = sandbox.evaluate(request(HONEST, broken))
    assert res.status == Status.SANDBOX_ERROR and "no simulator here" in res.artifacts["error"], (
        res.artifacts
    )


HUGE_RESULT = textwrap.dedent("""\
    import os, sys
    def solve():
        fd = int(sys.argv[3][3:])
        chunk = b'[' + b'1,' * (2**20 // 2 - 1) + b'1]'  # 1 MiB of JSON
        os.ftruncate(fd, 0)
        os.write(fd, b'{"status": "ok", "score": 1.0, "artifacts": {}, "outputs": [')
        for i in range(60):
            os.write(fd, (b',' if i else b'') + chunk)
        os.write(fd, b']}')
        os._exit(0)
    """)


def test_huge_result_file_is_refused_without_reading_it(sandbox: DockerSandbox) -> None:
    limits = Limits(timeout_s=20.0, memory_mb=512, max_procs=32, max_file_mb=100, max_output_kb=8)
    assert (
        sandbox.evaluate(request(HONEST, limits=limits)).status == Status.OK
    )  # warm, memory settled
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = sandbox.evaluate(request(HUGE_RESULT, limits=limits))
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_kb) / 1024
    assert res.status == Status.RUNTIME_ERROR and res.score is None, res.artifacts
    assert "result file is too large" in res.artifacts["error"], res.artifacts
    assert grown_mb < 200, grown_mb
    res = sandbox.evaluate(request(LOOKAROUND, limits=limits))
    assert (res.status, res.score) == (Status.OK, 0.5), res.artifacts


# ---- what a candidate can see of the controller -------------------------------------------

SNOOP = textwrap.dedent("""\
    import json, os
    seen = [json.dumps(dict(os.environ))]
    for pid in os.listdir('/proc'):
        if pid.isdigit():
            try:
                seen.append(open(f'/proc/{pid}/environ', 'rb').read().decode(errors='replace'))
            except OSError as e:
                seen.append(f'{pid}: {type(e).__name__}')
    INFO = json.dumps(seen)
    def solve():
        return 1.0
    """)


def test_controller_environment_is_not_visible(docker_image, monkeypatch) -> None:  # noqa: F811
    canary = "evolve-canary-" + os.urandom(8).hex()
    monkeypatch.setenv("EVOLVE_TEST_CANARY", canary)
    monkeypatch.setenv("OPENAI_API_KEY", canary)
    sb = DockerSandbox(run_id=f"test-canary-{os.getpid()}", image=docker_image)
    try:
        res = sb.evaluate(request(SNOOP))
        assert res.status == Status.OK, res.artifacts
        seen = info(res)
        assert "1: PermissionError" in seen  # the agent's environment is not readable either
        assert canary not in json.dumps(res.artifacts) and canary not in json.dumps(seen)
        env = json.loads(seen[0])
        assert not any(k.startswith(("OPENAI", "EVOLVE_TEST")) for k in env), env
    finally:
        sb.close()


NET = textwrap.dedent("""\
    import errno, json, socket
    RESULT = {}
    for host in ('127.0.0.1', '172.17.0.1', '10.0.0.1'):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.connect((host, PORT))
            RESULT[host] = 'connected'
        except OSError as e:
            RESULT[host] = errno.errorcode.get(e.errno, type(e).__name__)
        finally:
            s.close()
    INFO = json.dumps(RESULT)
    def solve():
        return 1.0
    """)


def test_host_ports_are_unreachable(sandbox: DockerSandbox) -> None:
    """A port listening on the host's loopback, and one on every host interface (the
    bridge's too): from inside, 127.0.0.1 is the container's own loopback, nothing else
    routes, and the host's listeners never see a connection."""
    listeners = []
    try:
        for addr in ("127.0.0.1", "0.0.0.0"):
            s = socket.socket()
            s.bind((addr, 0))
            s.listen(8)
            s.setblocking(False)
            listeners.append(s)
        for s in listeners:
            res = sandbox.evaluate(request(NET.replace("PORT", str(s.getsockname()[1]))))
            assert res.status == Status.OK, res.artifacts
            got = info(res)
            assert got["127.0.0.1"] == "ECONNREFUSED", got
            assert set(got.values()) <= {"ECONNREFUSED", "ENETUNREACH"}, got
        for s in listeners:
            with pytest.raises(BlockingIOError):
                s.accept()  # nobody ever knocked
    finally:
        for s in listeners:
            s.close()


def test_no_process_of_the_candidate_runs_as_the_agent(sandbox: DockerSandbox) -> None:
    """The engine's view: PID 1 is the agent's uid, nothing else is left between evaluations."""
    assert sandbox.evaluate(request(HONEST)).status == Status.OK
    for cid in sandbox.containers():
        procs = processes(sandbox.client, cid)
        assert len(procs) == 1 and procs[0][1] in ("10000", "evolve-agent"), procs


def test_held_out_data_is_invisible_in_train(docker_image, tmp_path) -> None:  # noqa: F811
    """[[data]] `splits`: a train evaluation finds the test files empty, at /data and /problem."""
    from evolve.pipeline.evaluation import CandidateEvaluator
    from evolve.problem.load import load_problem
    from tests.test_isolation import SPLIT_TOML

    problem = tmp_path / "split_data"
    shutil.copytree(Path(__file__).parent / "fixtures" / "sandbox_native" / "direct", problem)
    (problem / "problem.toml").write_text(SPLIT_TOML)
    (problem / "seed.py").write_text("def solve():\n    return 0.5\n")
    (problem / "data").mkdir()
    (problem / "data" / "train.txt").write_text("train-rows")
    (problem / "data" / "test.txt").write_text("held-out-rows")
    code = (
        "import json, os\nseen = {}\n"
        "for root in (os.environ['EVOLVE_DATA_DIR'], os.path.join(os.environ['PYTHONPATH'], 'data')):\n"
        "    for name in ('train.txt', 'test.txt'):\n"
        "        seen[root + '/' + name] = open(os.path.join(root, name)).read()\n"
        "INFO = json.dumps(seen)\ndef solve():\n    return 0.5\n"
    )
    sb = DockerSandbox(max_parallel=1, run_id=f"test-split-{os.getpid()}", image=docker_image)
    try:
        ev = CandidateEvaluator(load_problem(problem), sb)
        train = sb.evaluate(ev.request(code, "train"))
        test = sb.evaluate(ev.request(code, "test"))
    finally:
        sb.close()
    assert train.status == "ok", train.artifacts
    seen_train, seen_test = json.loads(train.artifacts["info"]), json.loads(test.artifacts["info"])
    assert sorted(seen_train.values()) == ["", "", "train-rows", "train-rows"]
    assert sorted(seen_test.values()) == ["", "", "held-out-rows", "held-out-rows"]
