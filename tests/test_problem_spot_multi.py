"""spot_multi_region (Can't Be Late across zones): the simulator it shares with spot_scheduling
(../spot_scheduling/spot_sim.py) against hand-computed cases, one zone being exactly the
single-region problem, the trusted replay, the data files and their download, and tampering
that would not bite even in the evaluator's process. Validity and hostile candidates through
the real CLI, the baselines' README numbers, `evolve check` and a scripted 20-iteration run:
tests/test_problem_conformance.py, with problems/spot_multi_region/conformance.toml."""

from __future__ import annotations

import re
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from evaluators import kit
from tests.support.problem_contract import body_of, contract
from tests.support.problem_data import check_download_round_trip, check_shipped_data, data_files
from tests.support.problem_hostile import END, START, load_module, with_block

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "spot_multi_region"
BASELINES = PROBLEM / "baselines"
SINGLE = ROOT / "problems" / "spot_scheduling"  # holds spot_sim.py, the simulator of both


ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim  # ../spot_scheduling/spot_sim.py, through problem.toml's include and kit.include
S, D, N = sim.SPOT, sim.ON_DEMAND, sim.NONE

CONTRACT = contract(PROBLEM)  # problems/spot_multi_region/conformance.toml
# README "Reference numbers": greedy across zones, mean cost per job on train, in $
GREEDY_TRAIN = float(CONTRACT.readme("greedy_multi.py", "train")["metrics"]["mean_cost"])
# Uniform Progress that moves to the first zone with spot: the README's extra reference row
# (the scripted run's reference program in conformance.toml).
UP_MULTI = body_of(CONTRACT, CONTRACT.data["run"]["reference"])
UP_MULTI_TRAIN = 65.1508


def block_of(path: Path) -> str:
    return path.read_text().split(START, 1)[1].split(END, 1)[0]


def scenario(*avail, work_s=1800, deadline_s=3600, overhead_s=300, gap_s=600):
    zones = tuple(f"z{i}" for i in range(len(avail)))
    return sim.Scenario(
        name="tiny",
        zones=zones,
        avail=tuple(bytes(a) for a in avail),
        gap_s=gap_s,
        work_s=work_s,
        deadline_s=deadline_s,
        overhead_s=overhead_s,
    )


def play(sc, steps):
    job = sim.Job(sc)
    for a, z in steps:
        job.step(a, z)
    return job


def copy_with_include(dest: Path, problem: Path = PROBLEM) -> Path:
    """`problem` copied into dest, with ../spot_scheduling/spot_sim.py beside it (its include)."""
    (dest / "spot_scheduling").mkdir(parents=True, exist_ok=True)
    shutil.copy(SINGLE / "spot_sim.py", dest / "spot_scheduling" / "spot_sim.py")
    if problem.parent != dest:
        shutil.copytree(problem, dest / problem.name, ignore=shutil.ignore_patterns("__pycache__"))
    return dest / problem.name


# --- the simulator, by hand ------------------------------------------------------------------
def test_moving_to_a_zone_with_spot_pays_the_overhead_and_keeps_the_work():
    sc = scenario([1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1])
    job = play(sc, [(S, 0)])  # overhead 300 + progress 300 in zone 0
    job.observe()
    assert job.current == N and job.preemptions == 1 and job.zone == 0
    job.step(S, 1)  # move: a fresh overhead, 300 s of progress
    assert (job.done_s, job.zone, job.moves, job.restarts, job.spot_s) == (600, 1, 1, 2, 1200)
    job.step(S, 1)  # zone 1 keeps running with no overhead, zone 0 is irrelevant now
    job.step(S, 1)
    assert job.finished and job.tick == 4 and job.preemptions == 1
    assert job.cost == pytest.approx(2400 / 3600 * 0.97)


