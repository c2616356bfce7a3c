"""The candidate runs in its own confined process (evaluators/inside/worker_client.py): hostile online policies.

An online policy that shared the simulator's process could read the future
(the items to come, the availability trace) from its caller's frames or from
gc.get_objects(), or patch the evaluator module. Each hostile candidate here
hunts for the future and plays a different, recognisable policy when it finds
some: in-process (`kit.REMOTE = False`, the old way) the hunt succeeds, which
shows it would; through the worker it finds nothing and the score is exactly
the honest policy's, both in the real local sandbox and through
`kit.evaluate_and_score`. Files of the problem cannot be opened from the
worker (Landlock), and a candidate that raises, returns garbage, dies or
prints a lot ends with the statuses it always had.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evaluators.inside import codec, landlock, worker_client
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Status
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import load_problem
from tests.support.docker_support import docker_image  # noqa: F401  (the session fixture)
from tests.support.problem_hostile import END, START, load_module

ROOT = Path(__file__).resolve().parent.parent
BINPACK = ROOT / "problems" / "binpack"
SPOT = ROOT / "problems" / "spot_scheduling"
MULTI = ROOT / "problems" / "spot_multi_region"
_ids = itertools.count()

needs_landlock = pytest.mark.skipif(landlock.abi_version() < 1, reason="the kernel has no Landlock")


binpack, spot, multi = (
    load_module(BINPACK / "evaluator.py"),
    load_module(SPOT / "evaluator.py"),
    load_module(MULTI / "evaluator.py"),
)


def _program(problem: Path, block: str, prelude: str = "") -> str:
    """The problem's seed with its EVOLVE block replaced: the whole program text."""
    seed = (problem / "seed.py").read_text()
    head, rest = seed.split(START, 1)
    return f"{head}{START}\n{prelude}{block.rstrip()}\n{END}{rest.split(END, 1)[1]}"


def _write(tmp_path: Path, code: str) -> str:
    path = tmp_path / f"cand{next(_ids)}.py"
    path.write_text(code)
    return str(path)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory):
    sb = LocalSandbox(max_parallel=4, tmp_root=str(tmp_path_factory.mktemp("remote_policy")))
    yield sb
    sb.close()


def _request(problem: Path, code: str, split: str = "train") -> EvalRequest:
    return CandidateEvaluator(load_problem(problem), None).request(code, split)  # type: ignore[arg-type]


def _in_sandbox(sandbox: LocalSandbox, *jobs: tuple[Path, str, str]) -> list[EvalResult]:
    # requests are built here, not in the threads: ast.parse in several threads at once can
    # raise SystemError on CPython 3.11 before 3.11.9 (python/cpython gh-106905)
    requests = [_request(*j) for j in jobs]
    with ThreadPoolExecutor(len(jobs)) as pool:
        results = list(pool.map(sandbox.evaluate, requests))
    for r in results:
        assert "cleanup" not in r.artifacts, r.artifacts  # the worker was gone before the harness
    return results


# --- hostile policies: binpack -----------------------------------------------------------------
FIRST_FIT = "    return -np.arange(len(bins), dtype=float)\n"
BEST_FIT = "    return -(bins - item)\n"

BINPACK_FRAMES = f"""\
import sys


def _future_items():
    # walk up the callers' frames: the instances, their item sizes?
    f = sys._getframe(2)
    while f is not None:
        for v in list(f.f_locals.values()):
            for o in (v if isinstance(v, list) else [v])[:8]:
                items = getattr(o, "items", None)  # an instance: its item sizes
                if isinstance(items, np.ndarray) and items.size >= 100:
                    return True
        f = f.f_back
    return False


def priority(item, bins):
    if _future_items():
        print("FOUND THE FUTURE")
{BEST_FIT.replace("    ", "        ", 1)}{FIRST_FIT}"""

BINPACK_GC = f"""\
import gc
import sys

_found = []


def _hunt():
    ev = sys.modules.get("evaluator")
    if ev is not None:  # it could patch the packing loop, or regenerate the instances
        ev.hostile_was_here = True
        return True
    return any(type(o) is list and o and isinstance(getattr(o[0], "items", None), np.ndarray)
               for o in gc.get_objects())


def priority(item, bins):
    if not _found:
        _found.append(_hunt())
    if _found[0]:
        print("FOUND THE FUTURE")
{BEST_FIT.replace("    ", "        ", 1)}{FIRST_FIT}"""


def _binpack_score(code: str, tmp_path: Path, split: str = "quick") -> float:
    return kit.evaluate_and_score(binpack, _write(tmp_path, code), split)["score"]


