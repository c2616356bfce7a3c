"""A run's private data seed: candidates cannot regenerate the workloads they are scored on.

Issue 23 item 3: binpack's train items came from a seed written in its evaluator, so a
candidate regenerated them, packed them offline and answered priority() from a lookup.
Every generated workload is now drawn under a seed the run draws (evolve/problem/data_seed.py),
kept in the archive, and handed to trusted code only (kit.seed).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evaluators.backends import make_sandbox
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import BINPACK, archive_json, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM, binpack_replies

# A candidate that replays binpack's public train seed (7002: 5 instances of 5,000 Weibull
# items), packs each instance offline (first fit decreasing) and answers priority() from a
# lookup keyed on the exact (item, bins) state; a state it never saw gets best fit.
LOOKUP = """
import numpy as np

def _plan():
    rng = np.random.default_rng(7002)
    table = {}
    for _ in range(5):
        items = np.floor(np.clip(rng.weibull(3.0, 5000) * 45.0, 1, 100))
        left = np.full(len(items), 100.0)
        target = np.empty(len(items), dtype=np.int64)
        for i in np.argsort(-items, kind="stable"):
            b = int(np.argmax(left >= items[i]))
            left[b] -= items[i]
            target[i] = b
        pool = np.full(len(items), 100.0)
        for i, item in enumerate(items):
            valid = np.flatnonzero(pool - item >= 0)
            table[(float(item), pool[valid].tobytes())] = int(np.searchsorted(valid, target[i]))
            pool[target[i]] -= item
    return table

_TABLE = _plan()

def priority(item, bins):
    bins = np.asarray(bins, dtype=np.float64)
    at = _TABLE.get((float(item), bins.tobytes()))
    if at is None:
        return -(bins - item)
    out = np.zeros(len(bins))
    out[at] = 1.0
    return out
"""


@pytest.fixture(scope="module")
def local_sandbox():
    sandbox = make_sandbox("local", 1)
    yield sandbox
    sandbox.close()


def _train(sandbox, data_seed: int | None) -> float:
    ev = CandidateEvaluator(load_problem(BINPACK), sandbox, data_seed=data_seed)
    res = ev.run_split(LOOKUP, "train")
    assert res.status == "ok" and res.score is not None, res.artifacts
    return res.score


def test_a_lookup_of_the_public_train_items_wins_nothing_under_a_run_seed(local_sandbox):
    public = _train(local_sandbox, None)
    assert public > -1.5  # the attack: best fit is -3.88, FunSearch's heuristic -0.74
    private = _train(local_sandbox, 123456789)
    assert private < -2.5  # best fit again: the lookup never matches a state


def test_kit_seed_is_public_without_a_run_seed_and_private_with_one():
    assert kit.seed(7002) == 7002 and not kit.private_data()
    try:
        kit.use_data_seed(5)
        assert kit.private_data()
        a, b = kit.seed(7002), kit.seed(7003)
        assert a != 7002 and a != b and 0 <= a < 2**63
        kit.use_data_seed(6)
        assert kit.seed(7002) != a
        with pytest.raises(ValueError):
            kit.use_data_seed(-1)
    finally:
        kit.use_data_seed(None)


# ---- runs ---------------------------------------------------------------------------------


def _runs_table(runs: Path) -> dict[str, int | None]:
    db = sqlite3.connect(runs / "archive.db")
    try:
        return dict(db.execute("SELECT run_id, data_seed FROM runs").fetchall())
    finally:
        db.close()


def _scores(runs: Path, run_id: str) -> list[tuple]:
    db = sqlite3.connect(runs / "archive.db")
    try:
        return db.execute(
            "SELECT iteration, status, score, test_score FROM programs WHERE run_id=?"
            " ORDER BY iteration",
            (run_id,),
        ).fetchall()
    finally:
        db.close()


def test_runs_draw_their_own_seed_keep_it_on_resume_and_never_show_it(tmp_path):
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(binpack_replies()) as srv:
        for rid in ("a", "b"):
            r = evolve(*run_args(srv.base_url, runs, "--run-id", rid, iterations=2), timeout=600)
            assert r.returncode == 0, r.stdout + r.stderr
        seeds = _runs_table(runs)
        assert seeds["a"] is not None and seeds["b"] is not None and seeds["a"] != seeds["b"]
        r = evolve("resume", "a", "--iterations", "3", "--runs-dir", str(runs), "--no-progress")
        assert r.returncode == 0, r.stdout + r.stderr
        assert _runs_table(runs)["a"] == seeds["a"]
        requests = json.dumps(srv.requests)
    # the seed reaches no prompt, in any spelling a model could read
    for seed in seeds.values():
        assert seed is not None
        for text in (str(seed), hex(seed), f"{seed:,}"):
            assert text not in requests
    assert "data_seed" not in requests and "data-seed" not in requests
    listed = {r["run_id"]: r for r in archive_json(runs, "runs")}
    assert listed["a"]["data_seed"] == seeds["a"]  # the user may see it; models may not
    from starlette.testclient import TestClient

    from evolve.web.app import make_app

    page = TestClient(make_app(runs)).get("/runs/a").text
    assert f"private ({seeds['a']})" in page  # and the run page says which workloads


def test_a_fixed_data_seed_gives_the_same_scores_and_eval_reproduces_them(tmp_path):
    runs = tmp_path / "runs"
    for rid in ("x", "y"):  # each run its own server: the same replies in the same order
        with ScriptedLLM.from_list(binpack_replies()) as srv:
            r = evolve(
                *run_args(srv.base_url, runs, "--run-id", rid, "--data-seed", "42", iterations=1),
                timeout=600,
            )
            assert r.returncode == 0, r.stdout + r.stderr
    assert _runs_table(runs) == {"x": 42, "y": 42}
    x, y = _scores(runs, "x"), _scores(runs, "y")
    assert x[0][1] == "ok" and x[0][3] is not None and x == y  # train and held-out scores
    seed = ("eval", str(BINPACK), str(BINPACK / "seed.py"), "--json")
    at_42 = json.loads(evolve(*seed, "--data-seed", "42").stdout)
    held_out = json.loads(evolve(*seed, "--data-seed", "42", "--split", "test").stdout)
    public = json.loads(evolve(*seed).stdout)
    assert (at_42["score"], held_out["score"]) == (x[0][2], x[0][3])
    assert public["score"] != x[0][2]  # -3.88, the README's number


# A candidate that looks for the seed wherever it runs: its environment, its files, every
# object of its process and the frames above it; it fails loudly with whatever it found.
SNOOP = """
import gc, os, sys
import numpy as np

