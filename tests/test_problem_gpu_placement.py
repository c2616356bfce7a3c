"""problems/gpu_placement: the simulator and FGD's fragmentation by hand, the data and its
generator, and the trusted replay's checks. The README's baseline numbers, bad and hostile
candidates through the real `evolve eval` CLI and a scripted run:
tests/test_problem_conformance.py, with problems/gpu_placement/conformance.toml."""

from __future__ import annotations

import hashlib
import shutil
import sys
import tomllib
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.data import DataFile, data_dir_for, ensure, sha256_of
from evolve.problem.load import load_problem
from tests.support.gpu_placement_edits import GPU_PLACEMENT_VARIANTS
from tests.support.problem_contract import contract
from tests.support.problem_hostile import block_body, load_module, run_in_process, with_block

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "gpu_placement"
BASELINES = PROBLEM / "baselines"
DATA = data_dir_for(PROBLEM)

# README.md, "Reference numbers" (problems/gpu_placement/conformance.toml): best fit, the seed
BEST_FIT_TRAIN = contract(PROBLEM).readme("best_fit.py", "train")["score"]

sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = load_module(PROBLEM / "placement_sim.py")
fetcher = load_module(PROBLEM / "fetch_data.py")
VARIANT = {name: src for name, _, src in GPU_PLACEMENT_VARIANTS}


def run(program: Path, split: str) -> dict:
    return run_in_process(PROBLEM, ev, program, split)


def policy(body: str):
    """A block body as a plain in-process function place(pod, nodes, workload)."""
    scope = {"np": np}
    exec(body, scope)
    return scope["place"]


# ---------------------------------------------------------------- the simulator, by hand


def tiny_cluster():
    """Node 0: one GPU (G2); node 1: two GPUs (T4); 8 CPUs and 8 GiB each."""
    return sim.Nodes([8000, 8000], [8192, 8192], [1, 2], [1, 4])


def tiny_pods(allowed=None):
    """p0: half a GPU, t 0, lives 10 s; p1: 2 GPUs, t 1, lives 1 s (leaves at 1 + 180);
    p2: 2 GPUs, t 5; p3: a whole GPU, arriving exactly when p1 leaves."""
    a = sim.ARRIVAL_SPEEDUP
    return sim.Workload(
        "tiny",
        cpu=[1000, 2000, 2000, 1000],
        mem=[1024, 1024, 1024, 1024],
        num_gpu=[1, 2, 2, 1],
        milli=[500, 1000, 1000, 1000],
        allowed=allowed if allowed is not None else np.ones((4, len(sim.MODELS)), dtype=bool),
        arrive=[0, 1, 5, 1 + a],
        leave=[10 * a, 1 + a, 5 + 100 * a, 1 + 2 * a],
    )


def scripted(choices):
    calls = []

    def decide(i, fits, cluster):
        calls.append((i, fits.tolist(), cluster.gpu.tolist()))
        return choices[i]

    return decide, calls


def test_first_fit_by_hand_with_departures_and_an_unplaceable_pod():
    # p0 -> node 0; p1 -> node 1 (both GPUs); p2 fits nowhere (rejected, no call);
    # p3 arrives when p1 leaves (departure first) -> node 1, GPU 0.
    decide, calls = scripted({0: (0, [0]), 1: (1, [0, 1]), 3: (1, [0])})
    decisions, m = sim.simulate(tiny_cluster(), tiny_pods(), decide)
    assert decisions == [[0, 0], [1, 0, 1], [-1], [1, 0]]
    assert [c[0] for c in calls] == [0, 1, 3]
    assert [c[1] for c in calls] == [[True, True], [False, True], [False, True]]
    assert calls[2][2][1][:2] == [1000, 1000]  # p1 has left by p3's arrival
    # demand 0.5 + 2 + 2 + 1 = 5.5 GPUs; placed 0.5 + 2 + 1
    assert m["allocated_gpu_pct"] == pytest.approx(100 * 3.5 / 5.5)
    assert (m["rejected_pods"], m["rejected_gpu_pods"]) == (1, 1)


