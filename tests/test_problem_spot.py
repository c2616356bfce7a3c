"""spot_scheduling (Can't Be Late, one zone): the shared simulator (spot_sim.py) against
hand-computed one-zone cases, the trusted replay, the data files and their download, and
tampering that would not bite even in the evaluator's process. Validity and hostile candidates
through the real CLI, the baselines' README numbers, `evolve check` and a scripted 20-iteration
run: tests/test_problem_conformance.py, with problems/spot_scheduling/conformance.toml."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from evaluators import kit
from tests.support.problem_contract import contract
from tests.support.problem_data import check_download_round_trip, check_shipped_data, data_files
from tests.support.problem_hostile import END, START, load_module, with_block

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "spot_scheduling"
BASELINES = PROBLEM / "baselines"


ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim  # spot_sim.py, through kit.include
S, D, N = sim.SPOT, sim.ON_DEMAND, sim.NONE

CONTRACT = contract(PROBLEM)  # problems/spot_scheduling/conformance.toml
# README "Reference numbers": greedy's (the seed's) mean cost per job on train, in $
GREEDY_TRAIN = float(CONTRACT.readme("greedy.py", "train")["metrics"]["mean_cost"])


def block_of(path: Path) -> str:
    text = path.read_text()
    return text.split(START, 1)[1].split(END, 1)[0]


def scenario(avail, work_s=1800, deadline_s=3600, overhead_s=300, gap_s=600):
    """A one-zone scenario: the single-region case of the shared simulator."""
    return sim.Scenario(
        name="tiny",
        zones=("z0",),
        avail=(bytes(avail),),
        gap_s=gap_s,
        work_s=work_s,
        deadline_s=deadline_s,
        overhead_s=overhead_s,
    )


def play(sc, actions):
    job = sim.Job(sc)
    for a in actions:
        job.step(a)
    return job


# --- the simulator, by hand (one zone) -------------------------------------------------------
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
    assert job.moves == 0  # one zone: never a move


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


def test_spot_while_unavailable_or_another_zone_is_illegal():
    job = play(scenario([1, 0, 1, 1, 1, 1]), [S])
    with pytest.raises(sim.IllegalDecision, match=r"SPOT in zone 0 \(z0\) at tick 1"):
        job.step(S)
    with pytest.raises(sim.IllegalDecision, match="zone 1 at tick 0 is not one of 0..0"):
        sim.Job(scenario([1] * 6)).step(D, 1)


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
    # one character per tick: "a" = SPOT, "A" = ON_DEMAND (in zone 0), "." = NONE
    assert [sim.code(S, 0), sim.code(D, 0), sim.code(N, 0)] == ["a", "A", "."]
    assert sim.encode("aaaAA.") == "a3A2.1" and sim.encode("") == ""
    assert sim.decode("a3A2.1", 10) == "aaaAA."
    for bad in ("a0", "#3", "a3A", "a01", " a3", "a3 ", "a-1"):
        with pytest.raises(ValueError):
            sim.decode(bad, 10)
    with pytest.raises(ValueError, match="more than 5"):
        sim.decode("a3A3", 5)
    with pytest.raises(ValueError, match="must be a string"):
        sim.decode(["a3"], 5)


def test_replay_demands_exactly_one_decision_per_tick():
    sc = scenario([0] * 6)
    assert sim.replay(sc, "AAAA").finished
    with pytest.raises(sim.IllegalDecision, match="stops at tick 3"):
        sim.replay(sc, "AAA")
    with pytest.raises(sim.IllegalDecision, match="after the job ended"):
        sim.replay(sc, "AAAAA")
    assert not sim.replay(sc, "......").finished  # ran to the deadline: a miss
    with pytest.raises(sim.IllegalDecision, match="SPOT in zone 0 .* at tick 0"):
        sim.replay(sc, "a")


# --- scenarios, data and the trusted score ---------------------------------------------------
def test_scenarios_cover_the_issue_setting():
    train, test = ev.make_scenarios("train"), ev.make_scenarios("test")
    assert len(train) == len(test) == 4 * 30 * 2 * 2
    assert all(s.name.startswith("us-west-2a_") and s.zones == ("us-west-2a",) for s in train)
    assert all(s.name.startswith("us-west-2b_") for s in test)  # held out: the other zone
    assert {(s.work_s, s.deadline_s, s.overhead_s, s.gap_s) for s in train} == {
        (48 * 3600, d * 3600, o, 600) for d in (52, 70) for o in (180, 720)
    }
    assert [s.name for s in ev.make_scenarios("train")] == [s.name for s in train]  # seeded
    starts = {s.name.split()[1] for s in train if s.name.startswith("us-west-2a_k80_1 ")}
    assert len(starts) == 30
    with pytest.raises(ValueError, match="unknown split 'quick'"):
        ev.make_scenarios("quick")


def _spells(trace: bytes) -> tuple[list[int], list[int]]:
    return sim._runs(trace)


def test_a_run_seed_resamples_every_trace_from_its_own_spells():
    public = ev.make_scenarios("test")
    kit.use_data_seed(7)
    try:
        private, again = ev.make_scenarios("test"), ev.make_scenarios("test")
    finally:
        kit.use_data_seed(None)
    assert [s.avail for s in again] == [s.avail for s in private]  # one run, one workload
    assert len(private) == len(public) and private[0].avail != public[0].avail
    for instance in ev.INSTANCES:
        path = PROBLEM / "data" / ev.TRACE_DIR / f"us-west-2b_{instance}.json"
        trace = sim.load_trace(str(path), ev.GAP_S)
        new = sim.resample(trace, 11)
        assert len(new) == len(trace) and new != trace and new == sim.resample(trace, 11)
        stretches = [new[k : k + 100] for k in range(0, len(new) - 100, 20)]
        varied = [w for w in stretches if sum(w[i] != w[i + 1] for i in range(99)) >= 4]
        assert varied and all(trace.find(w) < 0 for w in varied)  # no public stretch to find
        (up, down), (up2, down2) = _spells(trace), _spells(new)
        assert max(up2[1:-1] + [1]) <= 1.2 * max(up) + 1 and min(up2[1:-1] or [1]) >= 1
        assert max(down2[1:-1] + [1]) <= 1.2 * max(down) + 1
    assert sim.resample(bytes([1]) * 50, 3) == bytes([1]) * 50  # always available stays so
    assert sim.resample(bytes([1, 0]) * 5, 3, length=30).count(1) > 0


def test_data_ships_in_the_problem_folder_with_checksums_and_sources(monkeypatch):
    monkeypatch.delenv("EVOLVE_DATA_DIR", raising=False)
    check_shipped_data(PROBLEM, 8, "aws-10-26-2022")


def test_the_download_code_fetches_and_verifies_a_trace(tmp_path):
    check_download_round_trip(PROBLEM, data_files(PROBLEM)[0], tmp_path)


def baseline(name: str, dest: Path) -> Path:
    """A baseline completed with the seed's fixed code, as `evolve eval` runs it."""
    return with_block(PROBLEM, block_of(BASELINES / name), dest)


