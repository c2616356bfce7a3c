"""problems/txn_scheduling: the cost model by hand, the data and generators, and the trusted
score's checks. The README's baseline numbers, bad and hostile candidates through the real
`evolve eval` CLI and a scripted run: tests/test_problem_conformance.py, with
problems/txn_scheduling/conformance.toml."""

from __future__ import annotations

import json
import random
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evolve.edits.blocks import complete_from_seed, fixed_parts
from evolve.problem.data import DataError, DataFile, data_dir_for, ensure, sha256_of
from evolve.testing.cli_helpers import evolve
from tests.support.problem_hostile import complete_baseline, load_module

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "txn_scheduling"
BASELINES = PROBLEM / "baselines"
DATA = data_dir_for(PROBLEM) / "adrs_workloads.json"

sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim
seed = load_module(PROBLEM / "seed.py")
fetcher = load_module(PROBLEM / "fetch_workloads.py")


def T(text: str):
    return sim.parse_ops(text)


# ---------------------------------------------------------------- the cost model, by hand


@pytest.mark.parametrize(
    "txns, order, starts, span",
    [
        (["r-a * w-b"], [0], [1], 3),  # a lone transaction of n ops: makespan n
        (["w-a", "w-a"], [0, 1], [1, 2], 2),  # write-write: strictly after
        (["r-a", "r-a"], [0, 1], [1, 1], 1),  # read-read: no conflict
        (["r-a *", "w-a"], [0, 1], [1, 2], 2),  # write after read
        (["w-a", "r-a"], [0, 1], [1, 2], 2),  # read after write
        (["w-a * *", "* * r-a"], [0, 1], [1, 1], 3),  # the read sits at offset 2, after time 1
        (["* * w-a", "r-a *"], [0, 1], [1, 4], 5),  # the read must come after time 3
        (
            ["* * w-a", "r-a *"],
            [1, 0],
            [1, 1],
            3,
        ),  # ...the other order: its write (time 3) already follows the read
        (
            ["r-a w-a", "r-a"],
            [0, 1],
            [1, 3],
            3,
        ),  # its own read then write of a key; the read waits for the write
        (["w-a w-b", "w-b", "w-a"], [0, 1, 2], [1, 3, 2], 3),  # placed later, started earlier
        (
            ["w-x *", "* w-y", "r-x r-y"],
            [0, 1, 2],
            [1, 1, 2],
            3,
        ),  # the latest bound over all keys wins
    ],
)
def test_makespan_by_hand(txns, order, starts, span):
    parsed = [T(t) for t in txns]
    assert sim.start_times(parsed, order) == starts
    assert sim.makespan(parsed, order) == span
    tl = seed.Timeline()  # the fixed helper in the candidate file is the same model
    assert [tl.place(parsed[i]) for i in order] == [
        starts[i] for i in order
    ] and tl.makespan == span


def test_lower_bounds_by_hand():
    assert sim.lower_bounds([T("w-a w-b *"), T("w-a"), T("r-a"), T("r-b")]) == (
        3,
        3,
    )  # a: 2 writes + read
    assert sim.lower_bounds([T("r-a * * *"), T("w-b")]) == (4, 1)
    assert sim.lower_bounds([]) == (0, 0)


def test_parse_ops():
    assert T("w-17 r-5 *") == [("w", "17"), ("r", "5"), ("*", "")]
    for bad in ("x-1", "r-", "w5"):
        with pytest.raises(ValueError, match="bad operation"):
            T(bad)


def test_adrs_workloads_identity_order():
    """The issue's check: identity order 452 + 38 + 47 = 537; longest transactions 16 + 21 + 9 = 46."""
    workloads = sim.make_workloads("train")
    assert [name for name, _ in workloads] == ["workload_1", "workload_2", "workload_3"]
    assert all(len(txns) == 100 for _, txns in workloads)
    assert [sim.makespan(t, list(range(100))) for _, t in workloads] == [452, 38, 47]
    assert sum(sim.lower_bounds(t)[0] for _, t in workloads) == 46


