"""problems/dag_modular: dag_scheduling as a program of two modules. HEFT and CPOP written as
an ordering and a mapping module give dag_scheduling's schedules and numbers exactly (train,
test, a private data seed); the fixed composer refuses each bad decision with one line; a
scripted run edits both files in one reply and is refused an edit of a fixed file. The
README's numbers, bad and hostile candidates through `evolve eval`, `evolve check` and the
20-iteration scripted run: tests/test_problem_conformance.py, with
problems/dag_modular/conformance.toml."""

from __future__ import annotations

import collections
import importlib
import itertools
import signal
import sqlite3
import sys
import threading
import time
from pathlib import Path

import pytest

from evaluators import kit
from evaluators.tree import decode
from evolve.archive import ArchiveReader
from evolve.edits.blocks import complete_from_seed
from evolve.problem.load import load_problem
from evolve.problem.program_input import program_code
from evolve.testing.cli_helpers import archive_json, block, evolve, popen, run_args
from evolve.testing.dag_modular_edits import BEST_OF_RULES
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from tests.support.problem_contract import contract, evaluator, readme_output
from tests.support.problem_hostile import load_module, run_in_process, scripted_run, write_tree

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "dag_modular"
ONE_FILE = ROOT / "problems" / "dag_scheduling"
PRIVATE_SEED = 2023  # dag_scheduling's README quotes its baselines under this data seed


def _one_file(name: str, tmp: Path) -> Path:
    """dag_scheduling's baseline completed with its seed's fixed code."""
    whole = complete_from_seed(
        (ONE_FILE / "baselines" / name).read_text(), (ONE_FILE / "seed.py").read_text()
    )
    path = tmp / f"one_file_{name}"
    path.write_text(whole)
    return path


def _scored(problem: Path, program: Path, split: str, data_seed: int | None) -> dict:
    """evaluate() then the trusted score() here (the candidate in its worker)."""
    kit.use_data_seed(data_seed)
    try:
        return run_in_process(problem, evaluator(problem), program, split)
    finally:
        kit.use_data_seed(None)


@pytest.mark.parametrize(
    "name, split, data_seed",
    [
        ("heft", "train", None),
        ("heft", "test", None),
        ("heft", "test", PRIVATE_SEED),
        ("cpop", "train", None),
        ("cpop", "test", PRIVATE_SEED),
    ],
)
def test_the_tree_scores_exactly_what_the_one_file_program_scores(name, split, data_seed, tmp_path):
    """Every metric of HEFT (and CPOP) as two modules equals dag_scheduling's one file's, on
    the public splits and on the private held-out variants of a run's data seed."""
    tree = _scored(PROBLEM, PROBLEM / "baselines" / name, split, data_seed)
    one = _scored(ONE_FILE, _one_file(f"{name}.py", tmp_path), split, data_seed)
    assert tree["score"] == one["score"] and tree["metrics"] == one["metrics"], (tree, one)
    if data_seed is None:  # the README's numbers, as conformance.toml states them
        assert tree["score"] == contract(PROBLEM).readme(name, split)["score"]
    else:  # dag_scheduling's README: HEFT -4.372, CPOP -4.427 under seed 2023
        assert f"{tree['score']:.3f}" == {"heft": "-4.372", "cpop": "-4.427"}[name]


@pytest.fixture
def policy(tmp_path):
    """The seed tree imported in this process as the worker imports it (its root on
    sys.path), and forgotten afterwards."""
    p = load_problem(PROBLEM)
    root = write_tree(decode(p.seed_code, p.entry), tmp_path / "tree")
    sys.path.insert(0, str(root))
    try:
        yield importlib.import_module("policy")
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == "policy" or m.startswith("policy.")]:
            del sys.modules[name]


def test_the_composed_schedules_are_heft_s_own(policy):
    """Not only the scores: the seed tree returns, pair for pair, the schedule of
    dag_scheduling's HEFT on every workflow of both splits."""
    sim = load_module(ONE_FILE / "dag_sim.py")
    heft = load_module(_one_file("heft.py", Path(policy.__file__).parent.parent))
    for split in ("train", "test"):
        for wf in sim.load_workflows(split, str(ONE_FILE / "evaluator.py")):
            assert policy.schedule(wf.as_arg(), sim.platform()) == heft.schedule(
                wf.as_arg(), sim.platform()
            ), wf.name