def test_moving_a_running_instance_restarts_it():
    job = play(scenario([0] * 6, [0] * 6), [(D, 0), (D, 0), (D, 1)])
    assert (job.done_s, job.restarts, job.moves, job.od_s) == (1200, 2, 1, 1800)
    job = play(scenario([1] * 6, [1] * 6), [(S, 0), (D, 0)])  # a type change in place restarts
    assert (job.restarts, job.moves, job.done_s) == (2, 0, 600)


def test_illegal_zone_decisions():
    sc = scenario([1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0])
    with pytest.raises(sim.IllegalDecision, match="SPOT in zone 1"):
        play(sc, [(S, 1)])
    with pytest.raises(sim.IllegalDecision, match="zone 2 at tick 0"):
        play(sc, [(D, 2)])
    with pytest.raises(sim.IllegalDecision, match="zone True"):
        play(sc, [(D, True)])


def test_overhead_carry_over_deadline_miss_and_short_last_tick():
    job = play(scenario([0] * 6, [0] * 6, overhead_s=720), [(D, 1)])
    assert (job.done_s, job.overhead_left_s, job.od_s) == (0, 120, 600)
    # gap 195 s, deadline 400 s: ticks of 195, 195 and 10 s
    sc = scenario([0] * 3, work_s=400, deadline_s=400, overhead_s=0, gap_s=195)
    assert sc.n_ticks == 3
    job = play(sc, [(D, 0)] * 3)
    assert job.finished and job.od_s == 400
    job = play(scenario([0] * 3, work_s=401, deadline_s=400, overhead_s=0, gap_s=195), [(D, 0)] * 3)
    assert job.over and not job.finished and job.work_left_s == 1


def test_codes_rle_and_replay():
    assert [sim.code(S, 2), sim.code(D, 0), sim.code(N, 5)] == ["c", "A", "."]
    assert [sim.action_of(c) for c in "cA."] == [(S, 2), (D, 0), (N, -1)]
    assert sim.encode("aaB..") == "a2B1.2" and sim.decode("a2B1.2", 5) == "aaB.."
    for bad in ("a0", "a", "?3", "a3 ", "a01"):
        with pytest.raises(ValueError):
            sim.decode(bad, 10)
    sc = scenario([1, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1])
    assert sim.replay(sc, "abbb").finished
    with pytest.raises(sim.IllegalDecision, match="SPOT in zone 0"):
        sim.replay(sc, "aa")
    with pytest.raises(sim.IllegalDecision, match="zone 2"):
        sim.replay(sc, "c")
    with pytest.raises(sim.IllegalDecision, match="stops at tick 2"):
        sim.replay(sc, "ab")
    with pytest.raises(sim.IllegalDecision, match="after the job ended"):
        sim.replay(sc, "abbbb")


def test_one_simulator_for_both_problems():
    """The single-region problem is this simulator with one zone: its evaluator includes the same
    spot_sim.py, and a zone that is never used changes nothing."""
    single = load_module(SINGLE / "evaluator.py")
    assert single.sim is sim and Path(sim.__file__) == SINGLE / "spot_sim.py"
    assert not (PROBLEM / "simulator.py").exists() and not (SINGLE / "simulator.py").exists()
    steps = [(S, 0), (S, 0), (N, 0), (S, 0), (S, 0)]  # test_problem_spot's preemption case
    one = play(scenario([1, 1, 0, 1, 1, 1]), steps)
    two = play(scenario([1, 1, 0, 1, 1, 1], [0] * 6), steps)
    for job in (one, two):
        assert job.finished and (job.done_s, job.spot_s, job.od_s) == (1800, 2400, 0)
        assert (job.restarts, job.preemptions, job.moves) == (2, 1, 0)
    assert one.cost == two.cost == 2400 * 0.97 / 3600


