"""--sandbox ray on a real two-node Ray cluster on 127.0.0.1 (evolve/testing/ray_support.py).

Evaluations spread over both nodes and score as the local sandbox scores them; a worker
node killed mid-run is survived; kill -9 of the controller leaves nothing running on the
cluster and `resume` neither loses nor repeats a finished evaluation; Ctrl-C cancels what
is in flight; an evaluation whose worker keeps dying is recorded as the infrastructure's
failure; a missing package, a dead address or an impossible request is one line.
"""

from __future__ import annotations

import collections
import hashlib
import itertools
import json
import os
import signal
import sqlite3
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest

from evaluators.backends import make_sandbox, ray_options
from evaluators.local.sandbox import LocalSandbox
from evaluators.ray.bundle import BundleError, pack, relocate, unpack
from evaluators.sandbox import EvalRequest, Status
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import ROOT, archive_json, evolve, popen, run_args
from evolve.testing.ray_support import AUTH_OFF, LoopbackCluster, ray_env, ray_sandbox
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from tests.support.data_seeds import leaderboard_draw, leaderboard_scored
from tests.support.docker_support import docker_image  # noqa: F401 (a fixture)
from tests.support.problem_hostile import block_body

BINPACK = ROOT / "problems" / "binpack"
MARGIN_S = 60  # a guard for a loaded machine: a limit, never a timing

# f(x) forks a child that sleeps under a marker (so a test can find where it runs),
# sleeps itself, then answers; every reply is different code, so nothing is a duplicate
CANDIDATE = """def f(x):
    import os, time
    if os.fork() == 0:
        os.execv("/bin/sleep", ["{mark}-{k}", "{child_s}"])
    time.sleep({sleep_s})
    return x + {k}
"""

PLAIN = """def f(x):
    import time
    time.sleep({sleep_s})
    return x + {k}
"""

EVALUATOR = """
import hashlib, importlib.util, os, uuid

from evaluators import kit

def evaluate(program_path, split):
    code = open(program_path).read()
    marks = os.environ.get("MARKS")
    if marks:  # in the kit's worker: an evaluator that runs its candidate itself is Landlocked
        f = kit.load(program_path, "f")  # with it in the fallback, and could not write marks
        value = float(f(3))
        f.close()
    else:  # in this process, where the candidate may fork its marked sleeper
        spec = importlib.util.spec_from_file_location("cand", program_path)
        m = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(m)
        value = float(m.f(3))
    if marks:  # one file per finished evaluation (the sandbox's isolation is off for this)
        h = hashlib.sha256(code.encode()).hexdigest()[:16]
        data = kit.seed(1)  # the run's data, or the leaderboard's (evolve/pipeline/leaderboard.py)
        open(os.path.join(marks, f"end-{h}-{data}-{uuid.uuid4().hex}"), "w").close()
    return {"outputs": {"value": value}}

def score(outputs, split):
    return {"score": -abs(outputs["value"] - 10.0), "metrics": {"value": outputs["value"]}}
"""


@pytest.fixture(scope="module", autouse=True)
def drivers_without_token_auth():
    """This process's Ray drivers (the in-process sandboxes) agree with the test cluster."""
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ.update(AUTH_OFF)
    yield
    if before is None:
        os.environ.pop("RAY_AUTH_MODE", None)
    else:
        os.environ["RAY_AUTH_MODE"] = before


@pytest.fixture(scope="module")
def cluster(drivers_without_token_auth):
    c = LoopbackCluster(cpus_per_node=1).start(workers=1)
    try:
        yield c
    finally:
        c.stop()


def sleepy_problem(root: Path, timeout_s: int = 60) -> Path:
    root.mkdir()
    (root / "problem.toml").write_text(
        '[problem]\nname = "sleepy"\nentry = "seed.py"\n'
        f'[evaluation]\ntimeout_s = {timeout_s}\nsplits = ["train"]\n'
    )
    (root / "seed.py").write_text(
        "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"
    )
    (root / "evaluator.py").write_text(EVALUATOR)
    return root


class Script:
    """Candidates that sleep `sleep_s` with a marked child (none with `fork=False`); the
    first `slow` sleep `slow_s`."""

    def __init__(
        self, mark: str, sleep_s: float = 1.0, slow: int = 0, slow_s: float = 120, fork: bool = True
    ) -> None:
        self.mark, self.sleep_s, self.slow, self.slow_s = mark, sleep_s, slow, slow_s
        self.template = CANDIDATE if fork else PLAIN
        self.count = itertools.count(1)
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> Reply:
        with self.lock:
            k = next(self.count)
        s = self.slow_s if k <= self.slow else self.sleep_s
        body = self.template.format(mark=self.mark, k=k, child_s=600, sleep_s=s)
        return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


