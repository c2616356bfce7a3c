"""problems/prism: the KVPR model by hand, the ADRS cases and their fetch script, the held-out
generator and the trusted score's checks. The README's baseline numbers (the ADRS initial and
best programs reproduced), bad and hostile candidates through the real `evolve eval` CLI and
a scripted run: tests/test_problem_conformance.py, with problems/prism/conformance.toml."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from evaluators import kit
from evolve.problem.data import DataFile, data_dir_for, ensure, sha256_of
from tests.support.problem_hostile import complete_baseline, load_module

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "prism"
DATA = data_dir_for(PROBLEM) / "adrs_cases.json"

sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim
fetcher = load_module(PROBLEM / "fetch_data.py")

# The ADRS generator's shape, as fetch_data.py reads it (its parameters, not its code).
UPSTREAM_SKELETON = """
import numpy as np

def generate_test_gpu_models(num_tests=50):
    cases = []
    np.random.seed(42)
    for i in range(num_tests):
        gpu_num = np.random.randint(5, 10)
        models = []
        for j in range(gpu_num*2):
            model_size = np.random.randint(10, 30)
            req_rate = np.random.randint(1, 10)
            slo = np.random.randint(5, 10)
        cases.append((gpu_num, models))
    return cases
"""


def case(sizes, rates, slos, gpus=2) -> sim.Case:
    return sim.Case(
        gpus, tuple(f"m{i}" for i in range(len(sizes))), tuple(sizes), tuple(rates), tuple(slos)
    )


# ---------------------------------------------------------------- the model, by hand

A_B = case([20, 30], [6, 4], [6, 8])  # A: r/s 1, 20 GB; B: r/s 0.5, 30 GB


@pytest.mark.parametrize(
    "groups, want",
    [
        ([[0, 1], []], 1.5 / 30),  # together: (1 + 0.5) / (80 - 50)
        ([[0], [1]], 1 / 60),  # apart: max(1/60, 0.5/50)
        ([[1], [0]], 1 / 60),  # GPU ids do not matter
        ([[], []], 0.0),  # no models (not a valid placement of A_B, but the model's value)
    ],
)
def test_max_kvpr_by_hand(groups, want):
    assert sim.max_kvpr(A_B, groups) == pytest.approx(want, rel=1e-12)


def test_a_gpu_filled_to_80_gb_counts_as_1e6():
    full = case([50, 30], [1, 1], [1, 1], gpus=1)
    assert sim.max_kvpr(full, [[0, 1]]) == sim.FULL_KVPR == 1e6
    assert sim.gpu_kvpr(2.0, 79) == 2.0


def test_lower_bound_by_hand():
    # pooled: 1.5 / (160 - 50) = 0.01364; A alone: 1 / 60 = 0.01667 (the larger)
    assert sim.lower_bound(A_B) == pytest.approx(1 / 60)
    pooled = case([10, 10, 10, 10], [1, 1, 1, 1], [1, 1, 1, 1])  # 4 / 120 > 1 / 70
    assert sim.lower_bound(pooled) == pytest.approx(4 / 120)
    assert sim.max_kvpr(pooled, [[0, 1], [2, 3]]) == pytest.approx(sim.lower_bound(pooled))


@pytest.mark.parametrize(
    "raw, fragment",
    [
        (None, "expected a dict"),
        ({0: ["m0", "m1", "m0"]}, "m0 is placed twice (GPU 0 and GPU 0)"),
        ({0: ["m0"]}, "m1 is not placed (1 of 2 models missing)"),
        ({2: ["m0", "m1"]}, "GPU id 2 is outside [0, 2)"),
        ({-1: ["m0", "m1"]}, "GPU id -1 is outside"),
        ({True: ["m0", "m1"]}, "GPU ids must be ints, got True (bool)"),
        ({0.0: ["m0", "m1"]}, "GPU ids must be ints, got 0.0"),
        ({0: "m0m1"}, "expected a list of models, got str"),
        ({0: ["m0", "m9"]}, "'m9' is not one of the case's models"),
        ({0: ["m0", 1]}, "1 is not one of the case's models"),
    ],
)
def test_check_placement_rejects(raw, fragment):
    with pytest.raises(kit.Invalid) as e:
        sim.check_placement(A_B, raw)
    assert fragment in str(e.value)


def test_check_placement_memory():
    big = case([50, 31], [1, 1], [1, 1])
    with pytest.raises(kit.Invalid, match="GPU 1 holds 81 GB of models, over its 80 GB"):
        sim.check_placement(big, {1: ["m0", "m1"]})
    assert sim.check_placement(big, {0: ("m1",), 1: ["m0"]}) == [[1], [0]]


# ---------------------------------------------------------------- data, fetch, generator


def test_data_file_is_declared_with_its_checksum():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    (entry,) = cfg["data"]
    assert entry["path"] == sim.DATA_FILE and "url" not in entry  # drawn: no URL serves it
    assert sha256_of(DATA) == entry["sha256"]
    sources = (PROBLEM / "data" / "SOURCES.md").read_text()
    assert entry["sha256"] in sources and "evaluator.py" in sources and "Apache-2.0" in sources
    ensure([DataFile(entry["path"], sha256=entry["sha256"])], data_dir_for(PROBLEM), download=False)


def test_the_adrs_cases():
    cases = sim.load_adrs_cases()
    assert len(cases) == 50 and cases == sim.draw_cases(sim.ADRS, sim.ADRS_SEED)
    first = cases[0]  # the upstream generator's first case (numpy seed 42)
    assert first.gpu_num == 8 and first.sizes[:3] == (24, 16, 20) and first.rates[:3] == (8, 3, 8)
    for c in cases:
        assert 5 <= c.gpu_num <= 9 and len(c.names) == 2 * c.gpu_num
        assert all(10 <= m <= 29 for m in c.sizes) and all(1 <= r <= 9 for r in c.rates)
        assert all(5 <= s <= 9 for s in c.slos)


def test_fetch_draws_the_exact_file_from_the_upstream_generator(tmp_path):
    upstream = tmp_path / "evaluator.py"
    upstream.write_text(UPSTREAM_SKELETON)
    assert fetcher.fetch(upstream.as_uri(), tmp_path / "data").read_bytes() == DATA.read_bytes()
    assert fetcher.main(["--url", str(upstream), "--data-dir", str(tmp_path / "local")]) == 0
    assert (tmp_path / "local" / sim.DATA_FILE).read_bytes() == DATA.read_bytes()
    upstream.write_text(UPSTREAM_SKELETON.replace("seed(42)", "seed(43)"))
    with pytest.raises(ValueError, match="upstream generator changed"):
        fetcher.fetch(upstream.as_uri(), tmp_path / "data2")
    assert not (tmp_path / "data2" / sim.DATA_FILE).exists()
    upstream.write_text(UPSTREAM_SKELETON.replace("slo = ", "latency = "))
    with pytest.raises(ValueError, match="could not read"):
        fetcher.fetch(str(upstream), tmp_path / "data3")
    assert (
        fetcher.main(["--url", (tmp_path / "missing.py").as_uri(), "--data-dir", str(tmp_path)])
        == 1
    )


def test_held_out_cases_are_seeded_and_follow_their_family():
    a = sim.make_cases("test")
    assert a == sim.make_cases("test") and len(a) == sum(
        f.cases for f, _ in sim.TEST_FAMILIES.values()
    )
    dense = [c for label, c in a if label.startswith("dense_")]
    assert all(len(c.names) == 3 * c.gpu_num and max(c.sizes) <= 24 for c in dense)
    assert all(10 <= c.gpu_num <= 14 for label, c in a if label.startswith("more_gpus_"))
    kit.use_data_seed(12345)
    try:
        private = sim.make_cases("test")
    finally:
        kit.use_data_seed(None)
    assert [label for label, _ in private] == [label for label, _ in a] and private != a


# ---------------------------------------------------------------- the trusted score


def test_score_rejects_tampered_outputs(tmp_path):
    good = ev.evaluate(str(complete_baseline(PROBLEM, "greedy_kvpr.py", tmp_path)), "train")[
        "outputs"
    ]
    assert ev.score(good, "train")["score"] == pytest.approx(21.891622105209393, abs=1e-12)
    first = good["placements"][0]
    cases = {
        "'placements' list": {},
        "expected 50 placements": {"placements": good["placements"][:49]},
        "[gpu_id, [model names]] pairs": {"placements": [[{"0": []}], *good["placements"][1:]]},
        "appears twice": {
            "placements": [[first[0], first[0], *first[1:]], *good["placements"][1:]]
        },
        "case adrs_0: model_": {"placements": [first[1:], *good["placements"][1:]]},
        "over its 80 GB": {
            "placements": [[[0, [n for _, g in first for n in g]]], *good["placements"][1:]]
        },
    }
    for fragment, outputs in cases.items():
        r = ev.score(outputs, "train")
        assert r["valid"] is False and fragment in r["artifacts"]["error"], (fragment, r)


def test_the_adrs_programs_reproduce_their_published_scores(tmp_path):
    """ADRS's own evaluator gives its initial program 21.8916 and its best 25.718 (run once
    in a scratch directory: 21.891622105209393, 25.71806496921267)."""
    for name, want in [("greedy_kvpr.py", 21.891622105209393), ("adrs_best.py", 25.71806496921267)]:
        out = ev.evaluate(str(complete_baseline(PROBLEM, name, tmp_path)), "train")
        r = ev.score(out["outputs"], "train")
        assert r["score"] == pytest.approx(want, abs=1e-9), name
        assert r["metrics"]["inv_mean_max_kvpr"] == pytest.approx(want - 1, abs=1e-9)