def test_one_zone_multi_region_costs_exactly_the_single_region_score(tmp_path):
    """greedy_multi, run with this problem's state and decide() rules on spot_scheduling's
    one-zone train scenarios, makes greedy's decisions and costs exactly its single-region score."""
    single = load_module(SINGLE / "evaluator.py")
    scs = single.make_scenarios("train")
    multi_greedy = kit.load(
        str(with_block(PROBLEM, block_of(BASELINES / "greedy_multi.py"), tmp_path)), "decide"
    )
    single_greedy = kit.load(
        str(with_block(SINGLE, block_of(SINGLE / "baselines" / "greedy.py"), tmp_path)), "decide"
    )
    as_multi, _ = sim.run_all(multi_greedy, scs, ev.parse, sim.ZoneState)
    as_single, _ = sim.run_all(single_greedy, scs, single.parse, sim.State)
    assert as_multi == as_single
    multi = sim.judge(as_multi, scs, True, "")
    assert multi["metrics"]["moves"] == 0
    assert multi["score"] == single.score(as_single, "train")["score"] == -124.13409756944445


# --- scenarios, data and the trusted score ---------------------------------------------------
def test_scenarios_are_zone_subsets_on_disjoint_time_windows():
    train, test = ev.make_scenarios("train"), ev.make_scenarios("test")
    assert len(train) == len(test) == 6 * 8 * 2 * 2
    assert {s.zones for s in train} == set(ev.SUBSETS.values())
    assert {len(s.zones) for s in train} == {2, 3, 5, 9}
    need = -(-70 * 3600 // 195)
    start = [int(re.search(r"start_tick=(\d+)", s.name).group(1)) for s in train + test]
    assert all(t + need <= ev.SPLIT_TICK for t in start[: len(train)])  # train: days 0-24.8
    assert all(t >= ev.SPLIT_TICK for t in start[len(train) :])  # test: later windows only
    assert {(s.work_s, s.deadline_s, s.overhead_s, s.gap_s) for s in train} == {
        (48 * 3600, d * 3600, o, 195) for d in (52, 70) for o in (180, 720)
    }
    with pytest.raises(ValueError, match="unknown split 'quick'"):
        ev.make_scenarios("quick")


def test_a_run_seed_resamples_the_zones_region_by_region():
    kit.use_data_seed(7)
    try:
        private = ev.make_scenarios("test")
    finally:
        kit.use_data_seed(None)
    public = ev.make_scenarios("test")
    assert len(private) == len(public) and private[0].avail != public[0].avail
    # zones of one region lose spot together: in a region's outage no zone has spot
    a, b = (bytes([1, 1, 0, 0, 0, 1] * 40), bytes([0, 1, 0, 0, 1, 1] * 40))
    ra, rb = sim.resample_together([a, b], [1, 2, 3])
    assert len(ra) == len(rb) == len(a) and ra != a
    outage = [k for k in range(len(ra)) if not ra[k] and not rb[k]]
    assert outage and sim.resample_together([a, b], [1, 2, 3]) == [ra, rb]
    # the split's stretch only: the held-out traces come from ticks 11,000 on
    traces = {z: sim.load_trace(str(PROBLEM / "data" / ev.TRACE_DIR / f"{z}_v100_1.json"), ev.GAP_S)
              for z in ev.ZONES}  # fmt: skip
    test = ev._private_traces(traces, ev.SPLIT_TICK, len(traces["us-east-1a"]), 5)
    assert all(len(t) == len(traces["us-east-1a"]) - ev.SPLIT_TICK for t in test.values())


def test_data_ships_in_the_problem_folder_with_checksums_and_sources(monkeypatch):
    monkeypatch.delenv("EVOLVE_DATA_DIR", raising=False)
    check_shipped_data(PROBLEM, 9, "aws-02-15-2023")
    toml = tomllib.loads((PROBLEM / "problem.toml").read_text())
    assert toml["problem"]["include"] == ["../spot_scheduling/spot_sim.py"]


def test_the_download_code_fetches_and_verifies_a_trace(tmp_path):
    check_download_round_trip(PROBLEM, data_files(PROBLEM)[-1], tmp_path)


def test_score_rejects_malformed_or_illegal_logs():
    scs = ev.make_scenarios("train")
    od = [f"A{-(-(s.work_s + s.overhead_s) // s.gap_s)}" for s in scs]
    r = ev.score({"decisions": od}, "train")
    assert r["metrics"]["mean_cost"] == pytest.approx(147.2625) and r["metrics"]["savings_pct"] == 0
    for outputs, fragment in [
        ({"decisions": od[:-1]}, f"{len(scs)} logs"),
        ({"decisions": ["Z890", *od[1:]]}, "zone 25"),
        ({"decisions": [f"A{int(od[0][1:]) - 1}", *od[1:]]}, f"stops at tick {int(od[0][1:]) - 1}"),
        ({"decisions": [f"{od[0]}.1", *od[1:]]}, "after the job ended"),
        ({"decisions": [f"A{scs[0].n_ticks + 1}", *od[1:]]}, "more than"),
    ]:
        r = ev.score(outputs, "train")
        assert r["valid"] is False and fragment in r["artifacts"]["error"], (fragment, r)
    r = ev.score({"decisions": [f".{s.n_ticks}" for s in scs]}, "train")
    assert r["valid"] is False and r["metrics"]["deadline_misses"] == len(scs)


def test_the_actions_are_the_seeds_fixed_code():
    """The baselines (blocks only: the conformance suite checks them) never define them."""
    for path in (p for p in BASELINES.glob("*.py") if not p.is_symlink()):  # links: the seed
        assert "SPOT, ON_DEMAND, NONE =" not in path.read_text(), path.name
    assert "SPOT, ON_DEMAND, NONE =" in (PROBLEM / "seed.py").read_text()


def test_decide_sees_the_zones():
    sc = ev.make_scenarios("train")[-1]  # all 9 zones
    seen = []

    def decide(state):
        seen.append(repr(state))
        return (D, 8)

    assert sim.run_policy(decide, sc, ev.parse, ev.BENCHMARK.state).startswith("I")
    fields = [
        kv.split("=")[0] for kv in re.sub(r"\(.*?\)", "", seen[0][len("State(") : -1]).split(", ")
    ]
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
        "zone",
        "zones",
        "n_zones",
        "spot",
        "spot_price",
        "on_demand_price",
    ]
    assert "zone=8, zones=('us-east-2a', 'us-west-2c', " in seen[1] and "n_zones=9" in seen[1]


