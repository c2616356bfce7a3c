"""The local sandbox against a determined adversary: each attack of the red-team round.

Every test is a real hostile candidate in the real sandbox (bubblewrap namespaces,
seccomp, cgroups as root), asserting containment. `test_unprivileged_user` runs a
selection of them again as an ordinary user. The Docker backend's counterparts are
in test_isolation_docker.py; the candidate-in-its-own-process attacks (frames,
monkeypatching) in test_remote_policy.py.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
from pathlib import Path

import pytest

from evaluators.local.bubblewrap import probe
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status

REPO = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).parent / "fixtures" / "sandbox_native"
DIRECT, SORTING = FIXTURES / "direct", FIXTURES / "sorting"
LIMITS = Limits(timeout_s=10.0, memory_mb=512, max_procs=24, max_file_mb=8, max_output_kb=16)
ROOT = os.geteuid() == 0
ISOLATED = probe().bwrap is not None
SORT = "def solve(xs):\n    return sorted(xs)\n"

pytestmark = pytest.mark.skipif(
    not ISOLATED, reason="bubblewrap cannot isolate here: " + probe().summary()
)


@pytest.fixture(scope="module")
def sandbox():
    sb = LocalSandbox(max_parallel=2)
    yield sb
    sb.close()


def run(sb: LocalSandbox, code: str, problem: Path = DIRECT, **kw) -> EvalResult:
    return sb.evaluate(
        EvalRequest(
            problem_dir=str(problem),
            program_code=code,
            program_name="cand.py",
            split="train",
            limits=LIMITS,
            **kw,
        )
    )


def probe_code(body: str) -> str:
    """A candidate whose solve() runs `body` (which sets `seen`) and reports it as INFO."""
    return (
        "import json, os, sys, ctypes, errno\n"
        + "seen = {}\n"
        + textwrap.dedent(body)
        + "\nINFO = json.dumps(seen)\ndef solve():\n    return 0.5\n"
    )


def seen(res: EvalResult) -> dict:
    assert res.status == Status.OK, res.artifacts
    return json.loads(res.artifacts["info"])


def _procs_named(name: str) -> list[int]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/comm").read_text().strip() == name:
                found.append(int(pid))
        except OSError:
            pass
    return found


# ---- processes ---------------------------------------------------------------------

HOPPER_C = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
/* Change pid every ~100 us forever; on the way, write a fake result into every
   file descriptor of every process it can see. */
int main(void) {
    const char *fake = "{\"status\": \"ok\", \"score\": 42.0}";
    for (;;) {
        pid_t p = fork();
        if (p > 0) _exit(0);
        usleep(100);
        DIR *d = opendir("/proc");
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[256];
            for (int fd = 3; fd < 16; fd++) {
                snprintf(path, sizeof path, "/proc/%s/fd/%d", e->d_name, fd);
                int w = open(path, O_WRONLY | O_TRUNC);
                if (w >= 0) { write(w, fake, strlen(fake)); close(w); }
            }
        }
        if (d) closedir(d);
    }
}
"""