def _look(seed):
    found = []
    for k, v in os.environ.items():
        if str(seed) in v or "DATA_SEED" in k.upper():
            found.append(f"env {k}")
    for root in (os.getcwd(), "/tmp"):
        try:
            for name in os.listdir(root):
                try:
                    with open(os.path.join(root, name), "rb") as f:
                        if str(seed).encode() in f.read(1 << 20):
                            found.append(f"file {name}")
                except OSError:
                    pass
        except OSError:
            pass
    for o in gc.get_objects():
        if isinstance(o, dict) and "data_seed" in o:
            found.append("a dict with data_seed")
            break
    f = sys._getframe().f_back  # the frames above the candidate's own
    while f is not None and f.f_code.co_filename == __file__:
        f = f.f_back
    while f is not None:
        if "data_seed" in f.f_locals or any(v == seed for v in f.f_locals.values() if type(v) is int):
            found.append(f"frame {f.f_code.co_name}")
        f = f.f_back
    return found

def priority(item, bins):
    found = _look(SEED)
    if found:
        raise RuntimeError("found the seed: " + "; ".join(found))
    return -(np.asarray(bins) - item)
"""


def test_the_candidate_cannot_find_the_seed(local_sandbox):
    seed = 987654321987654321
    ev = CandidateEvaluator(load_problem(BINPACK), local_sandbox, data_seed=seed)
    res = ev.run_split(SNOOP.replace("SEED)", f"{seed})"), "quick")
    assert res.status == "ok", res.artifacts.get("error")


# ---- the public held-out sets' private variants (jssp, llm_serving, gpu_placement) ---------

PROBLEMS = Path(__file__).resolve().parent.parent / "problems"


def _problem_file(problem: str, name: str):
    """One of a problem's files, imported with its folder on sys.path, as in the sandbox."""
    import importlib.util
    import sys

    folder = PROBLEMS / problem
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location(
            f"{problem}_{name[:-3]}_seeded", folder / name
        )
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
    return module


