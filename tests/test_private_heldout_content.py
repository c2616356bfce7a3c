"""Issue 37 item 1: a candidate that carries a problem's public data gains nothing held out.

Each attack (tests/support/attacks_public_data.py) embeds the public data, read here at test time,
and looks its task up in it: it wins on the public data (so each test can fail), and under
a run's private data seed, where the held-out content is drawn anew (telemetry_synth.py,
spot_sim.resample), it scores like the problem's best baseline. The candidates run in the
kit's confined worker process; the private baselines' numbers are the README's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.support import attacks_public_data as attacks
from tests.support.data_seeds import RUN_DATA_SEED, scored_at
from tests.support.problem_contract import body_of, contract
from tests.support.problem_hostile import load_module

ROOT = Path(__file__).resolve().parent.parent
TELEMETRY = ROOT / "problems" / "telemetry_repair"
SPOT = ROOT / "problems" / "spot_scheduling"
MULTI = ROOT / "problems" / "spot_multi_region"

sys.path.insert(0, str(TELEMETRY))  # the evaluator imports its simulator, as in the sandbox


def _scores(
    evaluator, problem: Path, body: str, tmp: Path, split: str = "test"
) -> tuple[float, float]:
    """(public, private) held-out score of an EVOLVE block."""
    path = tmp / "candidate.py"
    path.write_text(f"# EVOLVE-BLOCK-START\n{body}\n# EVOLVE-BLOCK-END\n")
    out = []
    for seed in (None, RUN_DATA_SEED):
        r = scored_at(seed, evaluator, problem, path, tmp, split)  # type: ignore[arg-type]
        assert r.get("valid", True) and r.get("score") is not None, r.get("artifacts")
        out.append(r["score"])
    return out[0], out[1]


def _baseline(evaluator, problem: Path, name: str, tmp: Path) -> float:
    r = scored_at(RUN_DATA_SEED, evaluator, problem, problem / "baselines" / name, tmp, "test")
    return r["score"]


def test_telemetry_snapshots_carried_find_nothing_under_a_run_seed(tmp_path):
    ev = load_module(TELEMETRY / "evaluator.py")
    sim = ev.sim
    public = sim.load_snapshots(sim.TRAIN_FILE) + sim.load_snapshots(sim.TEST_FILE)
    attack = _scores(ev, TELEMETRY, attacks.telemetry_block(public), tmp_path)
    # What the public data legitimately teaches: each link's typical load (the train mean),
    # the same candidate with that one "snapshot", which never matches.
    train = sim.load_snapshots(sim.TRAIN_FILE)
    mean = sim.Snapshot("train mean", {}, {i: tuple(sum(s.truth[i][k] for s in train) / len(train)
                                                    for k in (0, 1)) for i in train[0].truth})  # fmt: skip
    prior = _scores(ev, TELEMETRY, attacks.telemetry_block([mean]), tmp_path)
    base = {
        b: _baseline(ev, TELEMETRY, f"{b}.py", tmp_path)
        for b in ("adrs_initial", "identity", "link_symmetry")
    }
    assert attack[0] > 0.999  # public: it finds its snapshot (best baseline 0.9468)
    assert attack[1] < 0.985  # private: nothing to find...
    assert attack[1] <= prior[1] + 0.005  # ...beyond what the train's link means give any candidate
    assert prior[1] - base["link_symmetry"] < 0.04  # and those help as on public data (+0.016)
    assert base["adrs_initial"] < base["identity"] < base["link_symmetry"]
    print(
        f"telemetry held out: attack {attack}, train-mean prior {prior}, private baselines {base}"
    )


def test_spot_traces_carried_foretell_nothing_under_a_run_seed(tmp_path):
    ev = load_module(SPOT / "evaluator.py")
    traces = {
        f.stem: ev.sim.load_trace(str(f), ev.GAP_S)
        for f in sorted((SPOT / "data" / ev.TRACE_DIR).glob("*.json"))
    }
    attack = _scores(ev, SPOT, attacks.spot_block(attacks.SPOT_SINGLE, traces), tmp_path)
    base = {
        b: _baseline(ev, SPOT, f"{b}.py", tmp_path)
        for b in ("on_demand", "greedy", "uniform_progress")
    }
    up_public = -93.28393993055556  # the README's Uniform Progress, held out
    assert attack[0] > up_public + 1.0  # public: the future of a found window is known
    assert attack[1] < base["uniform_progress"] + 0.5  # private: Uniform Progress, give or take
    assert base["on_demand"] < base["greedy"] < base["uniform_progress"]
    print(f"spot_scheduling held out: attack {attack}, private baselines {base}")


def test_multi_region_traces_carried_foretell_nothing_under_a_run_seed(tmp_path):
    ev = load_module(MULTI / "evaluator.py")
    traces = {z: ev.sim.load_trace(str(MULTI / "data" / ev.TRACE_DIR / f"{z}_v100_1.json"), ev.GAP_S)
              for z in ev.ZONES}  # fmt: skip
    attack = _scores(ev, MULTI, attacks.spot_block(attacks.SPOT_MULTI, traces), tmp_path)
    c = contract(MULTI)
    up_multi = _scores(ev, MULTI, body_of(c, c.data["run"]["reference"]), tmp_path)
    base = {
        b: _baseline(ev, MULTI, f"{b}.py", tmp_path) for b in ("single_region_up", "greedy_multi")
    }
    assert up_multi[0] == pytest.approx(-80.5162, abs=1e-4)  # the README's reference row
    assert attack[0] > up_multi[0] + 2.5  # public: the zones' future is known
    assert attack[1] < up_multi[1] + 0.5  # private: the reference, give or take
    assert base["single_region_up"] < base["greedy_multi"] < up_multi[1]
    print(
        f"spot_multi_region held out: attack {attack}, UP-multi {up_multi}, private baselines {base}"
    )
