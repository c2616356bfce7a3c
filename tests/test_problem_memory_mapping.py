"""problems/memory_mapping: the placement rule by hand, the data and its cases, the trusted
score's checks and the fetch script on local files. The README's baseline numbers, bad and
hostile candidates through the real `evolve eval` CLI and a scripted run:
tests/test_problem_conformance.py, with problems/memory_mapping/conformance.toml."""

from __future__ import annotations

import random
import shutil
import sys
import tomllib
from pathlib import Path

import pytest

from evaluators import kit
from evolve.problem.data import DataError, data_dir_for, sha256_of
from tests.support.carried_answers import carrying
from tests.support.data_seeds import scored_at
from tests.support.problem_hostile import complete_baseline, load_module, with_block

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "memory_mapping"
DATA = data_dir_for(PROBLEM)

sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim
seed = load_module(PROBLEM / "seed.py")
fetcher = load_module(PROBLEM / "fetch_data.py")

# Three buffers: 0 and 1 live together, 2 starts when 0 ends (half-open: no conflict).
BUFS = [(0, 4, 4), (2, 6, 4), (4, 8, 8)]


# ---------------------------------------------------------------- the rule, by hand


@pytest.mark.parametrize(
    "offsets, served",
    [
        ([8, 0, 4], 16),  # 0 and 1 side by side; 2 reuses 0's addresses after 0 ends
        ([None, None, None], 0),
        ([0, None, 0], 12),
        ([4, 0, 4], 16),  # 2 at [4, 12) shares 0's bytes [4, 8), but only after 0 ends
    ],
)
def test_valid_packings_by_hand(offsets, served):
    got = sim.check_offsets(offsets, BUFS, 12)
    assert got == offsets and sim.served_bytes(got, BUFS) == served


@pytest.mark.parametrize(
    "offsets, capacity, error",
    [
        ([0, 2, None], 12, "buffers 0 and 1 overlap in time [2, 4) and address [2, 4)"),
        ([None, 0, 2], 12, "buffers 1 and 2 overlap in time [4, 6) and address [2, 4)"),
        ([8, 0, 0], 7, "buffer 0: offset 8 + size 4 is outside the capacity [0, 7)"),
        ([0, 4, 0], 12, "buffers 1 and 2 overlap in time [4, 6) and address [4, 8)"),
        ([0, None, 0], 7, "buffer 2: offset 0 + size 8 is outside the capacity [0, 7)"),
        ([-1, None, None], 12, "buffer 0: offset -1 + size 4 is outside the capacity [0, 12)"),
        ([0, 4], 12, "returned 2 offsets; expected 3"),
        ([0, 4.0, None], 12, "buffer 1: offset 4.0 is not an integer or None"),
        ([True, None, None], 12, "buffer 0: offset True is not an integer or None"),
        ("abc", 12, "allocate() returned str"),
    ],
)
def test_invalid_packings_by_hand(offsets, capacity, error):
    with pytest.raises(kit.Invalid) as e:
        sim.check_offsets(offsets, BUFS, capacity)
    assert error in str(e.value)


def test_peak_is_half_open():
    assert sim.peak_bytes(BUFS) == 12  # at t in [4, 6): buffers 1 and 2; 0 freed at 4
    assert sim.peak_bytes([(0, 1, 5), (1, 2, 7)]) == 7
    assert sim.peak_bytes([(0, 2, 5), (1, 2, 7)]) == 12


def test_packing_helpers_by_hand():
    p = seed.Packing(BUFS, 12)
    assert p.first_fit(0) == 0
    p.place(0, 4)  # [4, 8) during [0, 4)
    assert p.gaps(1) == [(0, 4), (8, 4)]
    assert p.first_fit(1) == 0 and p.best_fit(1) == 0
    assert not p.fits(1, 5) and p.fits(1, 8)
    p.place(1, 8)
    assert p.gaps(2) == [(0, 8)]  # only 1 is live with 2
    assert p.first_fit(2) == 0 and p.served_bytes() == 8
    assert sim.check_offsets(p.offsets, BUFS, 12) == [4, 8, None]


def test_tflite_takes_the_smallest_gap_and_caps_at_the_capacity(tmp_path):
    # A long buffer 0 and two placed around gaps of 3 and 2 bytes; TFLite's best fit puts a
    # 2-byte buffer in the 2-byte gap where first fit would take the 3-byte one.
    bufs = [(0, 9, 10), (0, 9, 1), (0, 9, 3), (0, 9, 2), (0, 9, 2), (0, 9, 1)]
    tflite = complete_baseline(PROBLEM, "tflite_arena.py", tmp_path)
    got = load_module(tflite).allocate(bufs, 20)
    assert got == [0, 10, 11, 14, 16, 18]  # whole-program buffers keep index order, on top
    narrow = [(0, 9, 4), (2, 5, 2), (0, 2, 2), (0, 2, 1)]
    got = load_module(tflite).allocate(narrow, 6)
    assert got == [0, 4, 4, None]  # the 1-byte buffer's top (6) passes the capacity
    first = load_module(complete_baseline(PROBLEM, "greedy_size.py", tmp_path)).allocate(narrow, 6)
    assert first == [0, 4, 4, None]
    # By size: 0 at [0, 4); 1 on top of it, [4, 7); 3 on top of both, [7, 9); 4 at [9, 10).
    # Buffer 2 (times [4, 6)) is live with 1 and 4 only: gaps [0, 4) and [7, 9); best fit: 7.
    gappy = [(0, 4, 4), (3, 5, 3), (4, 6, 1), (1, 4, 2), (0, 5, 1)]
    assert load_module(tflite).allocate(gappy, 20) == [0, 4, 7, 7, 9]


