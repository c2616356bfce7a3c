"""problems/soc_scheduling: the simulator on hand-computed cases, HEFT on Topcuoglu's example,
the README's single-job numbers, the DS3 data, its splits and fetch script, the arrivals under
a run's private seed, and the trusted replay's checks. The README's baseline numbers, bad and
hostile candidates through the real `evolve eval` CLI and a scripted run:
tests/test_problem_conformance.py, with problems/soc_scheduling/conformance.toml."""

from __future__ import annotations

import copy
import functools
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from evaluators import kit
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.data import data_dir_for, sha256_of
from evolve.problem.load import load_problem
from tests.support.problem_hostile import complete_baseline, load_module

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "soc_scheduling"
DATA = data_dir_for(PROBLEM)

sys.path.insert(0, str(PROBLEM))  # the evaluator imports its simulator, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
sim = ev.sim
fmt = sim.fmt
seed = load_module(PROBLEM / "seed.py")
fetcher = load_module(PROBLEM / "fetch_data.py")


@functools.cache
def baseline(name: str):
    """A baseline completed with the seed's fixed code, imported in this process."""
    return load_module(complete_baseline(PROBLEM, name, Path(tempfile.mkdtemp())))


def run_jobs(policy, soc, apps, jobs) -> sim.Sim:
    """Every epoch of `jobs` through `policy.schedule`, as the evaluator calls it."""
    s, memory = sim.Sim(soc, apps, jobs), {}
    while s.advance():
        st = s.state()
        st["memory"] = memory
        if s.epochs == 1:
            st["platform"], st["apps"] = sim.platform_arg(soc), sim.apps_arg(apps)
        s.apply(policy.schedule(st))
    return s


# ---------------------------------------------------------------- the simulator, by hand

# Two PEs; 'a' runs on both (4 / 2 us), 'b' on both (5 / 3), 'c' only on PE 1 (7).
# Bandwidth 10 between the PEs, 10000 on the same PE: a 100-bit edge costs int(100 / 10) = 10 us
# across, int(100 / 10000) = 0 on the same PE.
SOC2 = fmt.SoC(["P_0", "Q_0"], ["P", "Q"], {"a": [4.0, 2.0], "b": [5.0, 3.0], "c": [None, 7.0]},
               [[10000.0, 10.0], [10.0, 10000.0]])  # fmt: skip
FORK = fmt.App(
    "fork", ["a", "b", "c"], [[], [(0, 100)], [(0, 100)]], [[(1, 100), (2, 100)], [], []]
)
ONE = fmt.App("one", ["a"], [[]], [[]])


def test_a_fork_across_two_pes_by_hand():
    s = sim.Sim(SOC2, {"fork": FORK}, [(0, "fork")])
    assert s.advance() and s.now == 0 and s.ready == [(0, 0)]
    assert s.apply([[0, 1]]) == [[0, 1]]  # a on Q: 0 -> 2
    assert s.advance() and s.now == 2 and s.ready == [(0, 1), (0, 2)]
    st = s.state()
    assert st["ready"][0]["parents"] == [[1, 2, 100]] and st["pe_free"] == [0, 2]
    # b on P: its input crosses, max(now 2, P free 0, 2 + 10) = 12, ends 17;
    # c on Q: same PE as a, max(2, Q free 2, 2 + 0) = 2, ends 9.
    s.apply([[0, 0], [1, 1]])
    assert s.finish[0] == [2, 17, 9] and s.pe_free == [17, 9]
    assert not s.advance() and s.results()["latency"] == [17]


def test_a_pe_runs_its_queue_in_the_given_order():
    """Both children on Q: c first (2 -> 9), then b waits for Q (9 -> 12): latency 12."""
    s = sim.Sim(SOC2, {"fork": FORK}, [(0, "fork")])
    s.advance()
    s.apply([[0, 1]])
    s.advance()
    s.apply([[1, 1], [0, 1]])
    assert s.finish[0] == [2, 12, 9] and s.pe_tasks == [0, 2]
    assert not s.advance() and s.results()["makespan"] == 12


def test_a_later_job_queues_behind_an_earlier_one():
    """Job 0 at t=0 on Q: 0 -> 2; job 1 arrives at t=1, Q drains at 2: 2 -> 4, latency 3."""
    s = sim.Sim(SOC2, {"one": ONE}, [(0, "one"), (1, "one")])
    s.advance()
    s.apply([[0, 1]])
    assert s.advance() and s.now == 1 and s.ready == [(1, 0)]
    s.apply([[0, 1]])
    assert not s.advance()
    assert s.results() == {"latency": [2, 3], "per_app": {"one": [2, 3]}, "makespan": 4,
                           "epochs": 2}  # fmt: skip


def test_transfers_truncate_like_ds3():
    assert sim.comm_us(SOC2, 105, 0, 1) == 10 and sim.comm_us(SOC2, 9, 0, 1) == 0
    assert sim.comm_us(SOC2, 100, 1, 1) == 0