def marked(mark: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline", "status"]):
        if p.info["status"] != psutil.STATUS_ZOMBIE and mark in " ".join(p.info["cmdline"] or []):
            out.append(p)
    return out


def ray_tasks_running() -> list[int]:
    """Ray workers busy with one of our evaluations, on any node of this machine."""
    return [
        p.pid
        for p in psutil.process_iter(["cmdline", "status"])
        if p.info["status"] != psutil.STATUS_ZOMBIE
        and " ".join(p.info["cmdline"] or []).startswith("ray::evaluate_on_node")
    ]


def task_worker(p: psutil.Process) -> psutil.Process | None:
    """The Ray worker process an evaluation's process descends from."""
    try:
        for a in p.parents():
            if " ".join(a.cmdline()).startswith("ray::"):
                return a
    except psutil.Error:
        pass
    return None


def wait_for(cond, guard_s: float, what: str, proc=None):
    end = time.monotonic() + guard_s
    while True:
        got = cond()
        if got:
            return got
        if proc is not None:
            assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < end, what
        time.sleep(0.1)


def statuses(runs: Path, run_id: str) -> dict[int, tuple]:
    if not (runs / "archive.db").exists():
        return {}
    db = sqlite3.connect(runs / "archive.db")
    try:
        rows = db.execute(
            "SELECT iteration, status, score, code_hash FROM programs WHERE run_id=? AND status!='pending'",
            (run_id,),
        ).fetchall()
    except sqlite3.OperationalError:
        rows = []
    finally:
        db.close()
    return {r[0]: r for r in rows}


def ray_args(cluster: LoopbackCluster, *extra: str) -> tuple[str, ...]:
    """A run on the cluster, one evaluation per iteration: no tuned children (slots of their own)."""
    return (*ray_sandbox(cluster), "--tune-evals", "0", *extra)


# ---------------------------------------------------------------- the bundle


def test_bundle_carries_the_folder_its_outside_data_and_includes(tmp_path):
    problem, data, shared = tmp_path / "p", tmp_path / "d", tmp_path / "shared.py"
    (problem / "__pycache__").mkdir(parents=True)
    (problem / "evaluator.py").write_text("x = 1\n")
    (problem / "__pycache__" / "evaluator.cpython-311.pyc").write_bytes(b"junk")
    data.mkdir()
    (data / "held_out.csv").write_text("1,2\n")
    (data / "held_out.csv").chmod(0o600)
    shared.write_text("y = 2\n")
    crates = (
        tmp_path / "cache" / "cargo" / "0123"
    )  # fetched on the controller (evolve/problem/crates.py)
    (crates / "rand").mkdir(parents=True)
    (crates / "rand" / "Cargo.toml").write_text("[package]\n")
    b = pack(str(problem), str(data), (str(shared),), str(crates))
    assert b.digest == pack(str(problem), str(data), (str(shared),), str(crates)).digest
    where = unpack(b.data, b.digest, str(tmp_path / "node"))
    assert unpack(b.data, b.digest, str(tmp_path / "node")) == where  # unpacked once
    assert (where / "problem" / "evaluator.py").read_text() == "x = 1\n"
    assert not (where / "problem" / "__pycache__").exists()
    assert (where / "data" / "held_out.csv").stat().st_mode & 0o777 == 0o644  # every uid reads
    req = EvalRequest(
        problem_dir=str(problem),
        program_code="",
        program_name="seed.py",
        split="train",
        data_dir=str(data),
        includes=(str(shared),),
        hidden=(str(data / "held_out.csv"),),
        crates=str(crates),
    )
    moved = relocate(req, b.roots, where)
    assert Path(moved.problem_dir) == where / "problem"
    assert moved.crates and Path(moved.crates, "rand", "Cargo.toml").read_text() == "[package]\n"
    assert Path(moved.hidden[0]).read_text() == "1,2\n"
    assert Path(moved.includes[0]).read_text() == "y = 2\n"
    with pytest.raises(BundleError, match="do not match their hash"):
        unpack(b.data + b"x", b.digest, str(tmp_path / "other"))


def test_an_include_beside_the_problem_lies_where_the_kit_looks_for_it(tmp_path):
    """problem.toml's `include = ["../other/sim.py"]`: the kit resolves it next to the
    evaluator, so on the node it must lie at `problem/../other/sim.py` as on the controller
    (it lay in include/0/, and every problem with an include failed on Ray)."""
    problems = tmp_path / "problems"
    (problems / "p").mkdir(parents=True)
    (problems / "other").mkdir()
    (problems / "p" / "evaluator.py").write_text("x = 1\n")
    (problems / "other" / "sim.py").write_text("y = 2\n")
    far = tmp_path / "far.py"  # an include above the problems' folder keeps the old place
    far.write_text("z = 3\n")
    includes = (str(problems / "p" / ".." / "other" / "sim.py"), str(far))
    b = pack(str(problems / "p"), None, includes)
    where = unpack(b.data, b.digest, str(tmp_path / "node"))
    assert (where / "problem" / ".." / "other" / "sim.py").read_text() == "y = 2\n"
    req = EvalRequest(problem_dir=str(problems / "p"), program_code="", program_name="seed.py",
                      split="train", includes=includes)  # fmt: skip
    moved = relocate(req, b.roots, where)
    assert Path(moved.includes[0]).resolve() == (where / "other" / "sim.py").resolve()
    assert Path(moved.includes[1]).read_text() == "z = 3\n"
    assert Path(moved.includes[1]).parent.parent == where / "include"


# ---------------------------------------------------------------- the same scores, both nodes


def test_scores_match_the_local_sandbox_and_spread_over_both_nodes(cluster):
    problem = load_problem(BINPACK)
    fixed = problem.seed_code
    first_fit = (BINPACK / "baselines" / "first_fit.py").read_text()
    from evolve.edits.blocks import complete_from_seed

    candidates = {
        "seed": fixed,
        "first_fit": complete_from_seed(first_fit, fixed),
        "syntax": fixed.replace(
            block_body(BINPACK / "seed.py"), "def priority(item, bins):\n    return (\n"
        ),
        "wrong_shape": fixed.replace(
            block_body(BINPACK / "seed.py"), "def priority(item, bins):\n    return bins[:1]\n"
        ),
        "raises": fixed.replace(
            block_body(BINPACK / "seed.py"), "def priority(item, bins):\n    return UNKNOWN\n"
        ),
    }
    local = CandidateEvaluator(problem, LocalSandbox(max_parallel=2))
    ray = CandidateEvaluator(
        problem, make_sandbox("ray", 2, ray=ray_options(problem, cluster.address, "local"))
    )
    try:
        with ThreadPoolExecutor(4) as pool:  # several in flight: the tasks spread
            remote = dict(
                zip(
                    candidates,
                    pool.map(lambda c: ray.run_split(c, "quick"), candidates.values()),
                    strict=True,
                )
            )
            again = list(pool.map(lambda c: ray.run_split(c, "quick"), [fixed] * 4))
        for name, code in candidates.items():
            want = local.run_split(code, "quick")
            got = remote[name]
            assert (got.status, got.score, got.metrics) == (
                want.status,
                want.score,
                want.metrics,
            ), name
        assert [r.score for r in again] == [remote["seed"].score] * 4
        assert remote["seed"].status == Status.OK and remote["syntax"].status == "syntax_error"
        placements = ray.sandbox.placements  # type: ignore[attr-defined]
        assert len(placements) == 2 and sum(placements.values()) == len(candidates) + 4, placements
    finally:
        ray.sandbox.close()
        local.sandbox.close()


def test_a_node_with_docker_runs_the_candidate_in_its_container(cluster, docker_image):  # noqa: F811
    problem = load_problem(BINPACK)
    code = problem.seed_code.replace(
        block_body(BINPACK / "seed.py"),
        "def priority(item, bins):\n    import socket\n    socket.create_connection(('127.0.0.1', 9), 1)\n    return -bins\n",
    )
    ray = CandidateEvaluator(
        problem, make_sandbox("ray", 1, ray=ray_options(problem, cluster.address, "docker"))
    )
    local = CandidateEvaluator(problem, LocalSandbox())
    try:
        seed, want = (
            ray.run_split(problem.seed_code, "quick"),
            local.run_split(problem.seed_code, "quick"),
        )
        assert (seed.status, seed.score) == (Status.OK, want.score)
        netted = ray.run_split(code, "quick")  # --network none: not even the node's loopback
        assert netted.status == "runtime_error", netted.artifacts
    finally:
        ray.sandbox.close()
        local.sandbox.close()


# ---------------------------------------------------------------- faults


def test_a_worker_node_killed_mid_run_is_survived(cluster, tmp_path):
    problem = sleepy_problem(tmp_path / "sleepy")
    mark = f"zzray{uuid.uuid4().hex[:10]}"
    runs = tmp_path / "runs"
    worker_sessions = {os.getsid(w.pid) for w in cluster.workers}

    def on_worker_node() -> bool:
        for p in marked(mark):
            w = task_worker(p)
            try:
                if w is not None and os.getsid(w.pid) in worker_sessions:
                    return True
            except ProcessLookupError:
                pass
        return False

    try:
        with ScriptedLLM(Script(mark, sleep_s=3)) as srv:
            proc = popen(
                *run_args(
                    srv.base_url,
                    runs,
                    *ray_args(cluster, "--parallel", "2", "--run-id", "node"),
                    problem=problem,
                    iterations=6,
                ),
                extra_env=ray_env(),
            )
            wait_for(on_worker_node, 180, "no evaluation ever ran on the worker node", proc)
            cluster.kill_worker()  # mid-evaluation: its raylet, object store and workers
            out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-3000:]
        assert "lost to the infrastructure" in err, err[-3000:]
        rows = statuses(runs, "node")
        assert sorted(rows) == list(range(7))
        assert {r[1] for r in rows.values()} == {"ok"}, rows  # resubmitted, never blamed
    finally:
        for p in marked(mark):
            p.kill()
        if not cluster.workers:
            cluster.add_worker()