def test_score_rejects_malformed_or_illegal_logs(tmp_path):
    scs = ev.make_scenarios("train")
    good = ev.evaluate(str(baseline("on_demand.py", tmp_path)), "train")["outputs"]["decisions"]
    assert good[0] == "A289"  # 180 s overhead + 48 h of work in 600 s ticks
    cases = [
        ({}, "one log per scenario"),
        ({"decisions": good[:-1]}, f"{len(scs)} logs"),
        ({"decisions": ["A288", *good[1:]]}, "stops at tick 288"),
        ({"decisions": ["A290", *good[1:]]}, "after the job ended"),
        ({"decisions": ["#289", *good[1:]]}, "malformed decision log"),
        ({"decisions": [289, *good[1:]]}, "must be a string"),
        ({"decisions": ["a289", *good[1:]]}, "spot is not available"),  # k80_1 is rarely available
        (
            {"decisions": ["B289", *good[1:]]},
            "zone 1 at tick 0 is not one of 0..0",
        ),  # one zone only
    ]
    for outputs, fragment in cases:
        r = ev.score(outputs, "train")
        assert r["valid"] is False and fragment in r["artifacts"]["error"], (fragment, r)
    r = ev.score({"decisions": [f".{s.n_ticks}" for s in scs]}, "train")
    assert r["valid"] is False and r["metrics"]["deadline_misses"] == len(scs)
    assert "missed the deadline in 480 of 480" in r["artifacts"]["error"]
    assert "moves" not in r["artifacts"]["error"]  # one zone: nothing about moves