def test_best_fit_differs_from_first_fit():
    # 0 and 1 hold [0, 3) and [5, 7); 2 leaves a 1-byte gap at [4, 5) ... built by hand:
    bufs = [(0, 9, 3), (0, 9, 1), (0, 9, 2), (1, 9, 1)]
    p = seed.Packing(bufs, 10)
    p.place(0, 0)  # [0, 3)
    p.place(1, 5)  # [5, 6): gaps [3, 5) of 2 and [6, 10) of 4
    p.place(2, 8)  # [8, 10): gaps [3, 5) of 2 and [6, 8) of 2
    assert p.first_fit(3) == 3 and p.best_fit(3) == 3
    p2 = seed.Packing([(0, 9, 3), (0, 9, 1), (1, 9, 1)], 10)
    p2.place(0, 0)
    p2.place(1, 8)  # gaps [3, 8) of 5 and [9, 10) of 1
    assert p2.first_fit(2) == 3 and p2.best_fit(2) == 9


# ---------------------------------------------------------------- data and cases


def test_data_files_match_their_checksums_and_parse():
    entries = tomllib.loads((PROBLEM / "problem.toml").read_text())["data"]
    assert [e["path"] for e in entries] == [sim.file_name(x) for x in "ABCDEFGHIJK"]
    for e in entries:
        assert sha256_of(DATA / e["path"]) == e["sha256"], e["path"]
        assert e["splits"] == (["train"] if e["path"][0] in sim.TRAIN else ["test"])
    a = sim.load_instance("A")
    assert len(a) == 154 and a[0] == (995328, 1000448, 656384)
    for inst in sim.TRAIN + sim.TEST:  # MiniMalloc's necessary condition: peak <= capacity
        assert sim.peak_bytes(sim.load_instance(inst)) <= sim.CAPACITY


def test_parse_csv_refuses_bad_rows():
    assert sim.parse_csv("id,lower,upper,size\nb1,0,3,4\n") == [(0, 3, 4)]
    for bad, msg in (
        ("x,y\n", "header"),
        ("id,lower,upper,size\nb,3,3,4\n", "lower < upper"),
        ("id,lower,upper,size\nb,0,3,x\n", "integers"),
    ):
        with pytest.raises(ValueError, match=msg):
            sim.parse_csv(bad)


def test_cases_of_each_split():
    train = sim.make_variants("train")
    assert len(train) == 18 and train[0].name == "A/half" and train[0].capacity == 524288
    assert [v.capacity for v in train[3:6]] == [519680, 779520, 1048576]  # C: peak 1039360
    test = sim.make_variants("test")
    assert len(test) == 15 and [v.name for v in test[:3]] == ["B/low", "B/high", "B/full"]
    assert len(test[0].buffers) == 156 and test[0].capacity == 469545  # the public draw
    assert test == sim.make_variants("test")  # deterministic without a run seed
    with pytest.raises(ValueError, match="unknown split"):
        sim.make_variants("quick")


def test_a_private_seed_draws_other_test_cases():
    public = sim.make_variants("test")
    kit.use_data_seed(12345)
    try:
        private = sim.make_variants("test")
    finally:
        kit.use_data_seed(None)
    assert [v.name for v in private] == [v.name for v in public]
    assert [(len(v.buffers), v.capacity) for v in private] != [
        (len(v.buffers), v.capacity) for v in public
    ]
    assert sim.make_variants("train") == sim.make_variants("train")


# ---------------------------------------------------------------- the trusted score


def test_score_rejects_malformed_outputs():
    n = len(sim.make_variants("train"))
    for outputs, msg in (
        ([], "a dict with an 'offsets' list"),
        ({"offsets": [[]] * (n - 1)}, f"expected {n} answers"),
    ):
        r = ev.score(outputs, "train")
        assert r["valid"] is False and msg in r["artifacts"]["error"]
    nothing = [[None] * len(v.buffers) for v in sim.make_variants("train")]
    r = ev.score({"offsets": nothing}, "train")
    assert r["score"] == 0.0 and r["metrics"]["buffers_placed"] == 0.0