def test_an_evaluation_whose_worker_keeps_dying_is_the_infrastructures_failure(cluster, tmp_path):
    problem = load_problem(sleepy_problem(tmp_path / "sleepy"))
    mark = f"zzdie{uuid.uuid4().hex[:10]}"
    code = problem.seed_code.replace(
        "def f(x):\n    return x\n", CANDIDATE.format(mark=mark, k=1, child_s=600, sleep_s=60)
    )
    sandbox = make_sandbox("ray", 1, ray=ray_options(problem, cluster.address, "local", retries=1))
    killed: list[int] = []
    stop = threading.Event()

    def killer():  # the node's worker dies under every attempt (an OOM kill, a lost node)
        while not stop.is_set():
            for p in marked(mark):
                w = task_worker(p)
                if w is not None and w.pid not in killed:
                    killed.append(w.pid)
                    w.kill()
            time.sleep(0.05)

    t = threading.Thread(target=killer, daemon=True)
    t.start()
    try:
        r = CandidateEvaluator(problem, sandbox).run_split(code, "train")
    finally:
        stop.set()
        t.join()
        sandbox.close()
        for p in marked(mark):
            p.kill()
    assert r.status == Status.SANDBOX_ERROR and r.score is None
    assert "infrastructure failure, not the candidate's" in r.artifacts["error"], r.artifacts
    assert r.artifacts["attempts"] == "2" and len(killed) == 2