def test_the_seed_helpers_are_the_simulators_model():
    """finish_us in the candidate file predicts the trusted simulator's finish times."""
    platform = sim.platform_arg(SOC2)
    task = {"func": "b", "parents": [[1, 2, 100]]}
    assert seed.data_ready(task, 0, platform, 2) == 12
    assert seed.finish_us(task, 0, platform, 2, [0, 2]) == 17
    assert seed.finish_us(task, 1, platform, 2, [0, 9]) == 12
    assert seed.capable(platform, "c") == [1]


# ---------------------------------------------------------------- published numbers


def test_heft_on_topcuoglus_example_gives_the_published_schedule():
    """Topcuoglu et al. (2002), Fig. 2 / Table: HEFT's makespan on the 10-task DAG is 80, with
    n1, n3, n5, n7 on P3, n2, n8 on P1, n4, n6, n9, n10 on P2 (DS3's job_Top on SoC.Top)."""
    soc = fmt.parse_soc((DATA / "SoC.Top.txt").read_text())
    apps = {"top": fmt.parse_job((DATA / "job_Top.txt").read_text())}
    s = run_jobs(baseline("heft.py"), soc, apps, [(0, "top")])
    assert s.results()["makespan"] == 80
    assert s.pe[0] == [2, 0, 2, 1, 2, 1, 2, 0, 1, 1]
    assert s.finish[0] == [9, 40, 28, 26, 38, 42, 49, 62, 68, 80]


@pytest.mark.parametrize("app, met, etf", [("wifi_tx", 71, 71), ("wifi_rx", 300, 291),
                                           ("range_det", 176, 176)])  # fmt: skip
def test_one_job_alone_as_the_readme_states(app, met, etf):
    soc, apps = sim.load_soc(), sim.load_apps([app])
    for name, want in (("met.py", met), ("etf.py", etf)):
        assert run_jobs(baseline(name), soc, apps, [(0, app)]).results()["latency"] == [want]


# ---------------------------------------------------------------- data, splits, fetch


def test_data_files_match_their_checksums():
    entries = fetcher.FILES
    assert len(entries) == 10
    for e in entries:
        assert sha256_of(DATA / e["path"]) == e["sha256"], e["path"]
    text = (DATA / "SOURCES.md").read_text()
    assert all(e["sha256"] in text and e["url"] in text for e in entries)


def test_the_soc_and_apps_read_as_described():
    soc = sim.load_soc()
    assert soc.n == 16 and soc.pe_types.count("LTL") == 4 and soc.pe_types.count("ACC_2") == 4
    assert soc.band[4][5] == 1000 and soc.band[4][10] == 10 and soc.band[4][4] == 10000
    sizes = {a: x.n for a, x in sim.load_apps(sim.APP_FILES).items()}
    assert sizes == {"wifi_tx": 27, "wifi_rx": 34, "sc_tx": 8, "sc_rx": 8, "range_det": 7,
                     "temp_mit": 10}  # fmt: skip


def test_held_out_apps_are_hidden_from_train(tmp_path, monkeypatch):
    evaluator = CandidateEvaluator(load_problem(PROBLEM), sandbox=None)
    held_out = sorted(str(DATA / n) for n in ("job_LAG.txt", "job_TEMP_MIT.txt"))
    assert sorted(evaluator.hidden("train")) == held_out and evaluator.hidden("test") == ()
    assert not {a for sc in sim.scenarios("train") for a in sc.mix} & {"range_det", "temp_mit"}
    for e in fetcher.FILES:  # as a train evaluation sees the data: the held-out files absent
        if e["path"] not in ("job_LAG.txt", "job_TEMP_MIT.txt"):
            shutil.copy(DATA / e["path"], tmp_path / e["path"])
    monkeypatch.setenv("EVOLVE_DATA_DIR", str(tmp_path))
    assert ev.evaluate(str(PROBLEM / "seed.py"), "train")["outputs"]["logs"]
    with pytest.raises(FileNotFoundError, match="missing data file job_LAG.txt"):
        sim.load_apps(["range_det"])


def test_fetch_rebuilds_every_file_from_a_local_mirror(tmp_path):
    flat, nested = tmp_path / "flat", tmp_path / "nested"
    flat.mkdir()
    for e in fetcher.FILES:
        shutil.copy(DATA / e["path"], flat / e["path"])
        target = nested / fetcher.repo_path(e)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / e["path"], target)
    assert fetcher.repo_path(fetcher.FILES[1]) == "config_SoC/SoC.MULTIPLE_BAL.txt"
    for base in (str(flat), str(nested), nested.as_uri()):
        out = tmp_path / f"out{len(base)}"
        written = fetcher.fetch(base, out)
        assert len(written) == 10
        assert all(p.read_bytes() == (DATA / p.name).read_bytes() for p in written)
    assert fetcher.source_of({"path": "x.txt", "url": "U"}, None) == "U"
    (flat / "job_SCT.txt").write_text("job_name changed\n")
    with pytest.raises(ValueError, match="upstream file changed"):
        fetcher.fetch(str(flat), tmp_path / "keep")
    assert not (tmp_path / "keep" / "job_SCT.txt").exists()
    assert (
        fetcher.main(["--base", str(tmp_path / "nowhere"), "--data-dir", str(tmp_path / "x")]) == 1
    )
    assert fetcher.main(["--base", str(nested), "--data-dir", str(tmp_path / "y")]) == 0