def test_a_bad_placement_costs_demand_by_hand():
    # the half GPU on node 1 leaves no node with two free GPUs: p1 and p2 are rejected
    decide, calls = scripted({0: (1, [1]), 3: (0, [0])})
    decisions, m = sim.simulate(tiny_cluster(), tiny_pods(), decide)
    assert decisions == [[1, 1], [-1], [-1], [0, 0]]
    assert [c[0] for c in calls] == [0, 3]
    assert m["allocated_gpu_pct"] == pytest.approx(100 * 1.5 / 5.5)


def test_a_voluntary_rejection_and_the_model_constraint():
    allowed = np.ones((4, len(sim.MODELS)), dtype=bool)
    allowed[0] = [m == "T4" for m in sim.MODELS]  # p0 may only run on node 1 (T4)
    # p0 -> node 1 leaves no node with two whole GPUs (p1, p2 rejected, no call); p3 refused
    decide, calls = scripted({0: (1, [0]), 3: (-1, [])})
    decisions, m = sim.simulate(tiny_cluster(), tiny_pods(allowed), decide)
    assert [(c[0], c[1]) for c in calls] == [(0, [False, True]), (3, [True, True])]
    assert decisions == [[1, 0], [-1], [-1], [-1]]
    assert m["allocated_gpu_pct"] == pytest.approx(100 * 0.5 / 5.5)
    assert m["rejected_pods"] == 3


def test_fragmentation_by_hand():
    target = {
        "cpu_milli": np.array([1000, 1000]),
        "memory_mib": np.array([1024, 1024]),
        "num_gpu": np.array([1, 2]),
        "gpu_milli": np.array([500, 1000]),
        "weight": np.array([0.5, 0.5]),
    }
    gpu = np.zeros((3, 8), dtype=np.int64)
    gpu[0, :3] = [1000, 300, 0]  # half-GPU type: GPU 1's 300 is stranded; 2-GPU type: all 1300
    gpu[1, :2] = [1000, 1000]  # both types fit, nothing stranded
    gpu[2, :2] = [1000, 1000]  # but no CPU left: every idle GPU is stranded
    f = sim.node_fragmentation([8000, 8000, 0], [8192, 8192, 8192], gpu, target)
    assert f.tolist() == pytest.approx([0.5 * 0.3 + 0.5 * 1.3, 0.0, 2.0])


def test_target_workload_is_the_most_frequent_shapes():
    (w,) = sim.make_workloads("train")
    t = sim.target_workload(w)
    assert len(t["weight"]) == sim.TARGET_TYPES and t["weight"].sum() == pytest.approx(1)
    assert (t["cpu_milli"][0], t["memory_mib"][0], t["num_gpu"][0], t["gpu_milli"][0]) == (
        3152,
        5600,
        1,
        810,
    )
    assert (np.diff(t["weight"]) <= 0).all()


# ---------------------------------------------------------------- invalid choices


BAD_CHOICES = {
    "not a pair": (3, "a pair (node, gpus)"),
    "triple": ((0, [0], 1), "a pair (node, gpus)"),
    "float node": ((0.0, [0]), "the node must be an integer"),
    "nan node": ((float("nan"), [0]), "the node must be an integer"),
    "bool node": ((True, [0]), "the node must be an integer"),
    "string gpu": ((0, ["0"]), "a GPU index must be an integer"),
    "out of range": ((2, [0]), "node 2 does not exist"),
    "negative": ((-2, [0]), "node -2 does not exist"),
    "reject with gpus": ((-1, [0]), "takes no GPUs"),
    "too few gpus": ((0, []), "needs 1 distinct GPUs"),
    "missing gpu": ((0, [3]), "node 0 has no GPU 3"),
    "infeasible": ((0, [0]), "does not fit node 0"),
    "duplicate gpus": ((1, [0, 0]), "needs 2 distinct GPUs"),
}
SECOND_POD = ("infeasible", "duplicate gpus")