@pytest.mark.parametrize(
    "module, function, returns, error",
    [
        (
            "ordering",
            "select",
            lambda *a: -1,
            "ordering.select at step 0 returned -1; expected one of the",
        ),
        ("ordering", "select", lambda *a: True, "ordering.select at step 0 returned True"),
        ("ordering", "select", lambda *a: "0", "ordering.select at step 0 returned '0'"),
        (
            "mapping",
            "choose",
            lambda *a: 6,
            "mapping.choose for task 0 returned 6; expected a processor 0..5",
        ),
        ("mapping", "choose", lambda *a: -1, "mapping.choose for task 0 returned -1"),
        ("mapping", "choose", lambda *a: 1.0, "mapping.choose for task 0 returned 1.0"),
        ("mapping", "choose", lambda *a: None, "mapping.choose for task 0 returned None"),
    ],
)
def test_each_bad_decision_is_one_line_naming_the_module(
    policy, module, function, returns, error, monkeypatch
):
    wf = {"n": 2, "runtime": [1.0, 1.0], "parents": [[], [(0, 5)]], "children": [[(1, 5)], []]}
    plat = {"speed": [1.0] * 6, "bandwidth": [[1.0] * 6 for _ in range(6)]}
    monkeypatch.setattr(getattr(policy, module), function, returns)
    with pytest.raises(ValueError) as e:
        policy.schedule(wf, plat)
    assert type(e.value).__name__ == "DecisionError" and str(e.value).startswith(error), str(
        e.value
    )


def test_integer_like_decisions_are_taken_as_integers(policy, monkeypatch):
    """A numpy integer is a fine decision (np.argmin returns one); the schedule holds ints."""
    import numpy as np

    monkeypatch.setattr(policy.mapping, "choose", lambda task, timeline, state: np.int64(5))
    wf = {"n": 2, "runtime": [1.0, 2.0], "parents": [[], [(0, 5)]], "children": [[(1, 5)], []]}
    plat = {"speed": [1.0] * 6, "bandwidth": [[1.0] * 6 for _ in range(6)]}
    assert policy.schedule(wf, plat) == [(0, 5), (1, 5)]
    assert all(type(p) is int for _, p in policy.schedule(wf, plat))


def test_a_baseline_folder_is_completed_from_the_seed(tmp_path):
    """A baseline holds only what it changes, each file its blocks only: the fixed files and
    the fixed code around the blocks are the seed's."""
    p = load_problem(PROBLEM)
    seed = decode(p.seed_code, p.entry)
    only_mapping = tmp_path / "cpop_mapping" / "policy"
    only_mapping.mkdir(parents=True)
    text = (PROBLEM / "baselines" / "cpop" / "policy" / "mapping.py").read_text()
    (only_mapping / "mapping.py").write_text(text)
    files = decode(program_code(p, only_mapping.parent), p.entry)
    assert list(files) == list(p.files)
    assert files["policy/ordering.py"] == seed["policy/ordering.py"]
    assert files["policy/__init__.py"] == seed["policy/__init__.py"]
    assert "critical, cp_proc = state" in files["policy/mapping.py"]
    assert files["policy/mapping.py"].startswith(seed["policy/mapping.py"].split("# EVOLVE")[0])


def test_a_scripted_run_edits_both_files_and_never_a_fixed_one(tmp_path):
    """One reply rewrites both modules (dag_scheduling's best_of_rules split into an
    ordering that searches and a mapping that follows its plan); another rewrites the fixed
    composer and is refused, with the reason in the archive. The best is the two-file
    program, exactly dag_scheduling's best_of_rules on train (README: -4.426)."""
    fixed_edit = (
        "Let the scheduler decide everything.\n\npolicy/__init__.py\n```python\n"
        "def schedule(wf, platform):\n    return []\n```\n"
    )
    runs = tmp_path / "runs"
    best = scripted_run(PROBLEM, [Reply(fixed_edit), Reply(BEST_OF_RULES)], runs, iterations=4)
    files = decode(best["code"], "policy/__init__.py")
    assert "def best_plan(" in files["policy/ordering.py"]
    assert "processor_of[task]" in files["policy/mapping.py"]
    seed = decode(load_problem(PROBLEM).seed_code, "policy/__init__.py")
    assert files["policy/__init__.py"] == seed["policy/__init__.py"]
    assert (
        f"{best['score']:.3f}" == "-4.426"
        and best["score"] > readme_output(PROBLEM, "heft", "train")["score"]
    )
    [run] = archive_json(runs, "runs")
    shown = [archive_json(runs, "show", f"{run['run_id']}:{i}") for i in range(1, 5)]
    fixed = "'policy/__init__.py', a fixed file that no edit may change"
    refused = [p for p in shown if fixed in (p["artifacts"] or {}).get("error", "")]
    assert refused and {(p["status"], p["score"]) for p in refused} == {("invalid_edit", None)}


