"""spot_scheduling (Can't Be Late, one zone): the simulator against hand-computed cases, the
trusted replay, validity and hostile candidates through the real CLI, the baselines' README
numbers, and a scripted 20-iteration run."""

from __future__ import annotations

import importlib.util
import itertools
import json
import re
import shutil
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from evolve.data import DataFile, default_data_dir, ensure
from tests.cli_helpers import archive_json, block, evolve, run_args
from tests.problem_hostile import (
    END,
    FAKE_PRINT,
    START,
    assert_fails,
    eval_json,
    short_timeout_copy,
    with_block,
)
from tests.scripted_llm import Reply, ScriptedLLM

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "spot_scheduling"
BASELINES = PROBLEM / "baselines"
_ids = itertools.count()


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"_spot_test_{next(_ids)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sim = load(PROBLEM / "simulator.py")
ev = load(PROBLEM / "evaluator.py")
S, D, N = sim.SPOT, sim.ON_DEMAND, sim.NONE

# README "Reference numbers": mean cost per job ($) and savings vs always on-demand (%).
EXPECTED = {
    ("on_demand.py", "train"): (147.2625, 0.0),
    ("on_demand.py", "test"): (147.2625, 0.0),
    ("greedy.py", "train"): (124.1341, 15.71),
    ("greedy.py", "test"): (103.5956, 29.65),
    ("uniform_progress.py", "train"): (115.6565, 21.46),
    ("uniform_progress.py", "test"): (93.2839, 36.65),
}


def block_of(path: Path) -> str:
    text = path.read_text()
    return text.split(START, 1)[1].split(END, 1)[0]


def scenario(avail, work_s=1800, deadline_s=3600, overhead_s=300, gap_s=600):
    return sim.Scenario(name="tiny", avail=bytes(avail), gap_s=gap_s, work_s=work_s,
                        deadline_s=deadline_s, overhead_s=overhead_s)


def play(sc, actions):
    job = sim.Job(sc)
    for a in actions:
        job.step(a)
    return job


# --- the simulator, by hand ------------------------------------------------------------------
def test_on_demand_pays_one_overhead_and_is_released_when_done():
    job = play(scenario([0] * 6), [D, D, D, D])  # 300 s overhead + 300, 600, 600, then 300 s
    assert job.finished and job.over and job.tick == 4
    assert (job.od_s, job.spot_s, job.restarts, job.preemptions) == (2100, 0, 1, 0)
    assert job.cost == pytest.approx(2100 / 3600 * 3.06)
    assert job.current == N  # released the moment the work is done


def test_preemption_loses_the_instance_but_keeps_the_work():
    sc = scenario([1, 1, 0, 1, 1, 1])
    job = sim.Job(sc)
    job.step(S)  # overhead 300 + progress 300
    job.step(S)  # progress 600 -> 900
    assert job.observe() is False and job.current == N and job.preemptions == 1
    job.step(N)
    assert job.done_s == 900 and job.spot_s == 1200
    job.step(S)  # restart: overhead 300 + 300 -> 1200
    job.step(S)  # 600 -> 1800, done
    assert job.finished and job.restarts == 2 and job.spot_s == 2400 and job.od_s == 0
    assert job.cost == pytest.approx(2400 / 3600 * 0.97)


def test_overhead_longer_than_a_tick_carries_over():
    job = play(scenario([0] * 6, overhead_s=720), [D])
    assert (job.done_s, job.overhead_left_s, job.od_s) == (0, 120, 600)
    job.step(D)
    assert (job.done_s, job.overhead_left_s, job.od_s, job.restarts) == (480, 0, 1200, 1)


def test_preempted_during_its_overhead_pays_and_gains_nothing():
    job = play(scenario([1, 0, 0, 0, 0, 0], overhead_s=720), [S])
    job.step(D)  # spot gone at tick 1: on-demand starts from scratch
    assert job.preemptions == 1 and job.spot_s == 600 and job.done_s == 0
    assert job.overhead_left_s == 120 and job.restarts == 2


def test_switching_type_restarts_and_none_discards_the_overhead():
    job = play(scenario([1] * 6), [S, D])  # 300+300 on spot, then a fresh 300 s overhead
    assert (job.done_s, job.restarts, job.spot_s, job.od_s) == (600, 2, 600, 600)
    job = play(scenario([0] * 6, overhead_s=720), [D, N, D])
    assert job.restarts == 2 and job.overhead_left_s == 120 and job.done_s == 0


