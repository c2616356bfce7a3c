"""problems/eplb: the simulator by hand, the checks on placements, hostile candidates
through the real `evolve eval` CLI, the README's baseline numbers, and a scripted run."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evolve.edits.blocks import complete_from_seed, fixed_parts
from tests.cli_helpers import block
from tests.data_seeds import RUN_DATA_SEED, scored_at
from tests.problem_hostile import (
    FAKE_PRINT,
    START,
    assert_fails,
    block_body,
    complete_baseline,
    eval_json,
    load_module,
    scripted_run,
    short_timeout_copy,
    with_block,
)
from tests.scripted_llm import Reply

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "eplb"
BASELINES = PROBLEM / "baselines"

# Measured with `evolve eval problems/eplb problems/eplb/baselines/<file> --split <s> --json`
# (README.md, "Reference numbers"). Balancedness is deterministic; the score moves with the
# measured runtime, so it is checked against the README's own runtime, never the clock.
README = {
    ("deepseek_eplb.py", "train"): {"balancedness": 0.6358, "same": 0.8307, "runtime_ms": 35, "score": 54.8},
    ("deepseek_eplb.py", "test"): {"balancedness": 0.6054, "same": 0.8403, "runtime_ms": 37, "score": 51.9},
    ("round_robin.py", "train"): {"balancedness": 0.3510, "same": 0.3501, "runtime_ms": 1.35, "score": 39.0},
    ("round_robin.py", "test"): {"balancedness": 0.3590, "same": 0.3603, "runtime_ms": 1.4, "score": 39.45},
}


sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim
seed = load_module(PROBLEM / "seed.py")


def run(program: Path, split: str) -> dict:
    out = ev.evaluate(str(program), split)
    return ev.score(out["outputs"], split) if "outputs" in out else out


# ---------------------------------------------------------------- simulator, by hand


def tiny_placement():
    """1 layer, 4 experts, 6 slots on 3 GPUs (2 slots each)."""
    phy2log = np.array([[0, 0, 1, 2, 3, 1]])
    logcnt = np.array([[2, 2, 1, 1]])
    log2phy = np.array([[[0, 1], [2, 5], [3, -1], [4, -1]]])
    return phy2log, log2phy, logcnt


def test_gpu_loads_and_balancedness_by_hand():
    phy2log, _, _ = tiny_placement()
    load = np.array([[8.0, 2.0, 4.0, 6.0]])
    # per replica: e0 8/2 = 4, e1 2/2 = 1, e2 4, e3 6 -> slots [4, 4, 1, 4, 6, 1] -> GPUs [8, 5, 7]
    assert sim.gpu_loads(phy2log, load, num_gpus=3).tolist() == [[8.0, 5.0, 7.0]]
    assert sim.balancedness(phy2log, load, num_gpus=3) == pytest.approx((20 / 3) / 8)
    # two layers: the mean of the per-layer ratios; an idle layer counts as perfectly balanced
    two = np.vstack([phy2log, phy2log])
    assert sim.balancedness(two, np.vstack([load, np.zeros((1, 4))]), num_gpus=3) == pytest.approx(
        ((20 / 3) / 8 + 1.0) / 2)


def test_runtime_terms_and_score_formula():
    assert sim.runtime_terms(0.002) == (5.0, 0.0)
    assert sim.runtime_terms(0.0005) == (10.0, 0.0)  # capped at 2x
    assert sim.runtime_terms(0.0) == (10.0, 0.0)  # clamped, never infinite
    assert sim.runtime_terms(0.010) == (1.0, 0.0)  # the penalty starts above 10 ms
    speed, penalty = sim.runtime_terms(0.1)
    assert speed == pytest.approx(0.1) and penalty == pytest.approx(5.0)  # 5 points per decade
    assert sim.runtime_terms(10.0)[1] == 10.0  # capped
    assert sim.combined_score(0.5, 0.002) == pytest.approx(45.0 + 5.0)
    assert sim.combined_score(0.5, 0.1) == pytest.approx(45.0 + 0.1 - 5.0)


def test_deepseek_seed_by_hand():
    """8 experts in 2 groups, 2 nodes x 2 GPUs, 12 slots (3 per GPU), one layer.

    Groups: {10,1,1,1} -> node 0, {6,1,1,1} -> node 1. Node 0 gives its 2 extra
    slots to expert 0 (10 -> 5 -> 3.33 per replica); packing [3.33 x3, 1 x3] two
    GPUs of 3 gives 3.33+3.33+1 = 7.67 and 3.33+1+1 = 5.33. Node 1: expert 4
    gets 3 replicas of 2 -> GPUs 2+2+1 = 5 and 2+1+1 = 4. Mean 5.5, max 23/3.
    """
    weight = np.array([[10.0, 1, 1, 1, 6, 1, 1, 1]])
    phy2log, log2phy, logcnt = seed.rebalance_experts(weight, 12, 2, 2, 4)
    assert logcnt.tolist() == [[3, 1, 1, 1, 3, 1, 1, 1]]
    sim.check_placement(phy2log, log2phy, logcnt, weight, num_replicas=12)
    assert sorted(sim.gpu_loads(phy2log, weight, num_gpus=4)[0].round(4).tolist()) == [4.0, 5.0, 5.3333, 7.6667]
    assert sim.balancedness(phy2log, weight, num_gpus=4) == pytest.approx(5.5 / (23 / 3))
    assert set(phy2log[0, :6].tolist()) == {0, 1, 2, 3} and set(phy2log[0, 6:].tolist()) == {4, 5, 6, 7}


def test_check_placement_accepts_a_consistent_placement():
    phy2log, log2phy, logcnt = tiny_placement()
    sim.check_placement(phy2log, log2phy, logcnt, np.ones((1, 4)), num_replicas=6)
    wide = np.concatenate([log2phy, np.full((1, 4, 3), -1)], axis=2)  # any padding width works
    sim.check_placement(phy2log, wide, logcnt, np.ones((1, 4)), num_replicas=6)
    swapped = log2phy.copy()
    swapped[0, 0] = [1, 0]  # replica order within an expert is free
    sim.check_placement(phy2log, swapped, logcnt, np.ones((1, 4)), num_replicas=6)


def _broken(kind: str):
    phy2log, log2phy, logcnt = (a.copy() for a in tiny_placement())
    if kind == "shape":
        phy2log = phy2log[:, :5]
    elif kind == "expert_id":
        phy2log[0, 0] = 4
    elif kind == "sum":
        logcnt[0, 0] = 3
    elif kind == "count":
        logcnt[0] = [3, 1, 1, 1]
    elif kind == "no_replica":
        phy2log[0, 3], logcnt[0] = 0, [3, 2, 0, 1]
        log2phy[0, 0], log2phy[0, 2] = [0, 1], [-1, -1]
    elif kind == "narrow":
        log2phy = log2phy[:, :, :1]
    elif kind == "pad":
        log2phy[0, 2, 1] = 5
    elif kind == "wrong_slot":
        log2phy[0, 1] = [2, 4]
    elif kind == "duplicate":
        log2phy[0, 1] = [2, 2]
    elif kind == "slot_range":
        log2phy[0, 1] = [2, 6]
    return phy2log, log2phy, logcnt


@pytest.mark.parametrize("kind, fragment", [
    ("shape", "phy2log has shape (1, 5)"),
    ("expert_id", "not an expert id"),
    ("sum", "sum to the 6 physical slots"),
    ("count", "inconsistent"),
    ("no_replica", "expert 2 of layer 0 has no replica"),
    ("narrow", "room for 1 replicas"),
    ("pad", "must be -1"),
    ("wrong_slot", "phy2log[0, 4] = 3"),
    ("duplicate", "each slot must appear exactly once"),
    ("slot_range", "slots are in [0, 6)"),
])
def test_check_placement_rejects(kind, fragment):
    with pytest.raises(kit.Invalid) as e:
        sim.check_placement(*_broken(kind), np.ones((1, 4)), num_replicas=6)
    assert fragment in str(e.value)


def test_as_int_array_messages():
    with pytest.raises(kit.Invalid, match="NaN"):
        sim.as_int_array(np.array([1.0, np.nan]), "x")
    with pytest.raises(kit.Invalid, match="integer array"):
        sim.as_int_array(np.array([1.0, 2.0]), "x")
    with pytest.raises(kit.Invalid, match="not an array"):
        sim.as_int_array([[1, 2], [3]], "x")
    assert sim.as_int_array([[1, 2]], "x").dtype == np.int64


def test_transport_roundtrip_and_bounds():
    a = np.arange(-1, 287).reshape(2, 144)
    assert np.array_equal(sim.unpack_array(sim.pack_array(a), "a", a.size), a)
    with pytest.raises(kit.Invalid, match="bad shape"):
        sim.unpack_array(sim.pack_array(a), "a", 10)  # more elements than allowed
    bomb = sim.pack_array(np.zeros(10**6, dtype=np.int64))
    bomb["shape"] = [10]  # claims 10 elements, inflates to 2 MB
    with pytest.raises(kit.Invalid, match="bytes for shape"):
        sim.unpack_array(bomb, "a", 10**7)
    with pytest.raises(kit.Invalid, match="undecodable"):
        sim.unpack_array({"shape": [2], "data": "!!!"}, "a", 10)


def test_traces_are_seeded_drifting_and_split():
    a, b = sim.generate_trace(7, sim.DRIFT, windows=3), sim.generate_trace(7, sim.DRIFT, windows=3)
    assert a.shape == (3, sim.NUM_LAYERS, sim.NUM_EXPERTS) and np.array_equal(a, b)
    assert not np.array_equal(a, sim.generate_trace(8, sim.DRIFT, windows=3))
    assert (a >= 0).all() and np.array_equal(a, a.round())  # token counts
    per_window = a.sum(axis=2)  # about tokens * top-k per layer and window
    assert abs(per_window.mean() / (sim.DRIFT.tokens * sim.TOP_K) - 1) < 0.01
    share = a / a.sum(axis=2, keepdims=True)
    assert share.max() > 10 / sim.NUM_EXPERTS  # skewed: some expert gets 10x its fair share
    assert not np.allclose(share[0], share[1], atol=1e-3)  # and popularity drifts
    train = {name for name, _, _ in sim.SPLITS["train"]}
    test = {name for name, _, _ in sim.SPLITS["test"]}
    assert not train & test
    assert not {s for _, s, _ in sim.SPLITS["train"]} & {s for _, s, _ in sim.SPLITS["test"]}
    assert {r.name for _, _, r in sim.SPLITS["test"]} - {r.name for _, _, r in sim.SPLITS["train"]}


def test_problem_toml_and_fixed_code():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    assert cfg["problem"]["metric"] == "balancedness" and cfg["evaluation"]["splits"] == ["train", "test"]
    assert "data" not in cfg and not (PROBLEM / "data").exists()  # generated loads, no data files
    seed_code = (PROBLEM / "seed.py").read_text()
    for path in (p for p in BASELINES.glob("*.py") if not p.is_symlink()):  # the fixed code is written once, in seed.py
        (doc,) = ast.parse("".join(fixed_parts(path.read_text()))).body
        assert isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant), path.name
        assert complete_from_seed(path.read_text(), seed_code).startswith(seed_code.split(START)[0])
    assert block_body(PROBLEM / "seed.py") == block_body(BASELINES / "deepseek_eplb.py")


def test_score_rejects_tampered_outputs(tmp_path):
    good = ev.evaluate(str(complete_baseline(PROBLEM, "round_robin.py", tmp_path)), "train")["outputs"]
    assert ev.score(good, "train")["score"] > 0
    cases = {
        "placements": {"call_s": good["call_s"]},
        "expected 22 placements": {**good, "placements": good["placements"][:-1]},
        "out of order": {**good, "placements": good["placements"][::-1]},
        "call_s": {**good, "call_s": [float("nan")] * len(good["call_s"])},
    }
    p0 = dict(good["placements"][0])
    p0["phy2log"] = sim.pack_array(np.zeros((sim.NUM_LAYERS, sim.NUM_REPLICAS), dtype=np.int64))
    cases["inconsistent"] = {**good, "placements": [p0, *good["placements"][1:]]}
    for fragment, outputs in cases.items():
        r = ev.score(outputs, "train")
        assert r["valid"] is False and fragment in r["artifacts"]["error"], (fragment, r)


def test_train_evaluation_of_the_seed():
    # its CPU budget (10 s of one core) is measured by bench/eval_budget.py, not asserted here
    r = run(PROBLEM / "seed.py", "train")
    assert r["metrics"]["balancedness"] > 0.6


# ---------------------------------------------------------------- validity, through `evolve eval`

ROUND_ROBIN = block_body(BASELINES / "round_robin.py")
CALL = "rebalance_experts(weight, num_replicas, num_groups, num_nodes, num_gpus)"


def _rr_then(transform: str) -> str:
    """The round-robin policy with its outputs transformed before returning."""
    return ROUND_ROBIN.replace("def rebalance_experts(", "def _rr(", 1) + (
        f"\n\ndef {CALL}:\n"
        f"    phy2log, log2phy, logcnt = _rr(weight, num_replicas, num_groups, num_nodes, num_gpus)\n"
        f"{transform}"
    )


@pytest.mark.parametrize("name, body, status, fragment", [
    ("wrong_shape", _rr_then("    return phy2log[:, :-1], log2phy, logcnt\n"),
     "invalid", "phy2log has shape (58, 287); expected (58, 288)"),
    ("nan", _rr_then("    return phy2log.astype(float) * np.nan, log2phy, logcnt\n"),
     "invalid", "phy2log contains NaN"),
    ("floats", _rr_then("    return phy2log.astype(float), log2phy, logcnt\n"),
     "invalid", "phy2log must be an integer array"),
    ("inconsistent", _rr_then("    log2phy[:, [0, 1]] = log2phy[:, [1, 0]]\n    return phy2log, log2phy, logcnt\n"),
     "invalid", "log2phy says slot 1 of layer 0 holds expert 0"),
    ("bad_counts", _rr_then("    logcnt[:, 0] += 1\n    return phy2log, log2phy, logcnt\n"),
     "invalid", "replica counts must sum to the 288 physical slots"),
    ("no_replica", _rr_then(
        "    phy2log[:, 40] = 0\n    logcnt[:, 0] += 1\n    logcnt[:, 40] -= 1\n"
        "    return phy2log, log2phy, logcnt\n"),
     "invalid", "expert 40 of layer 0 has no replica"),
    ("two_values", _rr_then("    return phy2log, logcnt\n"),
     "invalid", "must return (phy2log, log2phy, logcnt), got a tuple of length 2"),
    ("stateful", "_calls = [0]\n\n" + _rr_then(
        "    _calls[0] += 1\n    if _calls[0] > 22:\n        phy2log = phy2log.copy()\n"
        "        phy2log[:, [0, 1]] = phy2log[:, [1, 0]]\n"
        "        logcnt = np.zeros_like(logcnt)\n        np.add.at(logcnt, (np.arange(len(phy2log))[:, None], phy2log), 1)\n"
        "        log2phy = np.full(log2phy.shape, -1)\n"
        "        for l in range(len(phy2log)):\n            seen = [0] * logcnt.shape[1]\n"
        "            for p, e in enumerate(phy2log[l]):\n                log2phy[l, e, seen[e]] = p\n"
        "                seen[e] += 1\n"
        "    return phy2log, log2phy, logcnt\n"),
     "invalid", "deterministic function of its arguments"),
    ("exception", f"def {CALL}:\n    raise ValueError('no placement for you')\n",
     "runtime_error", "ValueError: no placement for you"),
    ("missing_function", "def rebalance(weight):\n    return None\n",
     "invalid", "defines no callable rebalance_experts"),
    ("syntax", f"def {CALL}\n    return None\n", "syntax_error", "SyntaxError"),
])
def test_bad_outputs_fail_through_the_cli(tmp_path, name, body, status, fragment):
    out = eval_json(PROBLEM, with_block(PROBLEM, body, tmp_path), "train")
    assert_fails(out, fragment, status)
    if status == "runtime_error":
        assert "no placement for you" in out["artifacts"]["traceback"]


# ---------------------------------------------------------------- hostile, through `evolve eval`


@pytest.fixture(scope="module")
def honest_rr() -> dict:
    out = eval_json(PROBLEM, BASELINES / "round_robin.py", "train")
    assert out["status"] == "ok"
    return out


# The candidate runs in its own process, where neither module exists: the patches find nothing.
PATCH = """import sys
import numpy as np
_ev, _sim = sys.modules.get("evaluator"), sys.modules.get("eplb_sim")
if _ev is not None:
    _ev.score = lambda outputs, split: {"score": 1e9, "metrics": {"balancedness": 1.0}}