def _two_file_replies():
    """Reply k rewrites both modules with its own constants (every program new)."""
    counter = itertools.count(1)
    lock = threading.Lock()

    def answer(request: dict) -> Reply:
        with lock:
            k = next(counter)
        ordering = (
            "def prepare(wf, platform):\n    return upward_ranks(wf, platform)\n\n\n"
            "def select(ready, timeline, rank):\n"
            f"    return max(ready, key=lambda i: (rank[i] + {k % 5} * 0.01 * timeline.wf['runtime'][i], -i))\n"
        )
        mapping = (
            "def prepare(wf, platform):\n    return None\n\n\n"
            "def choose(task, timeline, state):\n"
            "    procs = range(len(timeline.platform['speed']))\n"
            f"    return min(procs, key=lambda p: (timeline.eft(task, p) + {k} * 1e-4 * p, p))\n"
        )
        return Reply(
            block(ordering, f"Variant {k}.", path="policy/ordering.py")
            + "\n"
            + block(mapping, "", path="policy/mapping.py").lstrip(),
            delay_s=0.05,
        )

    return answer


def _programs(runs: Path, run_id: str) -> dict[int, tuple]:
    db = sqlite3.connect(runs / "archive.db")
    try:
        return {
            r[0]: r
            for r in db.execute(
                "SELECT iteration, status, score, test_score, code_hash, code_files FROM programs "
                "WHERE run_id=? AND status!='pending'",
                (run_id,),
            )
        }
    except sqlite3.OperationalError:  # the schema is not there yet
        return {}
    finally:
        db.close()


def test_kill_9_and_resume_lose_and_repeat_nothing_with_trees(tmp_path):
    """A run of the two-module program killed twice (kill -9) and resumed: every program
    finished before a kill is unchanged afterwards (its tree, hash and scores), every
    iteration is filled once, no stored reply is asked for again, and every program's code is
    the whole tree with both modules rewritten."""
    args = ["--sandbox", "local", "--parallel", "2", "--llm-parallel", "2", "--tune-evals", "0"]
    iterations = 8
    runs = tmp_path / "killed"
    before: dict[int, tuple] = {}
    with ScriptedLLM(_two_file_replies()) as srv:
        cmd = run_args(
            srv.base_url, runs, *args, "--run-id", "k", problem=PROBLEM, iterations=iterations
        )
        proc = popen(*cmd)
        for wanted in (2, 5):
            deadline = time.monotonic() + 200
            while proc.poll() is None and time.monotonic() < deadline:
                if (runs / "archive.db").exists() and len(_programs(runs, "k")) >= wanted:
                    break
                time.sleep(0.02)
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            before.update(_programs(runs, "k"))
            if wanted == 2:
                proc = popen("resume", "k", "--runs-dir", runs, "--no-progress")
        resumed = evolve("resume", "k", "--runs-dir", runs, "--no-progress", timeout=400)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
    after = _programs(runs, "k")
    [run] = archive_json(runs, "runs")
    assert run["status"] == "finished" and run["iterations_done"] == iterations
    assert sorted(after) == list(range(iterations + 1))
    for it, row in before.items():  # finished before a kill: the same afterwards
        assert after[it][:3] == row[:3] and after[it][4:] == row[4:], it
    seed = decode(load_problem(PROBLEM).seed_code, "policy/__init__.py")
    codes = {p.iteration: p.code for p in ArchiveReader(runs).programs("k", code=True)}
    for it in after:
        files = decode(codes[it], "policy/__init__.py")
        assert (
            list(files) == list(seed) and files["policy/__init__.py"] == seed["policy/__init__.py"]
        )
        if it > 0:
            assert (
                "* 1e-4 * p" in files["policy/mapping.py"]
                and "* 0.01 *" in files["policy/ordering.py"]
            )
    assert archive_json(runs, "best", "--problem", "dag_modular")["test_score"] is not None
    db = sqlite3.connect(runs / "archive.db")
    asked = collections.Counter(
        r[0]
        for r in db.execute(
            "SELECT iteration FROM llm_calls WHERE run_id='k' AND reply IS NOT NULL"
        )
    )
    db.close()
    assert max(asked.values()) == 1