@pytest.fixture(scope="module")
def binpack_honest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    tmp = tmp_path_factory.mktemp("binpack_honest")
    return {
        name: _binpack_score(_program(BINPACK, f"def priority(item, bins):\n{body}"), tmp)
        for name, body in (("first_fit", FIRST_FIT), ("best_fit", BEST_FIT))
    }


@pytest.mark.parametrize("hunt", [BINPACK_FRAMES, BINPACK_GC], ids=["frames", "gc+sys.modules"])
def test_binpack_hunt_for_future_items_finds_nothing(
    hunt, tmp_path, monkeypatch, sandbox, binpack_honest
):
    code = _program(BINPACK, hunt)
    assert binpack_honest["best_fit"] > binpack_honest["first_fit"]
    assert _binpack_score(code, tmp_path) == binpack_honest["first_fit"]  # through the worker
    [res] = _in_sandbox(sandbox, (BINPACK, code, "quick"))
    assert (res.status, res.score) == (Status.OK, binpack_honest["first_fit"]), res.artifacts
    assert "FOUND" not in res.artifacts.get("stdout", "")
    monkeypatch.setattr(kit, "REMOTE", False)  # the old way: the hunt succeeds
    assert _binpack_score(code, tmp_path) == binpack_honest["best_fit"]


# --- hostile policies: spot_scheduling and spot_multi_region -----------------------------------
SPOT_FRAMES = """\
import sys


def _future_trace():
    # walk up the callers' frames: a Scenario (its availability trace) or a Job?
    f = sys._getframe(2)
    while f is not None:
        for v in list(f.f_locals.values()):
            for o in (v if isinstance(v, list) else [v])[:8]:
                if hasattr(o, "avail") or hasattr(getattr(o, "sc", None), "avail"):
                    return True
        f = f.f_back
    return False


def decide(state):
    if state.tick == 0 and _future_trace():
        state.memory["future"] = True
        print("FOUND THE FUTURE")
    if state.memory.get("future"):
        return ON_DEMAND
    return _greedy(state)
"""

SPOT_GC = """\
import gc
import sys

_found = []


def _hunt():
    ev = sys.modules.get("evaluator")
    if ev is not None:  # it could patch the simulator's run loop
        ev.hostile_was_here = True
        return True
    return any(type(o).__name__ in ("Scenario", "Job", "Group") for o in gc.get_objects())


def decide(state):
    if not _found:
        _found.append(_hunt())
    if _found[0]:
        print("FOUND THE FUTURE")
        return ON_DEMAND
    return _greedy(state)
"""


def _greedy_as(problem: Path) -> str:
    """The problem's greedy baseline renamed _greedy (the hostile decide() falls back to it)."""
    name = "greedy.py" if problem == SPOT else "greedy_multi.py"
    text = (problem / "baselines" / name).read_text()
    return text.split(START, 1)[1].split(END, 1)[0].replace("def decide(", "def _greedy(")


def _spot_scores(evaluator, problem: Path, tmp_path: Path, *blocks: str) -> list[dict]:
    return [
        kit.evaluate_and_score(evaluator, _write(tmp_path, _program(problem, b)), "train")
        for b in blocks
    ]


@pytest.fixture(scope="module")
def spot_greedy() -> float:
    return spot.score(spot.evaluate(str(SPOT / "seed.py"), "train")["outputs"], "train")["score"]


def test_spot_hunts_for_the_future_trace_find_nothing(tmp_path, sandbox, spot_greedy):
    greedy = _greedy_as(SPOT)
    hunts = [greedy + SPOT_FRAMES, greedy + SPOT_GC]
    direct = _spot_scores(spot, SPOT, tmp_path, *hunts)
    boxed = _in_sandbox(sandbox, *((SPOT, _program(SPOT, h), "train") for h in hunts))
    best = -115.65648715277779  # uniform_progress, the best baseline (README)
    for d, b in zip(direct, boxed, strict=True):
        assert d["score"] == spot_greedy and d["metrics"]["deadline_misses"] == 0
        assert (b.status, b.score) == (Status.OK, spot_greedy), b.artifacts
        assert "FOUND" not in b.artifacts.get("stdout", "") and b.score < best


def test_spot_hunts_would_find_the_future_in_process(tmp_path, monkeypatch):
    """The control: with the candidate in the simulator's process, both hunts succeed."""
    scenarios = spot.make_scenarios("train")[:8]
    greedy = spot.sim.run_policies(kit.load(str(SPOT / "seed.py"), "decide"), scenarios, spot.parse)
    assert any("a" in codes for codes in greedy)  # greedy takes spot
    monkeypatch.setattr(kit, "REMOTE", False)
    for hunt in (SPOT_FRAMES, SPOT_GC):
        fn = kit.load(_write(tmp_path, _program(SPOT, _greedy_as(SPOT) + hunt)), "decide")
        assert all(
            set(codes) == {"A"} for codes in spot.sim.run_policies(fn, scenarios, spot.parse)
        )