if _sim is not None:
    _sim.balancedness = lambda *a, **k: 1.0
    _sim.check_placement = lambda *a, **k: None
    _sim.combined_score = lambda *a, **k: 1e9
"""


def test_patching_the_evaluator_and_simulator_gains_nothing(tmp_path, honest_rr):
    out = eval_json(PROBLEM, with_block(PROBLEM, ROUND_ROBIN, tmp_path, prelude=PATCH), "train")
    assert out["status"] == "ok"
    assert out["metrics"]["balancedness"] == pytest.approx(honest_rr["metrics"]["balancedness"], abs=1e-12)
    # only the runtime term may differ: timed around each call, it carries the machine's noise
    bal = out["metrics"]["balancedness"]
    assert out["score"] == pytest.approx(sim.combined_score(bal, out["metrics"]["runtime_ms"] / 1000))
    assert out["score"] <= sim.BALANCE_WEIGHT * bal + sim.SPEED_WEIGHT * sim.SPEED_CAP + 1e-9


def test_patched_checker_cannot_smuggle_an_invalid_placement(tmp_path):
    body = _rr_then("    phy2log = np.zeros_like(phy2log)  # every slot: expert 0\n"
                    "    return phy2log, log2phy, logcnt\n")
    out = eval_json(PROBLEM, with_block(PROBLEM, body, tmp_path, prelude=PATCH), "train")
    assert_fails(out, "logcnt[0, 0] = 2 but expert 0 fills 288 slots", "invalid")


def test_printed_fake_score_is_ignored(tmp_path, honest_rr):
    body = ROUND_ROBIN.replace('    layers, experts = np.shape(weight)\n',
                               '    layers, experts = np.shape(weight)\n    print("score: 1e9")\n')
    out = eval_json(PROBLEM, with_block(PROBLEM, body, tmp_path, prelude=FAKE_PRINT), "train")
    assert out["status"] == "ok" and "1e9" in out["artifacts"]["stdout"]
    assert out["metrics"]["balancedness"] == pytest.approx(honest_rr["metrics"]["balancedness"], abs=1e-12)
    assert out["score"] < 50


@pytest.mark.parametrize("fake", [
    "sys.modules['evaluators.worker']._CLOCK = lambda: 0.0",  # the worker's call timer
    "time.perf_counter = lambda: 0.0\ntime.monotonic = lambda: 0.0",  # its clocks
])
def test_faking_the_clock_gains_nothing(tmp_path, fake):
    """The runtime is measured in the evaluator's process, around each call to the
    candidate's: a candidate that rebinds the clocks of its own process (it could fake the
    worker's timer before) is still timed as slow."""
    slow = ROUND_ROBIN.replace('    layers, experts = np.shape(weight)\n',
                               '    time.sleep(0.05)\n    layers, experts = np.shape(weight)\n')
    cheat = eval_json(PROBLEM, with_block(PROBLEM, slow, tmp_path, prelude=f"import sys\nimport time\n{fake}\n"),
                      "train")
    assert cheat["status"] == "ok", cheat
    assert cheat["metrics"]["runtime_ms"] > 45 and cheat["metrics"]["slow_penalty"] > 3


