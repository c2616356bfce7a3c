"""A run's private data seed: candidates cannot regenerate the workloads they are scored on.

Issue 23 item 3: binpack's train items came from a seed written in its evaluator, so a
candidate regenerated them, packed them offline and answered priority() from a lookup.
Every generated workload is now drawn under a seed the run draws (evolve/data_seed.py),
kept in the archive, and handed to trusted code only (kit.seed).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from evaluators import kit
from evolve.evaluation import CandidateEvaluator
from evolve.problem import load_problem
from evolve.sandboxes import make_sandbox
from tests.cli_helpers import BINPACK, archive_json, evolve, run_args
from tests.scripted_llm import ScriptedLLM, binpack_replies

# A candidate that replays binpack's public train seed (7002: 5 instances of 5,000 Weibull
# items), packs each instance offline (first fit decreasing) and answers priority() from a
# lookup keyed on the exact (item, bins) state; a state it never saw gets best fit.
LOOKUP = '''
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
'''


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
SNOOP = '''
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
'''


def test_the_candidate_cannot_find_the_seed(local_sandbox):
    seed = 987654321987654321
    ev = CandidateEvaluator(load_problem(BINPACK), local_sandbox, data_seed=seed)
    res = ev.run_split(SNOOP.replace("SEED)", f"{seed})"), "quick")
    assert res.status == "ok", res.artifacts.get("error")


def test_jssp_held_out_instances_are_disguised_under_a_run_seed():
    """Taillard's instances come from a published generator: under a run seed the held-out
    ones are relabelled (and maybe reversed), which keeps the published optimum exact, so
    no rule can beat it, while no state of the public instance occurs."""
    import importlib.util
    import sys

    folder = Path(__file__).resolve().parent.parent / "problems" / "jssp"
    sys.path.insert(0, str(folder))
    try:
        spec = importlib.util.spec_from_file_location("jssp_sim_seeded", folder / "jssp_sim.py")
        assert spec is not None and spec.loader is not None
        sim = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(sim)
    finally:
        sys.path.remove(str(folder))
    public = sim.make_instances("test")
    try:
        kit.use_data_seed(424242)
        private = sim.make_instances("test")
        again = sim.make_instances("test")
    finally:
        kit.use_data_seed(None)
    assert [i.name for i in private] == [i.name for i in public]
    assert [i.machines for i in private] == [i.machines for i in again]  # score() replays it
    moved = 0
    for pub, priv in zip(public, private, strict=True):
        assert (priv.size, priv.ref) == (pub.size, pub.ref)
        assert sorted(map(sorted, priv.durations)) == sorted(map(sorted, pub.durations))
        moved += (priv.machines, priv.durations) != (pub.machines, pub.durations)
    assert moved == len(public)
    rule = lambda op: float(op.remaining_work)  # noqa: E731  (MWKR, the seed)
    for insts in (public[:12], private[:12]):
        sequences, _ = sim.schedule(rule, insts)
        for inst, seq in zip(insts, sequences, strict=True):
            assert sim.replay(inst, seq) >= inst.ref  # never below the published optimum