def test_seed_packing_scores_as_its_helpers_say(tmp_path):
    """A packing built with Packing scores exactly what served_bytes() reports."""
    greedy = load_module(complete_baseline(PROBLEM, "greedy_size.py", tmp_path))
    offsets, fractions = [], []
    for v in sim.make_variants("train"):
        got = greedy.allocate([list(b) for b in v.buffers], v.capacity)
        offsets.append(got)
        fractions.append(sim.served_bytes(got, v.buffers) / v.total_bytes)
    r = ev.score({"offsets": offsets}, "train")
    assert r["score"] == pytest.approx(sum(fractions) / len(fractions), abs=1e-15)
    assert r["score"] == 0.7713020547248777  # README.md's number


# ---------------------------------------------------------------- the fetch script


def test_fetch_rebuilds_every_file_from_a_local_mirror(tmp_path):
    nested = tmp_path / "mirror"
    for entry in fetcher.FILES:
        target = nested / fetcher.repo_path(entry["url"])
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / entry["path"], target)
    assert fetcher.repo_path(fetcher.FILES[0]["url"]) == "benchmarks/challenging/A.1048576.csv"
    out = tmp_path / "out"
    written = fetcher.fetch(str(nested), out)
    assert [p.name for p in written] == [e["path"] for e in fetcher.FILES]
    assert all(sha256_of(p) == e["sha256"] for p, e in zip(written, fetcher.FILES, strict=True))
    flat = tmp_path / "flat"
    flat.mkdir()
    for e in fetcher.FILES:
        shutil.copy(DATA / e["path"], flat / e["path"])
    (flat / "A.1048576.csv").write_text("id,lower,upper,size\n0,0,1,1\n")  # changed upstream
    keep = tmp_path / "keep"
    with pytest.raises(DataError, match="SHA-256"):
        fetcher.fetch(str(flat), keep)
    assert not (keep / "A.1048576.csv").exists()
    assert fetcher.main(["--base", str(tmp_path / "missing"), "--data-dir", str(keep)]) == 1
    assert fetcher.main(["--base", str(nested), "--data-dir", str(tmp_path / "y")]) == 0
    assert fetcher.main(["--base", f"file://{nested}", "--data-dir", str(tmp_path / "z")]) == 0


# ---------------------------------------------------------------- private held-out instances


def test_private_test_instances_are_new_dissections_with_a_perfect_packing():
    """Under a run's data seed each held-out instance is a new dissection of the square, with
    the public instance's number of buffers: every address live at every time (peak =
    capacity), the rectangles themselves a packing of every buffer (so each `full` case can
    be packed completely), no buffer list equal to a public one; the same seed draws the
    same (evaluate and score agree)."""
    public = {v.name: v for v in sim.make_variants("test")}
    kit.use_data_seed(2023)
    try:
        private = sim.make_variants("test")
        assert sim.make_variants("test") == private
    finally:
        kit.use_data_seed(None)
    for inst in sim.TEST:
        bufs = sim.dissection(len(sim.load_instance(inst)), random.Random(inst))
        assert len(bufs) == len(sim.load_instance(inst))
        assert sim.peak_bytes(bufs) == sim.CAPACITY
        assert sum((up - lo) * size for lo, up, size in bufs) == sim.CAPACITY**2
        assert all(x % sim.GRAIN == 0 for b in bufs for x in b)
    for v in private:
        assert v.buffers != public[v.name].buffers
        assert not set(v.buffers) <= set(sim.load_instance(v.name.split("/")[0]))


def test_carried_answers_to_the_public_held_out_set_gain_nothing_privately(tmp_path):
    """A candidate carrying, per public held-out case, the packing of an offline search (the
    scripted run's best of eight orders and gap rules, conformance.toml), keyed by the
    case's buffers and capacity, and TFLite's packing otherwise: above TFLite on the public
    `test`, exactly TFLite under a private seed."""
    run = tomllib.loads((PROBLEM / "conformance.toml").read_text())["run"]
    search_body = run["replies"][0]["body"]
    search = load_module(with_block(PROBLEM, search_body, tmp_path))
    known = {
        repr(([list(b) for b in v.buffers], v.capacity)): search.allocate(
            [list(b) for b in v.buffers], v.capacity
        )
        for v in sim.make_variants("test")
    }
    attack = carrying(PROBLEM, "allocate", known, "KNOWN.get(repr((args[0], args[1])))", tmp_path)
    scores = {}
    for data_seed in (None, 2023, 2024):
        for name, path in (("attack", attack), ("tflite", PROBLEM / "seed.py")):
            result = scored_at(data_seed, ev, PROBLEM, path, tmp_path, "test")
            scores[name, data_seed] = result["score"]
    assert scores["tflite", None] == 0.8444533574199958  # README
    assert round(scores["attack", None], 4) == 0.8609  # README: the scripted-run candidate
    for data_seed in (2023, 2024):
        assert scores["attack", data_seed] == scores["tflite", data_seed]