def test_infinite_loop_times_out(tmp_path):
    quick = short_timeout_copy(PROBLEM, tmp_path, 3)
    body = f"def {CALL}:\n    while True:\n        pass\n"
    out = eval_json(quick, with_block(quick, body, tmp_path), "train")
    assert_fails(out, "timeout", "timeout")


# ---------------------------------------------------------------- baselines = README numbers


@pytest.mark.parametrize("program, split", list(README))
def test_baselines_reproduce_the_readme(program, split):
    out = eval_json(PROBLEM, BASELINES / program, split)
    want = README[(program, split)]
    assert out["status"] == "ok" and out["returncode"] == 0
    m = out["metrics"]
    assert m["balancedness"] == pytest.approx(want["balancedness"], abs=5e-5)  # deterministic
    assert m["balancedness_same_window"] == pytest.approx(want["same"], abs=5e-5)
    assert out["score"] == pytest.approx(sim.combined_score(m["balancedness"], m["runtime_ms"] / 1000))
    # The runtime term depends on the machine and its load, so the README's score is checked
    # against the README's runtime: the same formula, no clock.
    assert sim.combined_score(want["balancedness"], want["runtime_ms"] / 1000) == pytest.approx(
        want["score"], abs=0.05)


# ---------------------------------------------------------------- a scripted run