def test_spot_while_unavailable_is_illegal():
    job = play(scenario([1, 0, 1, 1, 1, 1]), [S])
    with pytest.raises(sim.IllegalDecision, match="SPOT at tick 1"):
        job.step(S)


def test_deadline_pressure_and_the_short_last_tick():
    # 1800 s of work, 300 s overhead, 3 ticks to the deadline: on-demand from the start is short
    job = play(scenario([0] * 3, deadline_s=1800), [D, D, D])
    assert job.over and not job.finished and job.work_left_s == 300
    # a deadline of 1500 s leaves a 300 s last tick: 1400 s of work fits, 1600 s does not
    sc = scenario([0] * 3, work_s=1400, deadline_s=1500, overhead_s=0)
    assert sc.n_ticks == 3
    job = play(sc, [D, D, D])
    assert job.finished and job.od_s == 1400
    job = play(scenario([0] * 3, work_s=1600, deadline_s=1500, overhead_s=0), [D, D, D])
    assert job.over and not job.finished and job.done_s == 1500
    with pytest.raises(sim.IllegalDecision, match="after the job ended"):
        job.step(D)


def test_rle_round_trip_and_strict_decoding():
    assert sim.encode("SSSDDN") == "S3D2N1" and sim.encode("") == ""
    assert sim.decode("S3D2N1", 10) == "SSSDDN"
    for bad in ("S0", "X3", "S3D", "S01", "s3", " S3", "S3 "):
        with pytest.raises(ValueError):
            sim.decode(bad, 10)
    with pytest.raises(ValueError, match="more than 5"):
        sim.decode("S3D3", 5)
    with pytest.raises(ValueError, match="must be a string"):
        sim.decode(["S3"], 5)


def test_replay_demands_exactly_one_decision_per_tick():
    sc = scenario([0] * 6)
    assert sim.replay(sc, "DDDD").finished
    with pytest.raises(sim.IllegalDecision, match="stops at tick 3"):
        sim.replay(sc, "DDD")
    with pytest.raises(sim.IllegalDecision, match="after the job ended"):
        sim.replay(sc, "DDDDD")
    assert not sim.replay(sc, "NNNNNN").finished  # ran to the deadline: a miss
    with pytest.raises(sim.IllegalDecision, match="SPOT at tick 0"):
        sim.replay(sc, "S")


# --- scenarios, data and the trusted score ---------------------------------------------------
def test_scenarios_cover_the_issue_setting():
    train, test = ev.make_scenarios("train"), ev.make_scenarios("test")
    assert len(train) == len(test) == 4 * 30 * 2 * 2
    assert all(s.name.startswith("us-west-2a_") for s in train)
    assert all(s.name.startswith("us-west-2b_") for s in test)  # held out: the other zone
    assert {(s.work_s, s.deadline_s, s.overhead_s, s.gap_s) for s in train} == {
        (48 * 3600, d * 3600, o, 600) for d in (52, 70) for o in (180, 720)
    }
    assert [s.name for s in ev.make_scenarios("train")] == [s.name for s in train]  # seeded
    starts = {s.name.split()[1] for s in train if s.name.startswith("us-west-2a_k80_1 ")}
    assert len(starts) == 30


def test_data_files_are_declared_with_checksums_and_download(tmp_path):
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    files = [DataFile(**d) for d in cfg["data"]]
    assert len(files) == 8 and all(f.url.startswith("https://raw.githubusercontent.com/skypilot-org/")
                                   for f in files)
    ensure(files, default_data_dir(), download=False)  # the local copy matches every checksum
    # the download path, with the local copy standing in for GitHub
    local = [DataFile(f.path, (default_data_dir() / f.path).as_uri(), f.sha256) for f in files[:2]]
    ensure(local, tmp_path)
    assert all((tmp_path / f.path).is_file() for f in local)


