"""The online_binpack example: the generator, the baselines, and a score() that trusts nothing."""

import importlib.util
import itertools
import re
import sys
import tempfile
import tomllib
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evolve.edits.blocks import complete_from_seed, evolvable_text, fixed_parts
from tests.binpack_edits import BINPACK_VARIANTS

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "online_binpack"
FIXTURE = ROOT / "tests" / "fixtures" / "openevolve_binpack"
START, END = "# EVOLVE-BLOCK-START", "# EVOLVE-BLOCK-END"
_ids = itertools.count()


def load(path: Path):
    """Import a module by path under a fresh name (tests may patch it)."""
    spec = importlib.util.spec_from_file_location(f"_binpack_test_{next(_ids)}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


ev = load(PROBLEM / "evaluator.py")


def candidate(tmp_path: Path, block_body: str) -> str:
    """seed.py with its EVOLVE block replaced by `block_body`, written to tmp_path."""
    seed = (PROBLEM / "seed.py").read_text()
    head, rest = seed.split(START)
    tail = rest.split(END)[1]
    path = tmp_path / f"cand{next(_ids)}.py"
    path.write_text(f"{head}{START}\n{block_body}{END}{tail}")
    return str(path)


def run(program: str, split: str) -> dict:
    """evaluate() then the trusted score(), in this process; a baseline gets the seed's fixed code."""
    code = Path(program).read_text()
    whole = complete_from_seed(code, (PROBLEM / "seed.py").read_text())
    if whole != code:
        program = str(Path(tempfile.mkdtemp()) / "seed.py")
        Path(program).write_text(whole)
    result = kit.evaluate_and_score(ev, program, split)
    result.get("artifacts", {}).pop("evaluate_s", None)  # a timing: differs from run to run
    return result


def test_problem_toml_schema():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    p, e = cfg["problem"], cfg["evaluation"]
    assert (p["name"], p["entry"], p["metric"], p["direction"]) == (
        "online_binpack", "seed.py", "excess_pct", "minimize",
    )  # fmt: skip
    assert e["splits"] == list(ev.SPLITS) and e["cascade"] == [
        {"split": "quick", "threshold": -30.0}
    ]
    assert cfg["features"] == {"dimensions": ["code_length", "diversity"], "bins": 8}


def test_instances_are_seeded_weibull_integers():
    for split, (_, count, size) in ev.SPLITS.items():
        a, b = ev.make_instances(split), ev.make_instances(split)
        assert len(a) == count and all(len(x) == size for x in a)
        assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
        assert all(x.dtype.kind == "i" and x.min() >= 1 and x.max() <= 100 for x in a)
    sizes = np.concatenate(ev.make_instances("test"))
    assert abs(sizes.mean() - 45 * 0.8930) < 0.5  # Weibull mean: scale * Gamma(1 + 1/3)
    assert not np.array_equal(ev.make_instances("train")[0], ev.make_instances("test")[0][:1000])


def test_baselines_hold_only_their_block_and_get_the_seeds_fixed_code():
    seed = (PROBLEM / "seed.py").read_text()
    for path in PROBLEM.glob("baselines/*.py"):
        if path.is_symlink():  # a baseline that is the seed itself
            assert path.resolve() == PROBLEM / "seed.py"
            continue
        code = path.read_text()
        assert "import" not in code.split(START)[0] + code.split(END)[1], path
        whole = complete_from_seed(code, seed)
        assert fixed_parts(whole) == fixed_parts(seed)
        assert evolvable_text(whole) == evolvable_text(code)


def test_baselines_score_and_best_fit_beats_first_fit():
    ff = {s: run(str(PROBLEM / "baselines/first_fit.py"), s) for s in ("quick", "train")}
    bf = {s: run(str(PROBLEM / "baselines/best_fit.py"), s) for s in ("quick", "train")}
    for r in (*ff.values(), *bf.values()):
        assert r["score"] == -r["metrics"]["excess_pct"] and "L1" in r["artifacts"]["hint"]
        assert r["metrics"]["bins_used"] >= r["metrics"]["lower_bound"]
    assert ff["quick"]["score"] >= -30.0  # the seed passes the cascade's screen
    assert bf["train"]["score"] > ff["train"]["score"]
    assert run(str(PROBLEM / "seed.py"), "train") == ff["train"]


def test_held_out_split_matches_the_published_ballpark():
    r = run(str(PROBLEM / "baselines/best_fit.py"), "test")
    assert 3.5 < r["metrics"]["excess_pct"] < 4.5  # FunSearch reports 3.98% on Weibull 5k


@pytest.mark.parametrize(
    "outputs, fragment",
    [
        ({}, "'assignments' list"),
        ({"assignments": []}, "expected 5 instances"),
        ({"assignments": [[0] * 1000] * 5}, "capacity 100"),  # everything in one bin
        ({"assignments": [list(range(999))] * 5}, "list of 1000 bin indices"),
        ({"assignments": [[0.0] * 1000] * 5}, "must be integers"),
        ({"assignments": [[True] * 1000] * 5}, "must be integers"),
        ({"assignments": [[-1] + list(range(1, 1000))] * 5}, "outside the pool"),
        ({"assignments": [list(range(1, 1001))] * 5}, "outside the pool"),
    ],
)
def test_score_rejects_infeasible_outputs(outputs, fragment):
    r = ev.score(outputs, "train")
    assert r["valid"] is False and fragment in r["artifacts"]["error"]


def test_one_item_per_bin_is_valid_but_scores_badly():
    r = ev.score({"assignments": [list(range(1000))] * 5}, "train")
    assert r["metrics"]["bins_used"] == 5000 and r["score"] < -100


def test_patching_evaluate_from_the_candidate_gains_nothing(tmp_path):
    """The candidate runs in its own process: the evaluator module it would patch is not
    there, so the packing is the honest one (in a shared process it claimed about L1 bins)."""
    patched = load(PROBLEM / "evaluator.py")
    body = (
        "import sys\n"
        f"_ev = sys.modules.get({patched.__name__!r})\n"
        "def _claim_l1(priority, instances, sample_at=()):\n"
        "    return [[i % (-(-int(x.sum()) // 100)) for i in range(len(x))] for x in instances], []\n"
        "if _ev is not None:\n"
        "    _ev.pack = _claim_l1\n"
        "def priority(item, bins):\n"
        "    return -np.arange(len(bins), dtype=float)\n"
    )
    out = patched.evaluate(candidate(tmp_path, body), "train")
    assert patched.pack.__name__ == "pack"
    honest = patched.evaluate(str(PROBLEM / "seed.py"), "train")
    assert out["outputs"] == honest["outputs"]
    assert ev.score(out["outputs"], "train")["score"] == ev.score(honest["outputs"], "train")["score"]


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("def priority(item, bins):\n    return np.append(-(bins - item), 0.0)\n", "shape"),
        ("def priority(item, bins):\n    return 1.0 / (bins - item)\n", "NaN or infinity"),
        ("def priority(item, bins):\n    return float(item)\n", "shape ()"),
        ("def priority(item, bins):\n    return ['a'] * len(bins)\n", "real numbers"),
        ("def priority(item, bins):\n    return None\n", "real numbers"),
        ("def prio(item, bins):\n    return bins\n", "no callable priority"),
        (
            "_n = [0]\n\ndef priority(item, bins):\n    _n[0] += 1\n"
            "    return -(bins - item) if _n[0] % 2 else -np.arange(len(bins), dtype=float)\n",
            "pure function",
        ),
        (
            "def priority(item, bins):\n    return np.random.default_rng().random(len(bins))\n",
            "pure function",
        ),
    ],
)
def test_bad_returns_are_invalid_with_a_clear_error(tmp_path, body, fragment):
    with np.errstate(divide="ignore"):
        r = ev.evaluate(candidate(tmp_path, body), "quick")
    assert r["valid"] is False and fragment in r["artifacts"]["error"]