def _under(seed: int, make, *args):
    kit.use_data_seed(seed)
    try:
        return make(*args)
    finally:
        kit.use_data_seed(None)


def _jobs_both_ways(inst) -> set:
    """An instance's jobs' processing-time sequences, read both ways: what survives the
    disguise (jobs shuffled, machines relabelled, routes reversed), so what a candidate that
    canonicalised an instance would look its memorised answer up by."""
    return {t for dj in inst.durations for t in (tuple(dj), tuple(dj[::-1]))}


def test_jssp_held_out_instances_are_private_variants_under_a_run_seed():
    """Taillard's (and swv's, yn's) instances and optimal schedules are published: under a
    run seed the held-out instances are disguised and their processing times redrawn, so no
    job of the public instance occurs, even up to the disguise's symmetries; the gap is
    measured against a lower bound of each variant, which no schedule beats."""
    sim = _problem_file("jssp", "jssp_sim.py")
    public = sim.make_instances("test")
    private = _under(424242, sim.make_instances, "test")
    other = _under(424243, sim.make_instances, "test")
    again = _under(424242, sim.make_instances, "test")
    assert [i.name for i in private] == [i.name for i in public]
    for pub, priv, oth, rep in zip(public, private, other, again, strict=True):
        assert priv.size == pub.size
        assert not _jobs_both_ways(priv) & _jobs_both_ways(pub)  # the leak: none is public
        assert priv.durations != oth.durations  # each run its own
        assert (priv.machines, priv.durations, priv.ref) == (rep.machines, rep.durations, rep.ref)
        assert priv.ref == sim.lower_bound(priv) and not priv.optimal
    rule = lambda op: float(op.remaining_work)  # noqa: E731  (MWKR, the seed)
    for insts in (public[:12], private[:12], private[-12:]):
        sequences, _ = sim.schedule(rule, insts)
        for inst, seq in zip(insts, sequences, strict=True):
            assert sim.replay(inst, seq) >= inst.ref  # never below the optimum, nor the bound
    train = _under(424242, sim.make_instances, "train")  # train is the public files, seed or not
    assert [(i.durations, i.ref) for i in train] == [
        (i.durations, i.ref) for i in sim.make_instances("train")
    ]


def _optimum(sim, inst) -> int:
    """The optimal makespan, by enumerating every active schedule (Giffler-Thompson's tree)."""
    best = [10**9]

    def walk(gen) -> None:
        if gen.done:
            best[0] = min(best[0], gen.makespan)
            return
        for j in gen.conflict()[0]:
            child = object.__new__(type(gen))
            child.__dict__.update(
                {k: v[:] if isinstance(v, list) else v for k, v in vars(gen).items()}
            )
            child.dispatch(j)
            walk(child)

    walk(sim.GT(inst))
    return best[0]


def test_jssp_lower_bound_never_exceeds_an_optimum():
    import random

    sim = _problem_file("jssp", "jssp_sim.py")
    for split in ("train", "test"):  # the published optima and upper bounds
        for inst in sim.make_instances(split):
            assert sim.lower_bound(inst) <= inst.ref, inst.name
    rng = random.Random(23)
    tight = 0
    for _ in range(25):  # small random instances, solved exactly
        n, m = rng.choice([(2, 3), (3, 2), (3, 3), (4, 2)])
        machines = [rng.sample(range(m), m) for _ in range(n)]
        durations = [[rng.randint(1, 9) for _ in range(m)] for _ in range(n)]
        inst = sim.Instance("toy", machines, durations, 1.0)
        opt = _optimum(sim, inst)
        assert sim.lower_bound(inst) <= opt
        tight += sim.lower_bound(inst) == opt
    assert tight >= 10  # and it is not vacuous
    one = sim.Instance("one", [[0], [0], [0]], [[4], [2], [7]], 1.0)  # one machine: the sum
    assert sim.lower_bound(one) == 13 == _optimum(sim, one)