def test_score_rejects_malformed_or_illegal_logs():
    scs = ev.make_scenarios("train")
    good = ev.evaluate(str(BASELINES / "on_demand.py"), "train")["outputs"]["decisions"]
    assert good[0] == "D289"  # 180 s overhead + 48 h of work in 600 s ticks
    cases = [
        ({}, "one log per scenario"),
        ({"decisions": good[:-1]}, f"{len(scs)} logs"),
        ({"decisions": ["D288", *good[1:]]}, "stops at tick 288"),
        ({"decisions": ["D290", *good[1:]]}, "after the job ended"),
        ({"decisions": ["Q289", *good[1:]]}, "malformed decision log"),
        ({"decisions": [289, *good[1:]]}, "must be a string"),
        ({"decisions": ["S289", *good[1:]]}, "spot is not available"),  # k80_1 is rarely available
    ]
    for outputs, fragment in cases:
        r = ev.score(outputs, "train")
        assert r["valid"] is False and fragment in r["artifacts"]["error"], (fragment, r)
    r = ev.score({"decisions": [f"N{s.n_ticks}" for s in scs]}, "train")
    assert r["valid"] is False and r["metrics"]["deadline_misses"] == len(scs)
    assert "missed the deadline in 480 of 480" in r["artifacts"]["error"]


def test_evaluate_rejects_stateful_policies(tmp_path):
    body = "_calls = [0]\n\ndef decide(state):\n    _calls[0] += 1\n    return ON_DEMAND if _calls[0] < 100000 else NONE\n"
    r = ev.evaluate(str(with_block(PROBLEM, body, tmp_path)), "train")
    assert r["valid"] is False and "not repeatable" in r["artifacts"]["error"]


def test_seed_and_baselines_share_the_fixed_code():
    files = [PROBLEM / "seed.py", *sorted(BASELINES.glob("*.py"))]
    assert {p.name for p in files[1:]} == {"greedy.py", "uniform_progress.py", "on_demand.py"}
    fixed = {re.sub(r"^.*\n", "", p.read_text().split(START)[0]) + p.read_text().split(END)[1]
             for p in files}
    assert len(fixed) == 1
    assert block_of(PROBLEM / "seed.py") == block_of(BASELINES / "greedy.py")


def test_train_evaluation_is_fast():
    t0 = time.perf_counter()
    out = ev.evaluate(str(PROBLEM / "seed.py"), "train")
    ev.score(out["outputs"], "train")
    assert time.perf_counter() - t0 < 5.0  # ~1.2 s on one core; the issue allows 10 s
    assert len(json.dumps(out["outputs"])) < 200_000  # the decision logs stay small


# --- through the real CLI and sandbox --------------------------------------------------------
def _eval_all(jobs):
    with ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda a: eval_json(*a), jobs))


def test_baselines_reproduce_the_readme_numbers():
    keys = list(EXPECTED)
    outs = _eval_all([(PROBLEM, BASELINES / name, split) for name, split in keys])
    for (name, split), out in zip(keys, outs, strict=True):
        cost, savings = EXPECTED[name, split]
        assert out["status"] == "ok" and out["returncode"] == 0, (name, split, out)
        assert out["metrics"]["mean_cost"] == pytest.approx(cost, abs=0.01), (name, split)
        assert out["metrics"]["savings_pct"] == pytest.approx(savings, abs=0.01), (name, split)
        assert out["score"] == pytest.approx(-out["metrics"]["mean_cost"])
        assert out["metrics"]["deadline_misses"] == 0 and out["metrics"]["scenarios"] == 480
        assert out["eval_s"] < 10


BAD = {
    "not an action": ("def decide(state):\n    return 'FAST'\n", "invalid", "returned 'FAST'"),
    "nan": ("def decide(state):\n    return float('nan')\n", "invalid", "returned nan"),
    "lowercase": ("def decide(state):\n    return 'spot'\n", "invalid", "expected one of"),
    "exception": ("def decide(state):\n    return {}[state.tick]\n", "runtime_error",
                  "decide() raised KeyError"),
    "spot while unavailable": ("def decide(state):\n    return SPOT\n", "invalid",
                               "SPOT while spot is not available"),
    "misses deadlines": ("def decide(state):\n    return SPOT if state.has_spot else NONE\n",
                         "invalid", "missed the deadline"),
    "no decide": ("def policy(state):\n    return NONE\n", "invalid", "no callable decide"),
}


def test_bad_policies_fail_with_a_clear_error_and_no_score(tmp_path):
    names = list(BAD)
    progs = [with_block(PROBLEM, BAD[n][0], tmp_path) for n in names]
    outs = _eval_all([(PROBLEM, p, "train") for p in progs])
    for name, out in zip(names, outs, strict=True):
        _, statuses, fragment = BAD[name]
        assert_fails(out, fragment, tuple(statuses.split()))
    miss = outs[names.index("misses deadlines")]
    assert miss["metrics"]["deadline_misses"] > 0 and "mean_cost" not in miss["metrics"]
    assert "us-west-2a_" in miss["artifacts"]["error"]  # names the scenario