def test_a_task_that_ray_cancels_is_resubmitted(cluster, tmp_path):
    problem = load_problem(sleepy_problem(tmp_path / "sleepy"))
    mark = f"zzcancel{uuid.uuid4().hex[:10]}"
    code = problem.seed_code.replace(
        "def f(x):\n    return x\n", CANDIDATE.format(mark=mark, k=7, child_s=600, sleep_s=3)
    )
    sandbox = make_sandbox("ray", 1, ray=ray_options(problem, cluster.address, "local"))
    import ray

    def cancel_once():  # as an operator's `ray.cancel` would, while the candidate runs
        wait_for(lambda: marked(mark), 120, "the candidate never started")
        for task in list(sandbox._inflight):  # type: ignore[attr-defined]
            ray.cancel(task, force=True)

    t = threading.Thread(target=cancel_once, daemon=True)
    t.start()
    try:
        r = CandidateEvaluator(problem, sandbox).run_split(code, "train")
    finally:
        t.join()
        sandbox.close()
        for p in marked(mark):
            p.kill()
    assert (r.status, r.metrics) == (Status.OK, {"value": 10.0}), r.artifacts
    assert sandbox.infra_failures == 1  # type: ignore[attr-defined]


def test_without_an_address_a_private_instance_lives_as_long_as_the_command():
    def instances() -> set[int]:
        return {p.pid for p in psutil.process_iter(["name"]) if p.info["name"] == "gcs_server"}

    before = instances()
    args = ("eval", BINPACK, BINPACK / "seed.py", "--stage", "quick", "--json")
    r = evolve(*args, "--sandbox", "ray", "--ray-node-sandbox", "local", extra_env=ray_env())
    local = evolve(*args, "--sandbox", "local")
    assert r.returncode == 0, r.stderr[-3000:]
    assert json.loads(r.stdout)["score"] == json.loads(local.stdout)["score"]
    assert "sandbox: ray ran 1 evaluations on 1 node(s)" in r.stderr
    end = time.monotonic() + MARGIN_S
    while instances() - before and time.monotonic() < end:
        time.sleep(0.2)
    assert instances() - before == set()  # ray.shutdown() stopped what ray.init() started