def test_up_multi_beats_both_baselines(tmp_path):
    out = ev.evaluate(str(with_block(PROBLEM, UP_MULTI, tmp_path)), "train")
    r = ev.score(out["outputs"], "train")
    assert r["metrics"]["mean_cost"] == pytest.approx(UP_MULTI_TRAIN, abs=0.01)
    assert r["metrics"]["moves"] > 0


# --- tampering ------------------------------------------------------------------------------
def test_the_patches_find_no_evaluator_even_in_its_process(tmp_path, monkeypatch):
    """evaluate() runs the candidate in its own process: the conformance suite's patch_sim and
    patch_log (through the CLI there) do not reach the evaluator's modules even in the
    process that runs evaluate() (they did when the candidate was imported there). The
    patched evaluator is a copy of the folders, so it includes its own spot_sim module."""
    patched = load_module(copy_with_include(tmp_path) / "evaluator.py")
    assert patched.sim is not ev.sim
    monkeypatch.setitem(sys.modules, "evaluator", patched)
    for prelude in (CONTRACT.tamper(n)["prelude"] for n in ("patch_sim", "patch_log")):
        prog = with_block(
            PROBLEM, block_of(BASELINES / "greedy_multi.py"), tmp_path, prelude=prelude
        )
        out = patched.evaluate(str(prog), "train")
        assert (
            patched.sim.SPOT_PRICE == sim.SPOT_PRICE
            and patched.sim.run_policies.__name__ == "run_policies"
        )
        scored = patched.score(out["outputs"], "train")
        assert scored["metrics"]["mean_cost"] == pytest.approx(GREEDY_TRAIN, abs=0.01)