def test_seed_timeline_agrees_with_the_simulator_on_random_orders():
    rng = random.Random(1)
    for _, txns in sim.make_workloads("train") + sim.make_workloads("test")[:2]:
        for _ in range(3):
            order = rng.sample(range(len(txns)), len(txns))
            tl = seed.Timeline()
            for i in order:
                tl.place(txns[i])
            assert tl.makespan == sim.makespan(txns, order)


@pytest.mark.parametrize(
    "order, fragment",
    [
        ([0, 1, 1], "transaction 1 appears twice (and 2 never)"),
        ([0, 1], "expected 3 transaction indices, got 2"),
        ([0, 1, 2, 0], "expected 3 transaction indices, got 4"),
        ([0, 1, 3], "outside [0, 3)"),
        ([0, 1, -1], "outside [0, 3)"),
        ([0, 1, 2.0], "must be ints"),
        ([0, 1, float("nan")], "must be ints"),
        ([0, True, 2], "must be ints"),
        ([0, 1, None], "must be ints"),
        ("012", "got str"),
        (None, "got NoneType"),
        ({0: 0, 1: 1, 2: 2}, "got dict"),
    ],
)
def test_check_order_rejects(order, fragment):
    with pytest.raises(kit.Invalid) as e:
        sim.check_order(order, 3)
    assert fragment in str(e.value)


def test_check_order_accepts_permutations_of_any_int_type():
    assert sim.check_order([2, 0, 1], 3) == [2, 0, 1]
    assert sim.check_order((2, 0, 1), 3) == [2, 0, 1]
    assert sim.check_order(np.array([2, 0, 1]), 3) == [2, 0, 1]
    assert sim.check_order([np.int64(2), np.int32(0), 1], 3) == [2, 0, 1]


# ---------------------------------------------------------------- data and generators


def test_data_file_is_declared_with_its_checksum():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    (entry,) = cfg["data"]
    assert entry["path"] == sim.DATA_FILE and "url" not in entry  # an extraction: no URL serves it
    assert sha256_of(DATA) == entry["sha256"]
    sources = (PROBLEM / "data" / "SOURCES.md").read_text()
    assert entry["sha256"] in sources and "workloads.py" in sources and "Apache-2.0" in sources
    ensure([DataFile(entry["path"], sha256=entry["sha256"])], data_dir_for(PROBLEM), download=False)


def test_data_dir_setting_and_corrupt_file(tmp_path, monkeypatch):
    entry = DataFile(sim.DATA_FILE, sha256=sha256_of(DATA))
    copy = tmp_path / sim.DATA_FILE
    copy.write_bytes(DATA.read_bytes())
    monkeypatch.setenv("EVOLVE_DATA_DIR", str(tmp_path))
    assert [len(t) for _, t in sim.make_workloads("train")] == [100, 100, 100]
    copy.write_bytes(DATA.read_bytes().replace(b"w-17", b"w-18", 1))
    with pytest.raises(DataError, match="SHA-256 mismatch"):
        ensure([entry], data_dir_for(PROBLEM))
    # the controller checks the file before any evaluation: a corrupt copy never gets scored
    r = evolve(
        "eval",
        str(PROBLEM),
        str(BASELINES / "sequential.py"),
        "--split",
        "train",
        "--json",
        extra_env={"EVOLVE_DATA_DIR": str(tmp_path)},
    )
    assert r.returncode != 0 and "SHA-256 mismatch" in r.stderr
    copy.unlink()
    with pytest.raises(FileNotFoundError, match="data file missing"):
        sim.make_workloads("train")