def test_candidate_mutating_its_bins_argument_is_harmless(tmp_path):
    body = "def priority(item, bins):\n    bins -= item\n    return -bins\n"
    assert run(candidate(tmp_path, body), "train") == run(
        str(PROBLEM / "baselines/best_fit.py"), "train"
    )


def test_canned_llm_edits_behave_as_documented(tmp_path):
    """tests/binpack_edits.py promises these outcomes; scripted runs rely on them."""
    seed = run(str(PROBLEM / "seed.py"), "train")["score"]
    code = {name: src for name, _, src in BINPACK_VARIANTS}
    path = {name: candidate(tmp_path, src) for name, src in code.items()}
    for name in ("best_fit", "best_fit_tiebreak", "funsearch_weibull"):
        assert run(path[name], "quick")["score"] >= -30.0
        assert run(path[name], "train")["score"] > seed
    assert (
        run(path["funsearch_weibull"], "train")["score"] > run(path["best_fit"], "train")["score"]
    )
    assert run(path["worst_fit"], "quick")["score"] < -30.0
    with pytest.raises(SyntaxError):
        ev.evaluate(path["syntax_error"], "quick")
    with pytest.raises(NameError):
        ev.evaluate(path["runtime_error"], "quick")
    with np.errstate(divide="ignore"):
        for name in ("wrong_shape", "non_finite"):
            assert ev.evaluate(path[name], "quick")["valid"] is False


def test_openevolve_fixture_evaluator(tmp_path):
    fx = load(FIXTURE / "evaluator.py")
    first = fx.evaluate(str(FIXTURE / "initial_program.py"))
    seed = (FIXTURE / "initial_program.py").read_text()
    (tmp_path / "best_fit.py").write_text(complete_from_seed((PROBLEM / "baselines/best_fit.py").read_text(), seed))
    best = fx.evaluate(str(tmp_path / "best_fit.py"))
    assert 0.5 < first["combined_score"] < best["combined_score"] < 1.0
    assert fx.evaluate_stage1(str(FIXTURE / "initial_program.py"))["combined_score"] > 0.5
    assert set(first) == {"combined_score", "excess_pct", "bins_used", "lower_bound"}
    assert re.search(
        r"EVOLVE-BLOCK-START\n.*\n# EVOLVE-BLOCK-END",
        (FIXTURE / "initial_program.py").read_text(),
        re.S,
    )