def test_kill_9_of_the_controller_leaves_nothing_running_on_the_cluster(cluster, tmp_path):
    problem = sleepy_problem(tmp_path / "sleepy", timeout_s=300)
    mark = f"zzkill{uuid.uuid4().hex[:10]}"
    runs = tmp_path / "runs"
    try:
        with ScriptedLLM(Script(mark, slow=100, slow_s=250)) as srv:  # far past MARGIN_S
            proc = popen(
                *run_args(
                    srv.base_url,
                    runs,
                    *ray_args(cluster, "--parallel", "2", "--run-id", "k9"),
                    problem=problem,
                    iterations=4,
                ),
                extra_env=ray_env(),
            )
            wait_for(lambda: len(marked(mark)) >= 2, 240, "the slow candidates never started", proc)
            proc.send_signal(signal.SIGKILL)
            proc.communicate()
        # Ray kills the dead driver's workers, and each evaluation dies with its worker
        # (bubblewrap's namespace goes with it), long before the candidates' own deadline
        end = time.monotonic() + MARGIN_S
        while (marked(mark) or ray_tasks_running()) and time.monotonic() < end:
            time.sleep(0.2)
        assert marked(mark) == [] and ray_tasks_running() == []
    finally:
        for p in marked(mark):
            p.kill()


def test_resume_after_kill_9_neither_loses_nor_repeats_an_evaluation(
    cluster, tmp_path, walkable_tmp
):
    problem = sleepy_problem(tmp_path / "sleepy", timeout_s=30)
    marks = walkable_tmp / "marks"  # written by the slot uid, which has no capability
    marks.mkdir()
    marks.chmod(0o777)
    runs = tmp_path / "runs"
    env = {**ray_env(), "EVOLVE_LOCAL_ISOLATION": "off"}  # the evaluator writes its marks
    args = ray_args(
        cluster,
        "--parallel",
        "2",
        "--run-id",
        "k",
        "--env",
        f"MARKS={marks}",
        "--allow-unisolated-ray-nodes",
    )
    with ScriptedLLM(Script("unused", sleep_s=0.5, fork=False)) as srv:
        proc = popen(
            *run_args(srv.base_url, runs, *args, problem=problem, iterations=10), extra_env=env
        )
        wait_for(
            lambda: len(statuses(runs, "k")) >= 4 and ray_tasks_running(),
            240,
            "the run never got going",
            proc,
        )
        before = statuses(runs, "k")
        ends_before = end_marks(marks)
        scored = leaderboard_scored(runs, "k")  # after the marks: all it names were recorded
        proc.send_signal(signal.SIGKILL)  # with evaluations in flight on the cluster
        proc.communicate()
        resumed = evolve(
            "resume", "k", "--runs-dir", runs, "--no-progress", extra_env=env, timeout=600
        )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    after = statuses(runs, "k")
    assert sorted(after) == list(range(11))  # none lost
    for it, row in before.items():
        assert after[it] == row  # nothing finished before the kill changed
    ends, board = end_marks(marks), leaderboard_draw(runs, "sleepy")
    for it, row in before.items():  # a finished evaluation never ran again on the same data
        if row[1] == "ok" and it > 0:  # (a best's leaderboard scoring cut short: measured again)
            h = hashlib.sha256(_code(runs, "k", it).encode()).hexdigest()[:16]
            then = {key: n for key, n in ends_before.items()
                    if key[0] == h and (key[1] != board or it in scored)}  # fmt: skip
            assert then and all(ends[key] == n == 1 for key, n in then.items()), (it, then, ends)
    run = archive_json(runs, "runs")[0]
    assert run["status"] == "finished" and run["iterations_done"] == 10