PATCH_PRICES = """\
import sys
_ev = sys.modules["evaluator"]
_ev.sim.SPOT_PRICE = _ev.sim.ON_DEMAND_PRICE = 0.0
_ev.sim.Job.cost = property(lambda self: 0.0)
_ev.sim.Scenario.on_demand_cost = property(lambda self: 1e9)
_ev.score = lambda outputs, split: {"score": 1e9, "metrics": {"mean_cost": 0.0}}
_ev._check_repeatable = lambda *a: None
"""
PATCH_LOG = """\
import sys
_ev = sys.modules["evaluator"]
_ev.run_policy = lambda decide, sc: "N" * 288  # claims a free job
"""


def test_tampering_in_memory_or_printing_a_score_gains_nothing(tmp_path):
    greedy = block_of(BASELINES / "greedy.py")
    progs = [
        with_block(PROBLEM, greedy, tmp_path, prelude=PATCH_PRICES),
        with_block(PROBLEM, greedy, tmp_path, prelude=FAKE_PRINT),
        with_block(PROBLEM, greedy, tmp_path, prelude=PATCH_LOG),
    ]
    patched, printed, faked = _eval_all([(PROBLEM, p, "train") for p in progs])
    honest = EXPECTED["greedy.py", "train"][0]
    for out in (patched, printed):
        assert out["status"] == "ok" and out["metrics"]["mean_cost"] == pytest.approx(honest, abs=0.01)
        assert out["score"] == pytest.approx(-honest, abs=0.01)
    assert_fails(faked, "stops at tick 288", "invalid")


def test_the_patches_do_bite_in_process_but_score_runs_clean(tmp_path, monkeypatch):
    """Without the sandbox's second process the PATCH_PRICES candidate would win: this is what
    the clean score() process prevents (the CLI test above shows the honest result)."""
    patched = load(PROBLEM / "evaluator.py")
    monkeypatch.setitem(sys.modules, "evaluator", patched)
    prog = with_block(PROBLEM, block_of(BASELINES / "greedy.py"), tmp_path, prelude=PATCH_PRICES)
    out = patched.evaluate(str(prog), "train")
    assert patched.score(out["outputs"], "train")["score"] == 1e9  # tampered, in-process
    honest = ev.score(out["outputs"], "train")  # a module the candidate never touched
    assert honest["metrics"]["mean_cost"] == pytest.approx(EXPECTED["greedy.py", "train"][0], abs=0.01)


def test_an_infinite_loop_times_out(tmp_path):
    fast = short_timeout_copy(PROBLEM, tmp_path, 3)
    prog = with_block(fast, "def decide(state):\n    while True:\n        pass\n", tmp_path)
    t0 = time.monotonic()
    out = eval_json(fast, prog, "train")
    assert_fails(out, "timeout", "timeout")
    assert time.monotonic() - t0 < 30


def test_check_passes():
    r = evolve("check", str(PROBLEM))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "seed on train: ok" in r.stdout and "seed on test (held out): ok" in r.stdout


def test_a_scripted_20_iteration_run(tmp_path):
    up = block_of(BASELINES / "uniform_progress.py")
    replies = [
        block(up, "Keep pace with the uniform-progress line."),
        block(block_of(BASELINES / "on_demand.py"), "Never risk spot."),
        block("def decide(state):\n    return 'FAST'\n", "A broken idea."),
        block("def decide(state):\n    return SPOT if state.has_spot else NONE\n", "Spot only."),
        Reply("No code this time."),
        block(up.replace("2 * state.restart_overhead", "3 * state.restart_overhead"), "More hysteresis."),
    ]
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(*run_args(srv.base_url, runs, problem=PROBLEM, iterations=20), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    [run] = archive_json(runs, "runs")
    assert run["iterations_done"] == 20 and run["status"] == "finished"
    best = archive_json(runs, "best", "--problem", "spot_scheduling")
    assert best["score"] >= -EXPECTED["uniform_progress.py", "train"][0] - 0.01  # beats the greedy seed
    assert best["test_score"] is not None
    shutil.rmtree(runs, ignore_errors=True)