def test_spot_multi_region_frames_find_nothing(tmp_path):
    honest, hunt = _spot_scores(
        multi,
        MULTI,
        tmp_path,
        _greedy_as(MULTI) + "decide = _greedy\n",
        _greedy_as(MULTI) + SPOT_FRAMES,
    )
    assert hunt["score"] == honest["score"] and hunt["metrics"] == honest["metrics"]


def test_spot_state_and_memory_in_the_worker(tmp_path, spot_greedy):
    """decide() gets a State-named record with State's repr and slots, and the same memory dict
    at every tick of a scenario, fresh for each scenario (the repeat check's re-runs too)."""
    block = (
        _greedy_as(SPOT)
        + """
def decide(state):
    n = state.memory.get("n", 0)
    if n != state.tick:
        return f"memory lost: {n} != {state.tick}"
    state.memory["n"] = n + 1
    r = repr(state)
    if not (r.startswith("State(tick=") and "memory" not in r and type(state).__name__ == "State"):
        return "bad repr " + r
    try:
        state.zone = 1
        return "State has no zone"
    except AttributeError:
        pass
    return _greedy(state)
"""
    )
    [r] = _spot_scores(spot, SPOT, tmp_path, block)
    assert r["score"] == spot_greedy, r.get("artifacts", {}).get("error")


# --- the worker cannot open the problem's files --------------------------------------------------
@needs_landlock
@pytest.mark.parametrize(
    "problem, path",
    [
        (BINPACK, BINPACK / "evaluator.py"),  # its seeds: every instance
        (SPOT, SPOT / "data" / "aws-10-26-2022" / "us-west-2b_k80_1.json"),  # a held-out test trace
        (SPOT, SPOT / "spot_sim.py"),
        (SPOT, ROOT / "evaluators" / "inside" / "kit.py"),
    ],
)
def test_opening_the_problems_files_is_refused(problem, path, tmp_path, sandbox):
    assert path.is_file()
    if problem == BINPACK:
        policy, evaluator, split = "def priority(item, bins):\n" + FIRST_FIT, binpack, "quick"
    else:
        policy, evaluator, split = _greedy_as(SPOT) + "decide = _greedy\n", spot, "train"
    code = _program(problem, f"with open({str(path)!r}, 'rb') as _f:\n    _f.read(1)\n" + policy)
    [res] = _in_sandbox(sandbox, (problem, code, split))
    assert res.status == Status.RUNTIME_ERROR and res.score is None
    assert res.artifacts["error"].startswith("PermissionError: [Errno 13] Permission denied"), (
        res.artifacts
    )
    with pytest.raises(PermissionError):  # the candidate's exception, rebuilt in the evaluator
        kit.evaluate_and_score(evaluator, _write(tmp_path, code), split)


@needs_landlock
def test_the_parents_memory_and_environment_are_refused(tmp_path):
    code = _program(
        BINPACK,
        "import os\n"
        "with open(f'/proc/{os.getppid()}/environ', 'rb') as _f:\n"
        "    _f.read(1)\n"
        "def priority(item, bins):\n" + FIRST_FIT,
    )
    with pytest.raises(PermissionError):
        kit.evaluate_and_score(binpack, _write(tmp_path, code), "quick")


def test_a_worker_forked_by_the_harness_keeps_nothing_of_it(sandbox):
    """The harness forks the worker before it imports the evaluator (worker_start.prestart): the
    worker holds its two pipes and the standard streams, no other descriptor (the result and
    status files are the harness's), a filtered environment, no evaluator module."""
    code = _program(
        BINPACK,
        "import json, os, sys\n"
        "def _open(fd):\n"
        "    try:\n"
        "        os.fstat(fd)\n"
        "        return True\n"
        "    except OSError:\n"
        "        return False\n"
        "print('SEEN', json.dumps({'fds': [fd for fd in range(256) if _open(fd)],"
        " 'env': sorted(os.environ), 'evaluator': 'evaluator' in sys.modules,"
        " 'numpy': 'numpy' in sys.modules}))\n"
        "def priority(item, bins):\n" + FIRST_FIT,
    )
    [res] = _in_sandbox(sandbox, (BINPACK, code, "quick"))
    assert res.status == Status.OK, res.artifacts
    line = next(x for x in res.artifacts["stdout"].splitlines() if x.startswith("SEEN "))
    seen = json.loads(line[5:])
    assert seen["fds"] == [0, 1, 2, 3, 4]
    assert not any(k.startswith("EVOLVE") for k in seen["env"]), seen["env"]
    assert seen["evaluator"] is False and seen["numpy"] is True