@pytest.mark.parametrize("name", list(BAD_CHOICES))
def test_invalid_choices_are_rejected_with_the_pod(name):
    choice, fragment = BAD_CHOICES[name]
    # the bad choice for p0, or p0 on node 0 and the bad choice for p1 (which fits node 1 only)
    choices = {0: (0, [0]), 1: choice} if name in SECOND_POD else {0: choice}
    decide, _ = scripted(choices)
    with pytest.raises(kit.Invalid, match=r"tiny, pod \d") as e:
        sim.simulate(tiny_cluster(), tiny_pods(), decide)
    assert fragment in str(e.value)


def test_a_gpu_without_room_is_invalid():
    decide, _ = scripted({0: (1, [0]), 1: (-1, []), 2: (-1, []), 3: (1, [0])})
    pods = tiny_pods()
    pods.leave[0] = 10**9
    with pytest.raises(kit.Invalid, match="GPU 0 of node 1 has 500 milli free"):
        sim.simulate(tiny_cluster(), pods, decide)


@pytest.mark.parametrize(
    "outputs, fragment",
    [
        ({}, "'decisions' list"),
        ({"decisions": []}, "expected decisions for 1 workloads"),
        ({"decisions": [[[-1]] * 10]}, "list of 1500 decisions"),
        ({"decisions": [[[0.0]] * 1500]}, "non-empty list of ints"),
        ({"decisions": [[[]] * 1500]}, "non-empty list of ints"),
        ({"decisions": [[[True]] * 1500]}, "non-empty list of ints"),
        ({"decisions": [[[-1]] * 1500]}, None),  # rejecting everything is valid (score 0)
        ({"decisions": [[[0, 0]] * 1500]}, "replay: quick, pod"),
    ],
)
def test_score_replays_and_rejects_bad_logs(outputs, fragment):
    r = ev.score(outputs, "quick")
    if fragment is None:
        assert r["score"] == 0.0 and r["metrics"]["rejected_pods"] == 1500
    else:
        assert r["valid"] is False and fragment in r["artifacts"]["error"]


def test_score_refuses_a_log_that_skips_a_placeable_pod():
    outputs = ev.evaluate(str(PROBLEM / "seed.py"), "quick")["outputs"]
    first = outputs["decisions"][0][0]
    assert first != [-1]
    outputs["decisions"][0][0] = [first[0], *first[1:]]  # unchanged: still valid
    assert ev.score(outputs, "quick")["score"] == 100.0
    outputs["decisions"][0][0] = [5000, 0]
    r = ev.score(outputs, "quick")
    assert r["valid"] is False and "node 5000 does not exist" in r["artifacts"]["error"]


# ---------------------------------------------------------------- data and generator


def test_problem_toml_and_sources_declare_the_data():
    cfg = tomllib.loads((PROBLEM / "problem.toml").read_text())
    p, e = cfg["problem"], cfg["evaluation"]
    assert (p["name"], p["entry"], p["metric"], p["direction"]) == (
        "gpu_placement",
        "seed.py",
        "allocated_gpu_pct",
        "maximize",
    )
    assert e["splits"] == list(sim.SPLITS) and (e["train_split"], e["test_split"]) == (
        "train",
        "test",
    )
    assert e["cascade"] == [{"split": "quick", "threshold": 50.0}]
    sources = (DATA / "SOURCES.md").read_text()
    for entry in cfg["data"]:
        assert sha256_of(DATA / entry["path"]) == entry["sha256"] and entry["sha256"] in sources
    assert "github.com/alibaba/clusterdata" in sources and "fetch_data.py" in sources
    ensure(
        [DataFile(d["path"], sha256=d["sha256"]) for d in cfg["data"]],
        DATA,
        download=False,
    )


def test_held_out_variants_are_hidden_from_train(tmp_path, monkeypatch):
    evaluator = CandidateEvaluator(load_problem(PROBLEM), sandbox=None)
    variants = {str(DATA / f) for f in sim.VARIANTS.values()}
    for split in ("quick", "train"):
        assert set(evaluator.hidden(split)) == variants
    assert evaluator.hidden("test") == ()  # a run's private variants are drawn from the train list
    assert str(DATA / sim.VARIANTS["gpushare"]) not in evaluator.hidden("gpushare")
    # as the sandbox shows a held-out file to a train evaluation: it exists and reads as empty
    shutil.copy(DATA / sim.NODE_FILE, tmp_path)
    shutil.copy(DATA / sim.TRAIN_FILE, tmp_path)
    for f in sim.VARIANTS.values():
        (tmp_path / f).write_text("")
    monkeypatch.setenv("EVOLVE_DATA_DIR", str(tmp_path))
    assert len(sim.make_workloads("train")[0]) == 8152
    with pytest.raises(ValueError, match="expected a pod list"):
        sim.make_workloads("test")
    (tmp_path / sim.VARIANTS["multigpu"]).unlink()
    with pytest.raises(FileNotFoundError, match="data file missing"):
        sim.make_workloads("multigpu")


