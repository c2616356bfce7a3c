"""problems/binpack: FunSearch's packing loop by hand, the published data and the seeded
generators, the notebook's numbers, the trusted score's checks, and the fetch script. The
README's baseline numbers, bad and hostile candidates through the real `evolve eval` CLI and a
scripted run: tests/test_problem_conformance.py, with problems/binpack/conformance.toml."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import numpy as np
import pytest

from evolve.edits.blocks import complete_from_seed, evolvable_text, fixed_parts
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.data import DataFile, data_dir_for, ensure, sha256_of
from evolve.problem.load import load_problem
from evolve.testing.binpack_edits import BINPACK_VARIANTS
from tests.support.problem_contract import contract
from tests.support.problem_hostile import END, START, load_module, run_in_process, with_block

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "binpack"
REFERENCE = PROBLEM / "reference"
DATA = data_dir_for(PROBLEM) / "funsearch_or3_weibull5k.json"

# README.md, "Reference numbers" (problems/binpack/conformance.toml): the seed, best fit, on train
BEST_FIT_TRAIN = contract(PROBLEM).readme("best_fit.py", "train")["score"]


ev = load_module(PROBLEM / "evaluator.py")
fetcher = load_module(PROBLEM / "fetch_data.py")


def run(program: Path, split: str) -> dict:
    return run_in_process(PROBLEM, ev, program, split)


# ---------------------------------------------------------------- FunSearch's loop, by hand


def notebook_binpack(priority, items, capacity):
    """bin_packing.ipynb's online_binpack + evaluate, transcribed: pool of num_items full bins,
    valid = (bins - item) >= 0, argmax over the valid bins, used = remaining != capacity."""
    bins = np.array([capacity for _ in items], dtype=float)
    chosen = []
    for item in items:
        valid = np.nonzero((bins - item) >= 0)[0]
        best = valid[np.argmax(priority(item, bins[valid]))]
        bins[best] -= item
        chosen.append(int(best))
    return chosen, int((bins != capacity).sum())


PRIORITIES = {
    "best_fit": lambda item, bins: -(bins - item),
    "first_fit": lambda item, bins: np.zeros(len(bins)),
    # the last valid bin: always a still-empty one, the pool fills from its end
    "last_fit": lambda item, bins: np.arange(len(bins), dtype=float),
    "worst_fit": lambda item, bins: bins - item,
    "gap_mod7": lambda item, bins: -((bins - item) % 7) - 1e-3 * bins,
}


@pytest.mark.parametrize("name", list(PRIORITIES))
def test_pack_is_the_notebooks_loop(name):
    priority = PRIORITIES[name]
    instances = ev.make_instances("quick") + ev.make_instances("or3")[:2]
    assignments, _ = ev.pack(priority, instances)
    for inst, a in zip(instances, assignments, strict=True):
        chosen, used = notebook_binpack(priority, inst.items.tolist(), inst.capacity)
        assert a == chosen
        assert len(set(a)) == used


def test_the_candidate_sees_only_the_bins_the_item_fits_in_with_empty_bins_included():
    seen = []

    def spy(item, bins):
        seen.append((item, bins.copy()))
        return -(bins - item)

    inst = ev.Instance("tiny", 10, np.array([6.0, 5.0, 4.0, 6.0]))
    (a,), _ = ev.pack(spy, [inst])
    assert a == [0, 1, 0, 2]  # best fit; the 4 fills bin 0 exactly
    assert [b.tolist() for _, b in seen] == [
        [10, 10, 10, 10],
        [10, 10, 10],
        [4, 5, 10, 10],
        [10, 10],
    ]
    assert [item for item, _ in seen] == [6, 5, 4, 6]


# ---------------------------------------------------------------- data and generators


def test_problem_toml_declares_the_data_for_the_held_out_splits_only():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    p, e = cfg["problem"], cfg["evaluation"]
    assert (p["name"], p["entry"], p["metric"], p["direction"]) == (
        "binpack",
        "seed.py",
        "excess_pct",
        "minimize",
    )
    assert e["splits"] == list(ev.SPLITS) and (e["train_split"], e["test_split"]) == (
        "train",
        "test",
    )
    assert e["cascade"] == [{"split": "quick", "threshold": -30.0}]
    (entry,) = cfg["data"]
    assert entry["path"] == ev.DATA_FILE and "url" not in entry  # an extraction: no URL serves it
    assert sorted(entry["splits"]) == sorted(ev.PUBLISHED)
    assert sha256_of(DATA) == entry["sha256"]
    sources = (PROBLEM / "data" / "SOURCES.md").read_text()
    for fragment in (
        entry["sha256"],
        "bin_packing.ipynb",
        "CC-BY-4.0",
        "github.com/google-deepmind/funsearch",
    ):
        assert fragment in sources
    ensure([DataFile(entry["path"], sha256=entry["sha256"])], data_dir_for(PROBLEM), download=False)


def test_published_sets_and_their_l1_bounds():
    ((or3_name, or3),) = ev.make_datasets("or3")
    ((w_name, w5k),) = ev.make_datasets("weibull5k")
    assert [n for n, _ in ev.make_datasets("test")] == [or3_name, w_name] == ["OR3", "Weibull 5k"]
    assert len(or3) == 20 and all(len(i.items) == 500 and i.capacity == 150 for i in or3)
    assert len(w5k) == 5 and all(len(i.items) == 5000 and i.capacity == 100 for i in w5k)
    assert or3[0].items[:4].tolist() == [42, 69, 67, 57] and w5k[0].items[:4].tolist() == [
        48,
        66,
        48,
        32,
    ]
    # the notebook prints "Lower bound on optimum: 201.2" and "1987.8"
    assert np.mean([i.l1_bound for i in or3]) == pytest.approx(201.2)
    assert np.mean([i.l1_bound for i in w5k]) == pytest.approx(1987.8)


def test_generated_splits_are_seeded_weibull_integers():
    for split, (_, count, size) in ev.GENERATED.items():
        if size > 10_000:  # weibull100k: checked by its size alone, generating it is cheap
            (inst,) = ev.make_instances(split)
            assert len(inst.items) == size
            continue
        a, b = ev.make_instances(split), ev.make_instances(split)
        assert len(a) == count and all(len(x.items) == size and x.capacity == 100 for x in a)
        assert all(np.array_equal(x.items, y.items) for x, y in zip(a, b, strict=True))
        assert all(
            (x.items == np.round(x.items)).all() and 1 <= x.items.min() and x.items.max() <= 100
            for x in a
        )
    train = np.concatenate([i.items for i in ev.make_instances("train")])
    published = np.concatenate([i.items for i in ev.make_instances("weibull5k")])
    assert abs(train.mean() - published.mean()) < 0.5 and abs(train.std() - published.std()) < 0.5
    assert not np.array_equal(train[:5000], published[:5000])
    with pytest.raises(ValueError, match="unknown split"):
        ev.make_instances("validation")


def test_held_out_data_is_hidden_from_train(tmp_path, monkeypatch):
    evaluator = CandidateEvaluator(load_problem(PROBLEM), sandbox=None)
    for split in ("quick", "train", "weibull10k", "weibull100k"):
        assert evaluator.hidden(split) == (str(DATA),)
    for split in ev.PUBLISHED:
        assert evaluator.hidden(split) == ()
    # as the sandbox shows it to a train evaluation: the file exists and reads as empty
    (tmp_path / ev.DATA_FILE).write_text("")
    monkeypatch.setenv("EVOLVE_DATA_DIR", str(tmp_path))
    assert len(ev.make_instances("train")) == 5
    with pytest.raises(ValueError):
        ev.make_instances("test")
    (tmp_path / ev.DATA_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="data file missing"):
        ev.make_instances("or3")


def _notebook(datasets: dict) -> str:
    """A notebook in the upstream form: markdown, the data cell (Python literals, ints), code."""
    data_cell = (
        "# @title\nimport numpy as np\n\n\ndatasets = {}\n\n"
        + "".join(
            f"# Data from the {name} dataset.\ndatasets[{name!r}] = "
            + repr(
                {
                    k: {
                        "capacity": int(v["capacity"]),
                        "num_items": v["num_items"],
                        "items": [int(x) for x in v["items"]],
                    }
                    for k, v in insts.items()
                }
            )
            + "\n\n"
            for name, insts in datasets.items()
        )
        + "def l1_bound(items, capacity):\n  return np.ceil(np.sum(items) / capacity)\n"
    )
    cells = [
        {"cell_type": "markdown", "source": ["# Bin packing\n", "datasets['OR3'] = 'not code'\n"]},
        {"cell_type": "code", "source": data_cell.splitlines(keepends=True), "outputs": []},
        {
            "cell_type": "code",
            "source": ["%%time\n", "def priority(item, bins):\n", "  return -(bins - item)"],
        },
    ]
    return json.dumps({"cells": cells, "nbformat": 4}, indent=2)


def test_fetch_rebuilds_the_exact_file_from_the_notebook(tmp_path):
    notebook = tmp_path / "bin_packing.ipynb"
    notebook.write_text(_notebook(json.loads(DATA.read_bytes())))
    assert fetcher.fetch(notebook.as_uri(), tmp_path / "data").read_bytes() == DATA.read_bytes()
    assert fetcher.main(["--url", str(notebook), "--data-dir", str(tmp_path / "local")]) == 0
    assert (tmp_path / "local" / ev.DATA_FILE).read_bytes() == DATA.read_bytes()
    notebook.write_text(notebook.read_text().replace("[42, 69, 67", "[42, 69, 68", 1))
    with pytest.raises(ValueError, match="upstream notebook changed"):
        fetcher.fetch(notebook.as_uri(), tmp_path / "data2")
    assert not (tmp_path / "data2" / ev.DATA_FILE).exists()
    notebook.write_text(json.dumps({"cells": [{"cell_type": "code", "source": "datasets = {}"}]}))
    with pytest.raises(ValueError, match=r"no datasets\['OR3'\]"):
        fetcher.fetch(str(notebook), tmp_path / "data3")
    assert (
        fetcher.main(["--url", (tmp_path / "missing.ipynb").as_uri(), "--data-dir", str(tmp_path)])
        == 1
    )


# ---------------------------------------------------------------- programs and the notebook's numbers


def test_reference_programs_hold_only_their_block():
    """As the baselines do (the conformance suite checks those)."""
    seed = (PROBLEM / "seed.py").read_text()
    for path in REFERENCE.glob("*.py"):
        code = path.read_text()
        assert "import" not in code.split(START)[0] + code.split(END)[1], path
        whole = complete_from_seed(code, seed)
        assert fixed_parts(whole) == fixed_parts(seed) and evolvable_text(whole) == evolvable_text(
            code
        )


def test_funsearch_heuristics_reproduce_the_notebook():
    """The notebook prints 207.45 bins (3.11%) on OR3 and 2001.4 (0.68%) on Weibull 5k."""
    r = run(REFERENCE / "funsearch_or.py", "or3")
    assert r["metrics"]["avg_bins"] == 207.45 and f"{r['metrics']['excess_pct']:.2f}" == "3.11"
    r = run(REFERENCE / "funsearch_weibull.py", "weibull5k")
    assert r["metrics"]["avg_bins"] == 2001.4 and f"{r['metrics']['excess_pct']:.2f}" == "0.68"
    assert r["score"] == -r["metrics"]["excess_pct"] and "L1" in r["artifacts"]["hint"]


@pytest.mark.parametrize(
    "outputs, fragment",
    [
        ({}, "'assignments' list"),
        ({"assignments": []}, "expected 1 instances"),
        ({"assignments": [[0] * 500]}, "holds"),  # everything in one bin
        ({"assignments": [list(range(499))]}, "list of 500 bin indices"),
        ({"assignments": [[0.0] * 500]}, "must be integers"),
        ({"assignments": [[True] * 500]}, "must be integers"),
        ({"assignments": [[-1, *range(1, 500)]]}, "outside the pool"),
        ({"assignments": [list(range(1, 501))]}, "outside the pool"),
        ({"assignments": "0 1 2"}, "'assignments' list"),
    ],
)
def test_score_rejects_infeasible_or_incomplete_packings(outputs, fragment):
    r = ev.score(outputs, "quick")
    assert r["valid"] is False and fragment in r["artifacts"]["error"]


def test_one_item_per_bin_is_feasible_but_scores_badly():
    r = ev.score({"assignments": [list(range(500))]}, "quick")
    assert r["metrics"]["bins_used"] == 500 and r["score"] < -100


def test_score_of_a_test_packing_reports_each_published_set():
    outputs = {"assignments": [list(range(len(i.items))) for i in ev.make_instances("test")]}
    m = ev.score(outputs, "test")["metrics"]
    assert (m["avg_bins_or3"], m["avg_bins_weibull5k"], m["l1_bound_or3"]) == (
        500,
        5000,
        pytest.approx(201.2),
    )
    assert m["excess_pct"] == pytest.approx((m["excess_pct_or3"] + m["excess_pct_weibull5k"]) / 2)


# ---------------------------------------------------------------- hostility


def test_mutating_the_bins_argument_is_harmless():
    def shifty(item, bins):
        bins -= item  # in place: the candidate's copy only
        return -bins

    instances = ev.make_instances("quick")
    assert ev.pack(shifty, instances)[0] == ev.pack(PRIORITIES["best_fit"], instances)[0]


# ---------------------------------------------------------------- the canned LLM edits


def test_canned_llm_edits_behave_as_documented(tmp_path):
    """evolve/testing/binpack_edits.py promises these outcomes; scripted runs rely on them."""
    path = {n: with_block(PROBLEM, src, tmp_path) for n, _, src in BINPACK_VARIANTS}
    seed = ev.evaluate(str(PROBLEM / "seed.py"), "quick")["outputs"]
    for name in ("best_fit", "best_fit_tiebreak"):  # the seed's packing: no gain
        assert ev.evaluate(str(path[name]), "quick")["outputs"] == seed
    assert run(path["funsearch_weibull"], "quick")["score"] >= -30.0  # passes the cascade
    assert run(path["funsearch_weibull"], "train")["score"] > BEST_FIT_TRAIN
    assert run(path["worst_fit"], "quick")["score"] < -30.0
    with pytest.raises(SyntaxError):
        ev.evaluate(str(path["syntax_error"]), "quick")
    with pytest.raises(NameError):
        ev.evaluate(str(path["runtime_error"]), "quick")
    with np.errstate(divide="ignore"):
        for name in ("wrong_shape", "non_finite"):
            assert ev.evaluate(str(path[name]), "quick")["valid"] is False