def test_in_docker_the_worker_is_confined_too(docker_image):  # noqa: F811
    """Docker's default seccomp profile lets the Landlock calls through: no isolation note,
    and the mounted problem (/problem) and kit (/opt/evolve) cannot be opened."""
    from evaluators.backends import make_sandbox

    sb = make_sandbox("docker", 1)
    try:
        seed = (BINPACK / "seed.py").read_text()
        honest = sb.evaluate(_request(BINPACK, seed, "quick"))
        assert honest.status == Status.OK and "isolation" not in honest.artifacts, honest.artifacts
        for path in ("/problem/evaluator.py", "/opt/evolve/kit.py"):
            code = seed.replace(
                "import numpy as np\n", f"import numpy as np\nopen({path!r}).read()\n"
            )
            res = sb.evaluate(_request(BINPACK, code, "quick"))
            assert res.status == Status.RUNTIME_ERROR, res.artifacts
            assert (
                res.artifacts["error"] == f"PermissionError: [Errno 13] Permission denied: {path!r}"
            )
    finally:
        sb.close()


# --- failures keep their statuses ----------------------------------------------------------------
FAILING = {
    "raises": (
        "    raise ValueError('no bin for you')\n",
        Status.RUNTIME_ERROR,
        "ValueError: no bin for you",
    ),
    "returns a str": ("    return 'garbage'\n", Status.INVALID, "must return real numbers"),
    "returns an object": (
        "    return object()\n",
        Status.INVALID,
        "must return real numbers, got dtype object",
    ),
    "returns a ragged list": ("    return [[1], [2, 3]]\n", Status.INVALID, "priority() returned"),
    "dies": (
        "    import os\n    os._exit(3)\n",
        Status.RUNTIME_ERROR,
        "the candidate's process exited with code 3",
    ),
    "kills itself": (
        "    import os, signal\n    os.kill(os.getpid(), signal.SIGKILL)\n",
        Status.RUNTIME_ERROR,
        "killed by signal 9 (SIGKILL)",
    ),
    "exits": (
        "    import sys\n    sys.exit(4)\n",
        Status.RUNTIME_ERROR,
        "the program called sys.exit(4)",
    ),
    "prints a lot": ("    print('x' * 2000)\n" + FIRST_FIT, Status.OK, ""),
}


def test_failures_keep_their_statuses(sandbox, binpack_honest):
    names = list(FAILING)
    jobs = [
        (BINPACK, _program(BINPACK, "def priority(item, bins):\n" + FAILING[n][0]), "quick")
        for n in names
    ]
    for name, res in zip(names, _in_sandbox(sandbox, *jobs), strict=True):
        _, status, fragment = FAILING[name]
        assert res.status == status, (name, res.artifacts)
        assert fragment in res.artifacts.get("error", ""), (name, res.artifacts)
        if status == Status.OK:
            assert res.score == binpack_honest["first_fit"] and "xxxx" in res.artifacts["stdout"]
        else:
            assert res.score is None


def test_printing_past_the_file_size_limit(sandbox):
    code = _program(BINPACK, "def priority(item, bins):\n    print('x' * 100_000)\n" + FIRST_FIT)
    req = dataclasses.replace(
        _request(BINPACK, code, "quick"), limits=Limits(timeout_s=30, max_file_mb=1)
    )
    res = sandbox.evaluate(req)
    assert (
        res.status == Status.RUNTIME_ERROR
        and "file size limit (1 MB) exceeded" in res.artifacts["error"]
    )


def test_spot_decide_raising_names_the_scenario(tmp_path):
    block = "def decide(state):\n    return ON_DEMAND if state.tick != 3 else 1 / 0\n"
    with pytest.raises(
        spot.sim.PolicyError,
        match=r"decide\(\) raised ZeroDivisionError: division by zero "
        r"\(scenario us-west-2a_\w+ start_tick=\d+ deadline=\d+h overhead=[\d.]+h, tick 3\)",
    ):
        spot.evaluate(_write(tmp_path, _program(SPOT, block)), "train")