def test_ctrl_c_cancels_what_is_in_flight(cluster, tmp_path, cpu_hog):
    """Under load, and started with SIGINT ignored (as a shell starts a background job),
    the way this once failed: Ctrl-C must stop the run all the same."""
    problem = sleepy_problem(tmp_path / "sleepy", timeout_s=300)
    mark = f"zzint{uuid.uuid4().hex[:10]}"
    runs = tmp_path / "runs"
    try:
        with ScriptedLLM(Script(mark, slow=100, slow_s=250)) as srv:
            proc = popen(
                *run_args(
                    srv.base_url,
                    runs,
                    *ray_args(cluster, "--parallel", "2", "--run-id", "int"),
                    problem=problem,
                    iterations=4,
                ),
                extra_env=ray_env(),
                ignore_sigint=True,
            )
            wait_for(lambda: len(marked(mark)) >= 2, 240, "the slow candidates never started", proc)
            proc.send_signal(signal.SIGINT)
            out, err = proc.communicate(timeout=300)
        assert proc.returncode == 130, err[-3000:]
        # cancelled, not waited for: the candidates would sleep 250 s, their deadline is 300 s
        end = time.monotonic() + MARGIN_S
        while (marked(mark) or ray_tasks_running()) and time.monotonic() < end:
            time.sleep(0.2)
        assert marked(mark) == [] and ray_tasks_running() == []
        run = archive_json(runs, "runs")[0]
        assert run["status"] == "stopped" and run["stop_reason"] == "interrupted"
    finally:
        for p in marked(mark):
            p.kill()


# ---------------------------------------------------------------- bad input, one line


def test_a_dead_address_is_one_line(tmp_path):
    with socket_port() as port:
        r = evolve(
            "eval",
            BINPACK,
            BINPACK / "seed.py",
            "--sandbox",
            "ray",
            "--ray-address",
            f"127.0.0.1:{port}",
        )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert f"--ray-address 127.0.0.1:{port}: no Ray cluster answers there" in r.stderr


def test_without_the_ray_package_the_error_says_how_to_install_it(tmp_path):
    fake = tmp_path / "fake" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('No module named ray')\n")
    r = evolve(
        "eval",
        BINPACK,
        BINPACK / "seed.py",
        "--sandbox",
        "ray",
        extra_env={"PYTHONPATH": f"{fake.parent}:{ROOT}"},
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "the `ray` package is not installed: pip install -e '.[ray]'" in r.stderr


def test_a_problem_asking_for_more_than_the_cluster_has_is_one_line(cluster, tmp_path):
    problem = sleepy_problem(tmp_path / "gpu")
    toml = problem / "problem.toml"
    toml.write_text(toml.read_text() + "[evaluation.resources]\ngpus = 1\n")
    r = evolve("eval", problem, problem / "seed.py", *ray_sandbox(cluster), extra_env=ray_env())
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "each evaluation asks for 1 GPU, and the cluster has 0 in all" in r.stderr


class socket_port:
    """A loopback port that nothing listens on (bound, never listening)."""

    def __enter__(self) -> int:
        import socket

        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return self.s.getsockname()[1]

    def __exit__(self, *exc) -> None:
        self.s.close()


def end_marks(marks: Path) -> collections.Counter:
    """Finished evaluations by (code hash, the data they drew)."""
    return collections.Counter(tuple(f.name.split("-")[1:3]) for f in marks.glob("end-*"))


def _code(runs: Path, run_id: str, it: int) -> str:
    db = sqlite3.connect(runs / "archive.db")
    (code,) = db.execute(
        "SELECT code FROM programs WHERE run_id=? AND iteration=?", (run_id, it)
    ).fetchone()
    db.close()
    return code


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ("gpus = -1", "gpus"),
        ("cpus = 0", "cpus"),
        ("disks = 2", "unknown key 'disks'"),
    ],
)
def test_bad_resources_name_the_field(tmp_path, table, fragment):
    problem = sleepy_problem(tmp_path / "bad")
    toml = problem / "problem.toml"
    toml.write_text(toml.read_text() + f"[evaluation.resources]\n{table}\n")
    r = evolve("check", problem, "--sandbox", "local")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "[evaluation] resources" in line and fragment in line, line


def test_declared_resources_reach_the_ray_task(tmp_path):
    problem = sleepy_problem(tmp_path / "res")
    toml = problem / "problem.toml"
    toml.write_text(
        toml.read_text().replace("timeout_s = 60", "timeout_s = 60\nmemory_mb = 512")
        + "[evaluation.resources]\ncpus = 0.5\ngpus = 1\n"
    )
    opts = ray_options(load_problem(problem), "127.0.0.1:6379", "docker")
    assert (opts.cpus, opts.gpus, opts.memory_mb, opts.node.sandbox) == (0.5, 1.0, 512, "docker")