# The same greedy as the seed, with its packing loop vectorised over layers and
# nodes: identical placements, far less time per call (the ADRS result, in small).
VECTORISED_PACKING = '''
def balanced_packing(weight: np.ndarray, num_packs: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy packing (heaviest item to the lightest pack with room), all rows at once."""
    rows, n = weight.shape
    per_pack = n // num_packs
    order = np.argsort(-weight, axis=1, kind="stable")
    loads = np.zeros((rows, num_packs))
    counts = np.zeros((rows, num_packs), dtype=np.int64)
    pack_index = np.empty((rows, n), dtype=np.int64)
    rank_in_pack = np.empty((rows, n), dtype=np.int64)
    r = np.arange(rows)
    for j in range(n):
        item = order[:, j]
        best = np.argmin(np.where(counts < per_pack, loads, np.inf), axis=1)
        pack_index[r, item] = best
        rank_in_pack[r, item] = counts[r, best]
        loads[r, best] += weight[r, item]
        counts[r, best] += 1
    return pack_index, rank_in_pack
'''


def vectorised_seed() -> str:
    body = block_body(PROBLEM / "seed.py")
    start = body.index("def balanced_packing")
    end = body.index("def replicate_experts")
    return body[:start] + VECTORISED_PACKING.strip() + "\n\n\n" + body[end:]