# --- the protocol ----------------------------------------------------------------------------------
ECHO = """\
import numpy as np


class MyError(KeyError):
    pass


def f(kind, x=None):
    if kind == "echo":
        return x
    if kind == "values":
        return [(1, "a"), {"k": [1.5, None, True]}, np.float32(2.5), np.arange(6, dtype=np.int16).reshape(2, 3),
                b"raw", object(), np.array(["s"]), 2 ** 20000, float("nan")]
    if kind == "raise":
        raise MyError("missing")
    if kind == "exit":
        raise SystemExit(7)
    if kind == "oserror":
        raise OSError(27, "File too large")
    if kind == "memory":
        x.setdefault("calls", 0)
        x["calls"] += 1
        return x["calls"]
"""


@pytest.fixture(scope="module")
def echo(tmp_path_factory: pytest.TempPathFactory):
    path = tmp_path_factory.mktemp("echo") / "echo.py"
    path.write_text(ECHO)
    with worker_client.Remote(str(path), "f", kit.Invalid) as fn:
        yield fn


def test_values_keep_their_types(echo):
    tup, dct, f32, arr, raw, obj, strs, big, nan = echo("values")
    assert tup == (1, "a") and dct == {"k": [1.5, None, True]} and raw == b"raw"
    assert type(f32) is np.float32 and f32 == 2.5
    assert arr.dtype == np.int16 and arr.tolist() == [[0, 1, 2], [3, 4, 5]] and arr.flags.writeable
    assert type(obj).__name__ == "object" and repr(obj).startswith("<object object at")
    # not numeric: a stand-in
    assert type(strs).__name__ == "ndarray" and isinstance(strs, codec.Foreign)
    assert isinstance(big, codec.Foreign) and np.isnan(nan)
    state = spot.sim.State()
    for name in state.fields:
        setattr(state, name, 0.5)
    state.memory = kit.Memory()
    back = echo("echo", state)  # a record comes back as a stand-in with the worker's repr
    assert isinstance(back, codec.Foreign) and repr(back) == repr(state)


def test_exceptions_keep_their_names_and_bases(echo):
    with pytest.raises(KeyError) as e:
        echo("raise")
    assert type(e.value).__name__ == "MyError" and str(e.value) == "'missing'"
    assert isinstance(e.value, kit.CandidateError) and "raise MyError" in e.value.remote_traceback
    with pytest.raises(SystemExit) as e:
        echo("exit")
    assert e.value.code == 7 and not isinstance(e.value, Exception)
    with pytest.raises(OSError) as e:
        echo("oserror")
    assert e.value.errno == 27


def test_memory_is_kept_per_object(echo):
    a, b = kit.Memory(), kit.Memory()
    calls = [echo("memory", a), echo("memory", a), echo("memory", b), echo("memory", a)]
    assert calls == [1, 2, 1, 3]
    assert a == {}  # the candidate's dicts live in the worker only
    assert echo.map([("memory", b)] * 3) == [2, 3, 4]


def test_untrusted_replies_are_checked():
    ok = codec.encode({"seq": 1}, np.arange(3, dtype=np.float64))
    assert codec.decode(ok)["ok"].tolist() == [0.0, 1.0, 2.0]
    for frame in (
        b"B\x00\x00\x10\x00{}",
        b"X{}",
        b'J{"ok": {"a": ["|O8", [1], 0, 8]}}',
        b'J{"ok": {"a": ["<c16", [1], 0, 16]}}',
        b'J{"ok": {"zz": 1}}',
        b"J[1]",
        b'J{"ok": {"d": [[[1], 2]]}}',
        b'J{"ok": ' + b"[" * 100 + b"]" * 100 + b"}",
    ):
        with pytest.raises((ValueError, TypeError, RecursionError)):
            codec.decode(frame)
    head = b'{"ok": {"a": ["<f8", [4], 0, 32]}}'  # claims 4 floats, carries 3
    with pytest.raises(ValueError):
        codec.decode(b"B" + len(head).to_bytes(4, "little") + head + bytes(24))


def test_the_note_when_the_worker_is_not_confined(tmp_path):
    path = _write(tmp_path, "def f():\n    return 1\n")
    with worker_client.Remote(path, "f", kit.Invalid, confine=False) as fn:
        assert (
            fn() == 1
            and fn.note == "landlock not requested: the candidate can read the problem's files"
        )
    if landlock.abi_version() >= 6:
        with worker_client.Remote(path, "f", kit.Invalid) as fn:
            assert fn.note is None and fn.confinement["abi"] == landlock.abi_version()


def test_the_worker_process_is_gone_after_evaluate(tmp_path):
    seen = []
    code = _program(BINPACK, "import os\ndef priority(item, bins):\n" + FIRST_FIT)
    kit.evaluate(
        _write(tmp_path, code), "quick", "priority", lambda fn, split: seen.append(fn) or {}
    )
    assert seen[0]._proc.poll() is not None