# ---------------------------------------------------------------- arrivals and the data seed


def test_train_arrivals_are_the_readmes_public_workloads():
    train = {sc.name: sc for sc in sim.scenarios("train")}
    assert [(n, sc.rate, sc.seed) for n, sc in train.items()] == [
        ("wifi_rx_heavy@2", 2, 101), ("wifi_rx_heavy@5", 5, 102), ("wifi_rx_heavy@8", 8, 103),
        ("wifi_tx_heavy@4", 4, 111), ("wifi_tx_heavy@10", 10, 112),
        ("single_carrier@10", 10, 121), ("single_carrier@30", 30, 122),
    ]  # fmt: skip
    assert train["wifi_rx_heavy@2"].mix == {"wifi_tx": 0.2, "wifi_rx": 0.8}
    jobs = sim.arrivals(train["wifi_rx_heavy@8"])
    assert len(jobs) == 100 and jobs[:3] == [(0, "wifi_rx"), (76, "wifi_rx"), (242, "wifi_rx")]
    assert jobs[-1][0] == 12769 and sum(a == "wifi_rx" for _, a in jobs) == 84
    assert sim.arrivals(train["single_carrier@30"])[-1][0] == 3923
    with pytest.raises(ValueError, match="unknown split"):
        sim.scenarios("validation")


def test_a_private_data_seed_changes_every_scenarios_arrivals():
    every = sim.scenarios("train") + sim.scenarios("test")
    public = [sim.arrivals(sc) for sc in every]
    try:
        kit.use_data_seed(12345)
        private = [sim.arrivals(sc) for sc in every]
        assert all(a != b for a, b in zip(public, private, strict=True))
        assert private == [sim.arrivals(sc) for sc in every]  # deterministic under one seed
        kit.use_data_seed(54321)
        assert sim.arrivals(every[-1]) != private[-1]
    finally:
        kit.use_data_seed(None)
    assert [sim.arrivals(sc) for sc in every] == public


# ---------------------------------------------------------------- the trusted replay


@functools.cache
def seed_logs() -> list:
    """What evaluate() logs for the seed (ETF) on train."""
    return ev.evaluate(str(PROBLEM / "seed.py"), "train")["outputs"]["logs"]


def test_score_of_the_seed_replays_its_logs():
    r = ev.score({"logs": copy.deepcopy(seed_logs())}, "train")
    assert r.get("valid", True) is True and f"{r['score']:.2f}" == "-205.65"
    assert f"{r['metrics']['latency_us_wifi_rx_heavy@8']:.1f}" == "440.9"


def _edit(edit):
    logs = copy.deepcopy(seed_logs())
    edit(logs)
    return {"logs": logs}


@pytest.mark.parametrize("outputs, error", [
    ({}, "outputs must be a dict with a 'logs' list of 7 decision logs"),
    ({"logs": [[]] * 6}, "outputs must be a dict with a 'logs' list of 7 decision logs"),
    (lambda: _edit(lambda g: g.__setitem__(2, "etf")), "scenario wifi_rx_heavy@8: its decision log must be a list"),
    (lambda: _edit(lambda g: g[0].pop()), "scenario wifi_rx_heavy@2: only 1950 decisions logged, but it has more epochs"),
    (lambda: _edit(lambda g: g[0].append([[0, 4]])), "scenario wifi_rx_heavy@2: 1952 decisions logged, but it has only 1951 epochs"),
    (lambda: _edit(lambda g: g[0].__setitem__(0, [[0, 14]])), "scenario wifi_rx_heavy@2, epoch 0 (t=0 us): PE 14 (VIT_0) cannot run 'match_filter'"),
    (lambda: _edit(lambda g: g[1].__setitem__(0, [[0, 4], [0, 5]])), "scenario wifi_rx_heavy@5, epoch 0 (t=0 us): expected 1 [ready index, PE] pairs (one per ready task), got 2"),
    (lambda: _edit(lambda g: g[1].__setitem__(0, [[1, 4]])), "scenario wifi_rx_heavy@5, epoch 0 (t=0 us): ready index 1 is outside [0, 1)"),
    (lambda: _edit(lambda g: g[1].__setitem__(0, [[True, 4]])), "scenario wifi_rx_heavy@5, epoch 0 (t=0 us): ready index and PE must be ints, got True (bool)"),
    (lambda: _edit(lambda g: g[1].__setitem__(0, [[0, 4, 1]])), "scenario wifi_rx_heavy@5, epoch 0 (t=0 us): each entry must be a [ready index, PE] pair, got [0, 4, 1]"),
])  # fmt: skip
def test_score_rejects_bad_logs_with_one_line(outputs, error):
    r = ev.score(outputs() if callable(outputs) else outputs, "train")
    assert r["valid"] is False and r["artifacts"]["error"] == error