def test_vectorised_greedy_gives_the_same_placements_faster(tmp_path):
    fast = load_module(with_block(PROBLEM, vectorised_seed(), tmp_path))
    w = sim.generate_trace(5, sim.DRIFT, windows=1)[0]
    for a, b in zip(fast.rebalance_experts(w, 288, 8, 4, 32), seed.rebalance_experts(w, 288, 8, 4, 32),
                    strict=True):
        assert np.array_equal(a, b)


def test_scripted_run_of_20_iterations(tmp_path):
    replies = [
        block(vectorised_seed(), "Vectorise the packing loop over layers and nodes."),
        block(ROUND_ROBIN, "Round robin is fast."),
        block(_rr_then("    return phy2log[:, :-1], log2phy, logcnt\n"), "Drop the last slot."),
        block(f"def {CALL}:\n    return np.zeros(3\n", "Broken on purpose."),
        Reply("I have no idea."),
    ]
    best = scripted_run(PROBLEM, replies, tmp_path / "runs", data_seed=RUN_DATA_SEED)
    assert best["iteration"] > 0 and "np.argmin" in best["code"]  # the vectorised greedy won
    deepseek = scored_at(RUN_DATA_SEED, ev, PROBLEM, PROBLEM / "baselines" / "deepseek_eplb.py", tmp_path)
    assert best["metrics"]["balancedness"] == pytest.approx(deepseek["metrics"]["balancedness"], abs=5e-5)
    assert best["test_score"] is not None