def test_fetch_rebuilds_the_exact_file_from_the_upstream_format(tmp_path):
    """The upstream workloads.py holds WORKLOAD_n = '<json>' constants; fetching a file in
    that form (a file:// URL or a local path) writes back byte-for-byte the checksummed JSON."""
    workloads = json.loads(DATA.read_bytes())["workloads"]
    upstream = tmp_path / "workloads.py"
    upstream.write_text(
        "".join(f"{name} = {json.dumps(json.dumps(txns))}\n" for name, txns in workloads.items())
    )
    assert fetcher.fetch(upstream.as_uri(), tmp_path / "data").read_bytes() == DATA.read_bytes()
    assert fetcher.main(["--url", str(upstream), "--data-dir", str(tmp_path / "local")]) == 0
    assert (tmp_path / "local" / sim.DATA_FILE).read_bytes() == DATA.read_bytes()
    upstream.write_text(upstream.read_text().replace("w-17", "w-18", 1))
    with pytest.raises(ValueError, match="upstream file changed"):
        fetcher.fetch(upstream.as_uri(), tmp_path / "data2")
    assert not (tmp_path / "data2" / sim.DATA_FILE).exists()
    assert (
        fetcher.main(["--url", (tmp_path / "missing.py").as_uri(), "--data-dir", str(tmp_path)])
        == 1
    )


def test_test_generators_are_seeded_and_well_formed():
    a, b = sim.make_workloads("test"), sim.make_workloads("test")
    assert a == b and [n for n, _ in a] == list(sim.TEST_WORKLOADS)
    for name, txns in a:
        assert len(txns) == 100 and all(txns)
        assert all(kind in "rw*" and (kind == "*") == (key == "") for t in txns for kind, key in t)
        longest, key_bound = sim.lower_bounds(txns)
        seq = sim.makespan(txns, list(range(100)))
        assert max(longest, key_bound) < seq, name  # real contention: order matters
    assert (
        sim.tpcc(1) != sim.tpcc(2)
        and sim.ycsb(1) != sim.ycsb(2)
        and sim.smallbank(1) != sim.smallbank(2)
    )
    payment_w = [t for t in sim.tpcc(3) if ("w", "W0") in t]
    assert 25 < len(payment_w) < 60  # ~43% Payments, all writing the warehouse row


def test_problem_toml_and_fixed_code():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    assert cfg["problem"]["metric"] == "makespan_total" and cfg["evaluation"]["splits"] == [
        "train",
        "test",
    ]
    # the fixed code (Timeline) is written once, in seed.py: the baselines get it from there
    assert "class Timeline" in "".join(fixed_parts((PROBLEM / "seed.py").read_text()))


def test_score_rejects_tampered_outputs(tmp_path):
    good = ev.evaluate(str(complete_baseline(PROBLEM, "sequential.py", tmp_path)), "train")[
        "outputs"
    ]
    assert ev.score(good, "train")["score"] == -537.0
    cases = {
        "'orders' list": {},
        "expected 3 orders": {"orders": good["orders"][:2]},
        "appears twice": {"orders": [good["orders"][0][:-1] + [0], *good["orders"][1:]]},
        "must be ints": {"orders": [[float(x) for x in good["orders"][0]], *good["orders"][1:]]},
    }
    for fragment, outputs in cases.items():
        r = ev.score(outputs, "train")
        assert r["valid"] is False and fragment in r["artifacts"]["error"], (fragment, r)


def test_train_evaluation_of_the_seed():
    # its CPU budget (10 s of one core) is measured by bench/eval_budget.py, not asserted here
    out = ev.evaluate(str(PROBLEM / "seed.py"), "train")
    assert ev.score(out["outputs"], "train")["score"] == -416.0


# ---------------------------------------------------------------- the reference program


def test_reference_program_beats_the_seed_on_test(tmp_path):
    """reference/smf_restarts_swaps.py (ours, README "Reference programs"): deterministic, and
    well below the seed's (SMF's) 761 on test."""
    code = (PROBLEM / "reference" / "smf_restarts_swaps.py").read_text()
    program = tmp_path / "smf_restarts_swaps.py"
    program.write_text(complete_from_seed(code, (PROBLEM / "seed.py").read_text()))
    out = ev.evaluate(str(program), "test")
    r = ev.score(out["outputs"], "test")
    assert r["score"] == -510.0 and r["metrics"]["makespan_total"] < 761