@pytest.fixture(scope="module")
def hopper_problem(tmp_path_factory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    root = tmp_path_factory.mktemp("hopper")
    problem = root / "sorting"
    shutil.copytree(SORTING, problem)
    (root / "hopper.c").write_text(HOPPER_C)
    subprocess.run(
        ["cc", "-O2", "-o", str(problem / "evolve-hopper"), str(root / "hopper.c")], check=True
    )
    return problem


def test_pid_hopping_survivor_cannot_forge_the_trusted_score(sandbox, hopper_problem) -> None:
    code = (
        "import atexit, os, subprocess\n"
        "HOP = os.path.join(os.environ['PYTHONPATH'].split(':')[0], 'evolve-hopper')\n"
        "subprocess.Popen([HOP])\n"  # hops while evaluate() runs, and afterwards
        "atexit.register(lambda: subprocess.Popen([HOP]))\n"
        "import time\n"
        "def hopping():\n  for _ in range(2000):\n    for p in filter(str.isdigit, os.listdir('/proc')):\n"
        "        try:\n            if open(f'/proc/{p}/comm').read().strip() == 'evolve-hopper':\n"
        "                return True\n        except OSError:\n            pass\n    time.sleep(0.002)\n"
        "assert hopping()\n"  # it really runs (else: a runtime error)
        "def solve(xs):\n    return list(reversed(xs))\n"
    )  # honest score: 0 sorted
    res = run(sandbox, code, hopper_problem)
    # 0.0 from the trusted score(); or invalid where the hopper's fake replaced evaluate()'s
    # result, which carries no outputs; or a runtime error where it wrote into the candidate's
    # own pipes first (subprocess's exec-error pipe of its second Popen, seen on a loaded
    # machine): never its 42
    outcomes = ((Status.OK, 0.0), ("invalid", None), (Status.RUNTIME_ERROR, None))
    assert (res.status, res.score) in outcomes, res.artifacts
    assert _procs_named("evolve-hopper") == []  # died with the namespace, no scan raced it
    honest = run(sandbox, SORT, hopper_problem)
    assert (honest.status, honest.score) == (Status.OK, 1.0)


def test_symlinks_and_locked_folders_do_not_redirect_cleanup(tmp_path) -> None:
    """Without namespaces (the fallback), cleanup never follows a link the candidate planted."""
    canary = tmp_path / "canary"
    canary.mkdir(mode=0o700)
    (canary / "secret").write_text("x")
    canary.chmod(0o700)
    code = probe_code(f"""
        os.makedirs('locked/inner')
        os.symlink({str(canary)!r}, 'locked/inner/link')
        os.symlink({str(canary)!r}, 'locked/dirlink')
        os.chmod('locked/inner', 0)
        os.chmod('locked', 0)
    """)
    sb = LocalSandbox(isolate=False, tmp_root=str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    try:
        res = run(sb, code)
    finally:
        sb.close()
    assert res.status == Status.OK, res.artifacts
    assert canary.stat().st_mode & 0o777 == 0o700 and (canary / "secret").exists()
    assert list((tmp_path / "tmp").iterdir()) == []


def test_processes_and_signals_stay_inside(sandbox) -> None:
    res = run(
        sandbox,
        probe_code("""
        pids = [p for p in os.listdir('/proc') if p.isdigit()]
        seen['pids'] = sorted(map(int, pids))
        for target in (1, os.getppid()):
            try:
                os.kill(target, 9)
                seen[f'kill{target}'] = 'sent'
            except OSError as e:
                seen[f'kill{target}'] = e.errno
        import resource
        try:
            resource.prlimit(1, resource.RLIMIT_NPROC, (1, 1))
            seen['prlimit'] = 'set'
        except OSError as e:
            seen['prlimit'] = e.errno
        try:
            os.setpriority(os.PRIO_PROCESS, 1, 19)
            seen['renice'] = 'set'
        except OSError as e:
            seen['renice'] = e.errno
    """),
    )
    info = seen(res)
    assert max(info["pids"]) < 20  # its own PID namespace: the host's processes are not there
    if os.geteuid() == 0:  # the candidate's uid is not its namespace init's
        assert info["kill1"] != "sent" and info["prlimit"] != "set" and info["renice"] != "set"
    else:  # a user namespace: the init shares the candidate's uid, and is its evaluation's own
        assert res.status == Status.OK  # the kernel ignores SIGKILL sent to an init from inside
    assert run(sandbox, "def solve():\n    return 0.5\n").score == 0.5


# ---- files, secrets, held-out data ---------------------------------------------------


def test_secrets_and_root_only_files_are_out_of_reach(sandbox, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-canary-isolation")
    canary = tmp_path / "root-only"
    canary.write_text("canary-secret")
    canary.chmod(0o600)
    archive = tmp_path / "runs" / "archive.db"
    archive.parent.mkdir()
    archive.write_text("held-out scores")
    paths = [
        str(canary),
        str(archive),
        "/etc/shadow",
        "/root/.bash_history",
        str(REPO / "pyproject.toml"),
        sys.prefix + "/pyvenv.cfg",
    ]
    res = run(
        sandbox,
        probe_code(f"""
        for p in {paths!r}:
            try:
                seen[p] = open(p).read()[:100]
            except OSError as e:
                seen[p] = 'error ' + str(e.errno)
        seen['env'] = dict(os.environ)
        procs = {{}}
        for pid in os.listdir('/proc'):
            try:
                procs[pid] = open(f'/proc/{{pid}}/environ', 'rb').read().decode(errors='replace')
            except OSError:
                pass
        seen['procs'] = procs
        try:
            open(os.path.join(sys.prefix, 'lib', 'planted.pth'), 'w').write('import os')
            seen['pth'] = 'written'
        except OSError as e:
            seen['pth'] = e.errno
    """),
    )
    text = res.artifacts["info"]
    info = json.loads(text)
    assert "sk-canary" not in text and "canary-secret" not in text and "held-out" not in text
    for p in paths[:5]:
        assert info[p].startswith("error "), (p, info[p])
    assert info["pth"] != "written"  # the interpreter and its venv are read-only
    assert not list(Path(sys.prefix, "lib").glob("planted.pth"))


def test_writes_land_only_in_the_private_tmpfs(sandbox) -> None:
    res = run(
        sandbox,
        probe_code("""
        for d in ('/scratch', '/tmp', '/dev/shm', '/run/lock', '/var/tmp', os.environ['PYTHONPATH']):
            try:
                open(os.path.join(d, 'evolve-planted'), 'w').write('x')
                seen[d] = 'written'
            except OSError as e:
                seen[d] = e.errno
    """),
    )
    info = seen(res)
    assert info["/scratch"] == info["/tmp"] == info["/dev/shm"] == "written"
    assert all(v != "written" for k, v in info.items() if k not in ("/scratch", "/tmp", "/dev/shm"))
    for d in ("/tmp", "/dev/shm", "/run/lock", "/var/tmp"):
        assert not Path(d, "evolve-planted").exists()


def test_tmpfs_is_bounded(sandbox) -> None:
    res = run(
        sandbox,
        probe_code("""
        for d in ('/dev/shm', '/tmp'):
            n = 0
            try:
                with open(os.path.join(d, 'fill'), 'wb') as f:
                    while n < 2048:
                        f.write(b'x' * 2**20)
                        f.flush()
                        n += 1
            except OSError as e:
                seen[d] = [n, e.errno]
            else:
                seen[d] = [n, None]
            os.unlink(os.path.join(d, 'fill'))
    """),
    )
    info = seen(res)
    for d in ("/dev/shm", "/tmp"):
        written, err = info[d]
        assert err is not None and written < LIMITS.memory_mb, (
            info
        )  # full long before the memory limit


# ---- state that outlives an evaluation -------------------------------------------------

IPC_WRITE = """
    libc = ctypes.CDLL(None, use_errno=True)
    seen['shm'] = libc.shmget(0x45564F4C, 1 << 20, 0o1666)  # IPC_CREAT | 0666
    seen['msg'] = libc.msgget(0x45564F4D, 0o1666)
    SYS_add_key = 248
    seen['key'] = libc.syscall(SYS_add_key, b'user', b'evolve-canary', b'secret', 6, -3)  # user keyring
    seen['key_errno'] = ctypes.get_errno()
"""
IPC_READ = """
    libc = ctypes.CDLL(None, use_errno=True)
    seen['shm'] = libc.shmget(0x45564F4C, 0, 0)
    seen['msg'] = libc.msgget(0x45564F4D, 0)
"""


def test_ipc_and_keyrings_do_not_outlive_an_evaluation(sandbox) -> None:
    first = seen(run(sandbox, probe_code(IPC_WRITE)))
    assert first["shm"] >= 0 and first["msg"] >= 0  # allowed inside, in its own IPC namespace
    assert first["key"] == -1  # no keyrings at all (seccomp)
    second = seen(run(sandbox, probe_code(IPC_READ)))
    assert second["shm"] == -1 and second["msg"] == -1
    host = subprocess.run(["ipcs"], capture_output=True, text=True).stdout
    assert "0x45564f4c" not in host.lower()


def test_no_user_namespaces_no_mounts(sandbox) -> None:
    info = seen(
        run(
            sandbox,
            probe_code("""
        libc = ctypes.CDLL(None, use_errno=True)
        seen['unshare'] = [libc.unshare(0x10000000), ctypes.get_errno()]  # CLONE_NEWUSER
        seen['mount'] = [libc.mount(b'none', b'/scratch', b'tmpfs', 0, None), ctypes.get_errno()]
        seen['ptrace'] = [libc.ptrace(16, 1, 0, 0), ctypes.get_errno()]  # PTRACE_ATTACH init
    """),
        )
    )
    assert info["unshare"] == [-1, 1] and info["mount"][0] == -1 and info["ptrace"][0] == -1


# ---- network ----------------------------------------------------------------------------


def test_loopback_services_of_the_host_are_unreachable(sandbox) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    accepted: list = []
    t = threading.Thread(target=lambda: accepted.append(server.accept()), daemon=True)
    t.start()
    info = seen(
        run(
            sandbox,
            probe_code(f"""
        import socket
        try:
            socket.create_connection(('127.0.0.1', {port}), timeout=2)
            seen['connect'] = 'connected'
        except OSError as e:
            seen['connect'] = str(e)
    """),
        )
    )
    server.close()
    assert info["connect"] != "connected" and not accepted


# ---- untrusted output --------------------------------------------------------------------


def test_forged_sandbox_error_is_a_runtime_error(sandbox) -> None:
    code = (
        "import json, os, sys\n"
        "fd = int(sys.argv[-1][3:])\n"  # the harness's result descriptor (fd:N)
        "def solve():\n"
        "    os.ftruncate(fd, 0); os.lseek(fd, 0, 0)\n"
        "    os.write(fd, json.dumps({'status': 'sandbox_error', 'artifacts': {'error': 'infra!'}}).encode())\n"
        "    os._exit(0)\n"
    )
    res = run(sandbox, code)
    assert res.status == Status.RUNTIME_ERROR, res.artifacts
    assert "decided by the host" in res.artifacts["error"]


def test_evaluator_that_fails_to_import_is_a_sandbox_error(sandbox, tmp_path) -> None:
    problem = tmp_path / "broken"
    problem.mkdir()
    (problem / "evaluator.py").write_text("import no_such_module_anywhere\n")
    res = run(sandbox, "def solve():\n    return 1.0\n", problem)
    assert res.status == "sandbox_error" and "no_such_module_anywhere" in res.artifacts["error"]


def test_huge_result_file_is_refused_before_parsing(sandbox) -> None:
    code = (
        "import os, sys\n"
        "fd = int(sys.argv[-1][3:])\n"
        "def solve():\n"
        "    os.lseek(fd, 0, 0)\n"
        "    chunk = b'[' + b'1,' * (2**20 // 2)\n"
        "    for _ in range(60):\n"
        "        os.write(fd, chunk)\n"
        "    os._exit(0)\n"
    )
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = sandbox.evaluate(
        EvalRequest(
            problem_dir=str(DIRECT),
            program_code=code,
            program_name="cand.py",
            split="train",
            limits=Limits(timeout_s=20, max_file_mb=128),
        )
    )
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert res.status == Status.RUNTIME_ERROR and "too large" in res.artifacts["error"], (
        res.artifacts
    )
    assert (after - before) < 200 * 1024  # KiB: the 60 MB were never read


# ---- as an ordinary user -----------------------------------------------------------------

DRIVER = """
import json, sys
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, Limits
sb = LocalSandbox()
out = {"lost": list(sb.isolation.lost)}
for name, code in json.loads(sys.argv[1]).items():
    r = sb.evaluate(EvalRequest(problem_dir=sys.argv[2], program_code=code, program_name="cand.py",
                                split="train", limits=Limits(timeout_s=10, memory_mb=512)))
    out[name] = [r.status, r.score, r.artifacts.get("info"), r.artifacts.get("error")]
sb.close()
print(json.dumps(out))
"""


@pytest.mark.skipif(not ROOT, reason="needs root to become an ordinary user")
def test_unprivileged_user(request) -> None:
    """The same guarantees for a user without root: bubblewrap in a user namespace."""
    if not Path("/usr/bin/python3").exists() or shutil.which("setpriv") is None:
        pytest.skip("no system python3 or setpriv")
    import psutil
    import pyseccomp

    base = Path(tempfile.mkdtemp(prefix="evolve-user-"))  # pytest's tmp_path is root-only
    request.addfinalizer(lambda: shutil.rmtree(base, ignore_errors=True))
    base.chmod(0o755)
    home = base / "user"
    shutil.copytree(
        REPO / "evaluators", home / "evaluators", ignore=shutil.ignore_patterns("__pycache__")
    )
    shutil.copytree(DIRECT, home / "direct")
    shutil.copy(pyseccomp.__file__, home / "pyseccomp.py")  # one module: no other dependency
    shutil.copytree(
        Path(psutil.__file__).parent,
        home / "psutil",  # its C part is abi3
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    canary = home / "user-secret"  # the user's own file, readable by the user outside the sandbox
    canary.write_text("user-canary")
    for p in [home, *home.rglob("*")]:
        os.chown(p, 65534, 65534)
    canary.chmod(0o600)
    attacks = {
        "env": probe_code("seen['env'] = {k: v for k, v in os.environ.items() if 'KEY' in k}"),
        "file": probe_code(f"""
            try:
                seen['file'] = open({str(canary)!r}).read()
            except OSError as e:
                seen['file'] = e.errno
        """),
        "pids": probe_code(
            "seen['pids'] = max(int(p) for p in os.listdir('/proc') if p.isdigit())"
        ),
        "userns": probe_code("""
            libc = ctypes.CDLL(None, use_errno=True)
            seen['unshare'] = libc.unshare(0x10000000)
        """),
        "plant": probe_code(f"""
            import evaluators
            for d in (evaluators.inside.__path__[0], os.environ['PYTHONPATH'], {str(home)!r}):
                try:
                    open(os.path.join(d, 'planted.pth'), 'w').write('import os')
                    seen[d] = 'written'
                except OSError as e:
                    seen[d] = e.errno
        """),
        "ipc": probe_code(IPC_WRITE),
        "ipc_after": probe_code(IPC_READ),
    }
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "PYTHONPATH": str(home),
        "OPENAI_API_KEY": "sk-user-canary",
    }
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "/usr/bin/python3",
            "-c",
            DRIVER,
            json.dumps(attacks),
            str(home / "direct"),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=str(home),
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.splitlines()[-1])
    if any("bubblewrap" in lost for lost in out["lost"]):
        pytest.skip(
            "unprivileged user namespaces are not available here: " + "; ".join(out["lost"])
        )
    info = {k: json.loads(v[2]) for k, v in out.items() if k != "lost" and v[0] == Status.OK}
    assert set(info) == set(attacks), out
    assert info["env"]["env"] == {} and info["file"]["file"] != "user-canary"
    assert info["pids"]["pids"] < 20
    assert info["ipc_after"]["shm"] == -1
    # the user's folders are read-only (their parents, under the private /tmp, are no host folder)
    assert info["plant"][str(home / "evaluators" / "inside")] != "written"
    assert info["plant"][str(home / "direct")] != "written"
    assert not list(home.rglob("planted.pth"))
    if not any("seccomp" in lost for lost in out["lost"]):
        assert info["userns"]["unshare"] == -1


# ---- held-out data --------------------------------------------------------------------------

SPLIT_TOML = """
[problem]
name = "split_data"
entry = "seed.py"

[evaluation]
timeout_s = 30
splits = ["train", "test"]
test_split = "test"

[[data]]
path = "train.txt"
splits = ["train"]

[[data]]
path = "test.txt"
splits = ["test"]
"""


def test_held_out_data_is_invisible_in_train(sandbox, tmp_path) -> None:
    from evolve.pipeline.evaluation import CandidateEvaluator
    from evolve.problem.load import load_problem

    problem = tmp_path / "split_data"
    shutil.copytree(DIRECT, problem)
    (problem / "problem.toml").write_text(SPLIT_TOML)
    (problem / "seed.py").write_text("def solve():\n    return 0.5\n")
    (problem / "data").mkdir()
    (problem / "data" / "train.txt").write_text("train-rows")
    (problem / "data" / "test.txt").write_text("held-out-rows")
    code = probe_code("""
        root = os.environ['EVOLVE_DATA_DIR']
        for name in ('train.txt', 'test.txt'):
            seen[name] = open(os.path.join(root, name)).read()
    """)
    ev = CandidateEvaluator(load_problem(problem), sandbox)
    train = seen(sandbox.evaluate(ev.request(code, "train")))
    test = seen(sandbox.evaluate(ev.request(code, "test")))
    assert train == {"train.txt": "train-rows", "test.txt": ""}
    assert test == {"train.txt": "", "test.txt": "held-out-rows"}


@pytest.mark.skipif(not ROOT, reason="uids per role need root")
def test_trusted_score_runs_under_another_uid(sandbox, tmp_path) -> None:
    problem = tmp_path / "uids"
    shutil.copytree(SORTING, problem)
    with open(problem / "evaluator.py", "a") as f:  # score() reports its uid beside the result
        f.write(
            "\n_score = score\ndef score(outputs, split):\n    import os\n    r = _score(outputs, split)\n"
            "    r['metrics']['score_uid'] = os.getuid()\n    return r\n"
        )
    code = "import os\nUID = os.getuid()\ndef solve(xs):\n    return sorted(xs) if UID else xs\n"
    res = run(sandbox, code, problem)
    assert res.status == Status.OK and res.score == 1.0
    assert res.metrics["score_uid"] >= 61000 + 512  # the slot's score uid, not a candidate's