def test_decide_sees_the_single_region_state():
    sc = ev.make_scenarios("train")[0]
    seen = []

    def decide(state):
        seen.append(repr(state))
        try:
            state.zone = 1  # a multi-region field: not there
        except AttributeError:
            seen.append("no zone")
        return D

    assert sim.run_policy(decide, sc, ev.parse, ev.BENCHMARK.state) == "A" * 289
    fields = [kv.split("=")[0] for kv in seen[0][len("State(") : -1].split(", ")]
    assert fields == [
        "tick",
        "elapsed",
        "gap",
        "deadline",
        "time_left",
        "work_total",
        "work_done",
        "work_left",
        "restart_overhead",
        "overhead_left",
        "has_spot",
        "current",
        "spot_price",
        "on_demand_price",
    ]
    assert seen[0].startswith("State(tick=0, elapsed=0.0, gap=0.16666666666666666, deadline=52.0, ")
    assert seen[1] == "no zone"


def test_the_actions_are_the_seeds_fixed_code():
    """The baselines (blocks only: the conformance suite checks them) never define them."""
    for path in (p for p in BASELINES.glob("*.py") if not p.is_symlink()):  # links: the seed
        assert "SPOT, ON_DEMAND, NONE =" not in path.read_text(), path.name
    assert "SPOT, ON_DEMAND, NONE =" in (PROBLEM / "seed.py").read_text()


def test_decision_logs_stay_small():
    out = ev.evaluate(str(PROBLEM / "seed.py"), "train")
    assert out["artifacts"]["scenarios"] == "480"
    assert len(json.dumps(out["outputs"])) < 200_000
    assert ev.score(out["outputs"], "train")["metrics"]["mean_cost"] == pytest.approx(
        GREEDY_TRAIN, abs=0.01
    )


# --- tampering ------------------------------------------------------------------------------
def test_the_patches_find_no_evaluator_even_in_its_process(tmp_path, monkeypatch):
    """evaluate() runs the candidate in its own process: the patches of the conformance
    suite's patch_prices and patch_log (through the CLI there) do not reach the evaluator's
    modules even in the process that runs evaluate() (they did when the candidate was
    imported there). The patched evaluator is a copy of the folder, so it includes its own
    spot_sim module."""
    copy = tmp_path / "spot_scheduling"
    shutil.copytree(PROBLEM, copy, ignore=shutil.ignore_patterns("__pycache__"))
    patched = load_module(copy / "evaluator.py")
    assert patched.sim is not ev.sim
    monkeypatch.setitem(sys.modules, "evaluator", patched)
    for prelude in (CONTRACT.tamper(n)["prelude"] for n in ("patch_prices", "patch_log")):
        prog = with_block(PROBLEM, block_of(BASELINES / "greedy.py"), tmp_path, prelude=prelude)
        out = patched.evaluate(str(prog), "train")
        assert (
            patched.sim.SPOT_PRICE == sim.SPOT_PRICE
            and patched.sim.run_policies.__name__ == "run_policies"
        )
        scored = patched.score(out["outputs"], "train")
        assert scored["metrics"]["mean_cost"] == pytest.approx(GREEDY_TRAIN, abs=0.01)