def test_the_cluster_sample_and_the_variants():
    nodes = sim.load_nodes()
    assert len(nodes) == 122 and int(nodes.num_gpus.sum()) == 626
    (train,) = sim.make_workloads("train")
    share, multi, spec = sim.make_workloads("test")
    assert len(train) == len(share) == len(multi) == len(spec) == 8152
    assert np.array_equal(train.arrive, share.arrive)

    def frac(w, mask):
        return float(mask(w).mean())

    def sharing(w):
        return (w.num_gpu == 1) & (w.milli < 1000)

    assert frac(train, sharing) < 0.5 < frac(share, sharing) == pytest.approx(0.6, abs=0.02)
    assert frac(train, lambda w: w.num_gpu > 1) < 0.01
    assert frac(multi, lambda w: w.num_gpu > 1) == pytest.approx(0.1, abs=0.01)
    constrained = ~spec.allowed.all(axis=1)
    assert constrained.sum() / (spec.num_gpu > 0).sum() == pytest.approx(0.33, abs=0.02)
    assert not train.allowed[:, 0].any() or train.allowed.all()
    assert sim.make_workloads("quick")[0].arrive.tolist() == train.arrive[:1500].tolist()
    with pytest.raises(ValueError, match="unknown split"):
        sim.make_workloads("validation")


def test_fetch_rebuilds_every_file_from_the_upstream_csvs(tmp_path):
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    for name in fetcher.DOWNLOADED:
        shutil.copy(DATA / name, upstream / name)
    written = fetcher.fetch(upstream.as_uri(), tmp_path / "data")
    assert len(written) == 5
    for path in written:
        assert path.read_bytes() == (DATA / path.name).read_bytes()
    assert fetcher.main(["--source", str(upstream), "--data-dir", str(tmp_path / "local")]) == 0
    text = (upstream / fetcher.DOWNLOADED[1]).read_text()
    (upstream / fetcher.DOWNLOADED[1]).write_text(text.replace(",12000,", ",12001,", 1))
    with pytest.raises(ValueError, match="upstream changed"):
        fetcher.fetch(str(upstream), tmp_path / "data2")
    assert not (tmp_path / "data2").exists()
    assert fetcher.main(["--source", str(tmp_path / "missing"), "--data-dir", str(tmp_path)]) == 1
    want = fetcher.expected_sha256()
    assert hashlib.sha256((DATA / sim.NODE_FILE).read_bytes()).hexdigest() == want[sim.NODE_FILE]


# ---------------------------------------------------------------- programs


def test_mutating_the_arguments_is_harmless():
    nodes = sim.load_nodes()
    (w,) = sim.make_workloads("quick")
    best = policy(block_body(BASELINES / "best_fit.py"))

    def shifty(pod, view, workload):
        out = best(pod, view, workload)
        view["gpu_free"][:] = 1000
        view["fits"][:] = True
        workload["weight"][:] = 0
        return out

    def honest(i, fits, cluster):
        return best(sim.pod_view(w, i), cluster.view(fits), sim.target_workload(w))

    def tampering(i, fits, cluster):
        return shifty(sim.pod_view(w, i), cluster.view(fits), sim.target_workload(w))

    assert sim.simulate(nodes, w, tampering) == sim.simulate(nodes, w, honest)


def test_canned_llm_edits_behave_as_documented(tmp_path):
    r = run(with_block(PROBLEM, VARIANT["share_packing"], tmp_path), "train")
    assert r["score"] > BEST_FIT_TRAIN