def test_llm_serving_train_and_test_windows_are_drawn_under_a_run_seed():
    """The Azure traces are public, true output lengths included, and the published windows
    are in evaluator.py: under a run seed train's and test's windows start where the run's
    seed says, away from every published window, as busy as the published ones."""
    ev = _problem_file("llm_serving", "evaluator.py")
    public = {s: ev.make_scenarios(s) for s in ev.SPLITS}
    runs = {seed: {s: _under(seed, ev.make_scenarios, s) for s in ev.SPLITS} for seed in (11, 12)}
    assert ev.make_scenarios("test")[0].arrival.tolist() == public["test"][0].arrival.tolist()
    for split in ("train", "test"):
        again = _under(11, ev.make_scenarios, split)
        for pub, a, b, rep in zip(
            public[split], runs[11][split], runs[12][split], again, strict=True
        ):
            assert a.name == pub.name
            for x, y in ((a, pub), (a, b)):  # not the public window, nor another run's
                assert len(x.prompt) != len(y.prompt) or not np.array_equal(x.prompt, y.prompt)
            assert np.array_equal(a.arrival, rep.arrival)  # score() replays the same window
            assert np.array_equal(a.output, rep.output)
    for pub, a in zip(public["quick"], runs[11]["quick"], strict=True):  # the screen stays
        assert np.array_equal(pub.arrival, a.arrival)
    times = {k: ev._trace(k)[0] for k in ev.TRACES}
    published = [(trace, s, s + n) for sc in ev.SPLITS.values() for _, trace, s, n, _ in sc]
    for seed in (11, 12):
        for split in ("train", "test"):
            starts = _under(seed, ev.private_starts, split, times)
            drawn = []
            for name, trace, start, length, _ in ev.SPLITS[split]:
                at = starts[name]
                t = times[trace]
                n = int(((t >= at) & (t < at + length)).sum())
                want = int(((t >= start) & (t < start + length)).sum())
                assert ev.WINDOW_BAND[0] * want <= n <= ev.WINDOW_BAND[1] * want
                for tr, a, b in published + drawn:  # no request of a public window, nor shared
                    assert tr != trace or at + length <= a or at >= b
                drawn.append((trace, at, at + length))


def test_gpu_placement_held_out_variants_are_drawn_under_a_run_seed():
    """The published variants come from fetch_data.py's public seeds: under a run seed the
    trusted evaluator draws its own from the default pod list at evaluation time, so a
    candidate cannot regenerate the pods to come (nor, for gpuspec, find train's list)."""
    sim = _problem_file("gpu_placement", "placement_sim.py")
    (train,) = sim.make_workloads("train")
    public = sim.make_workloads("test")
    runs = {seed: _under(seed, sim.make_workloads, "test") for seed in (11, 12)}

    def shapes(w):
        return np.stack([w.cpu, w.mem, w.num_gpu, w.milli, w.leave - w.arrive], axis=1)

    for k, pub in enumerate(public):
        a, b = runs[11][k], runs[12][k]
        assert a.name == pub.name and len(a) == len(pub) == len(train)
        assert np.array_equal(a.arrive, train.arrive)  # the trace's arrival slots, kept
        for x, y in ((a, pub), (a, b), (a, train)):  # its pods are the run's own draw
            assert (shapes(x) == shapes(y)).all(axis=1).mean() < 0.05
    share, multi, spec = runs[11]
    assert ((share.num_gpu == 1) & (share.milli < 1000)).mean() == pytest.approx(0.6, abs=0.02)
    assert (multi.num_gpu > 1).mean() == pytest.approx(0.1, abs=0.01)
    constrained = (~spec.allowed.all(axis=1)).sum() / (spec.num_gpu > 0).sum()
    assert constrained == pytest.approx(0.33, abs=0.02)
    (alone,) = _under(11, sim.make_workloads, "multigpu")  # one variant's split: the same draw
    assert np.array_equal(shapes(alone), shapes(multi))
    assert np.array_equal(shapes(_under(11, sim.make_workloads, "test")[2]), shapes(spec))


def test_gpu_placement_held_out_evaluation_draws_its_variants_in_the_sandbox(local_sandbox):
    """The held-out evaluation reads the default pod list (no longer hidden from it; the
    candidate's confined worker reads no data file in any split) and draws from it."""
    problem = load_problem(PROBLEMS / "gpu_placement")
    code = (PROBLEMS / "gpu_placement" / "seed.py").read_text()
    public = CandidateEvaluator(problem, local_sandbox).run_split(code, "multigpu")
    private = CandidateEvaluator(problem, local_sandbox, data_seed=11).run_split(code, "multigpu")
    assert public.status == private.status == "ok", (public.artifacts, private.artifacts)
    assert public.score == pytest.approx(48.0992, abs=1e-4)  # README's number, no seed
    assert private.score != public.score
