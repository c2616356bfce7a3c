"""llm_serving_modular: the policy's preemption choice, checked; the modular vLLM seed runs
llm_serving's seed request for request; the policy's eviction module is what preempts.

The conformance suite (tests/test_problem_conformance.py -k llm_serving_modular) holds the
folder to the common contract: the README's numbers through `evolve eval`, bad and hostile
candidates, `evolve check` and a scripted run. Here: what is this problem's own.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from evaluators import kit
from evaluators.tree import decode
from evolve.edits.blocks import complete_from_seed
from evolve.problem.load import load_problem
from tests.support.problem_hostile import load_module

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "llm_serving_modular"
ONE_FILE = ROOT / "problems" / "llm_serving"

sys.path.insert(0, str(PROBLEM))  # the evaluator imports preemption.py, as in the sandbox
ev = load_module(PROBLEM / "evaluator.py")
pre = sys.modules["preemption"]
sim = ev.sim  # llm_serving's simulator, the very module both evaluators use
one = load_module(ONE_FILE / "evaluator.py")

# P(n) = n ms up to 1,000 tokens, D(b) = 10 ms: an iteration of n tokens takes max(10, n) ms.
TOY = sim.PerfModel([(1000.0, 1000.0)], [(1.0, 10.0), (2.0, 10.0)])


def toy_server(arrival, prompt, output, kv=sim.KV_CAPACITY):
    sc = sim.Scenario("toy", arrival, prompt, output, output, kv_capacity=kv)
    return pre.Server(sc, TOY)


def decision(plan, preempt=None):
    return {"plan": plan, "preempt": [] if preempt is None else preempt}


def test_the_policy_chooses_whom_to_preempt():
    s = toy_server([0.0, 0.0, 0.0], [40, 30, 20], [5, 5, 5], kv=92)
    s.advance()
    s.step(decision({0: 40, 1: 30, 2: 20}))
    assert s.kv_used == 90 and s.generated == [1, 1, 1]
    # three decodes need 93 > 92: this policy frees the EARLIEST arrival (vLLM's rule would
    # have dropped request 2); request 0 keeps its output token and recomputes its KV
    log = s.step(decision({1: 1, 2: 1}, [0]))
    assert log == "1-2/0"
    assert s.preempted == [1, 0, 0] and s.cached == [0, 31, 21] and s.kv_used == 52
    assert s.generated == [1, 2, 2] and s.pending(0) == 41
    # an empty plan with preemptions re-plans at once: no time passes, nothing idles
    now = s.now
    assert s.step(decision({}, [1])) == "/1"
    assert s.now == now and s.cached == [0, 0, 21] and s.iterations == 2


def test_bad_preemptions_are_invalid_with_a_precise_message():
    s = toy_server([0.0, 0.0, 5.0], [60, 30, 10], [5, 5, 5], kv=90)
    s.advance()
    s.step(decision({0: 60}))
    cases = [
        (decision({1: 30}, [7]), "preempt: request 7 is not in the system"),
        (decision({1: 30}, [2]), "preempt: request 2 is not in the system"),  # not arrived
        (decision({1: 30}, [0, 0]), "preempt: request 0 appears twice"),
        (decision({0: 1}, [0]), "preempt: request 0 is in the plan too"),
        (decision({0: 1}, [1]), "preempt: request 1 holds no KV cache to free"),
        (decision({1: 30}, [True]), "request id True (bool) is not an integer"),
        (decision({1: 30}, np.zeros((1, 1), dtype=int)), "an array of 2 dimensions"),
        (decision({1: 30}, "0"), "preempt: str; expected a list of request ids"),
        ({1: 30}, "expected a dict {'plan'"),
        ({"plan": {1: 30}}, "schedule() returned ['plan']"),
        (decision({1: 0.5}), "token count 0.5 (float) is not an integer"),
    ]
    for raw, message in cases:
        with pytest.raises(sim.Invalid) as e:
            s.step(raw)
        assert message in str(e.value), (raw, str(e.value))
    assert s.kv_used == 60 and s.preempted == [0, 0, 0]  # nothing of a refused step ran
    # one token short of the fit: refused; preempting request 0 makes room
    with pytest.raises(sim.Invalid, match=r"adds 31 KV tokens but 30 are free after preempting 0 "):
        s.step(decision({1: 30, 0: 1}))
    s.step(decision({1: 30}, np.array([0])))  # numpy ids are ids
    assert s.cached == [0, 30, 0] and s.preempted == [1, 0, 0]


def test_decisions_log_and_replay_exactly():
    plan = [(3, 1), (4, 1), (5, 1), (9, 40)]
    text = pre.encode_decision(plan, [12, 7, 8])
    assert text == "3-5,9:40/7-8,12"
    back = pre.decode_decision(text, 20)
    assert sorted(back["plan"]) == plan and back["preempt"] == [7, 8, 12]
    assert pre.decode_decision("", 5) == {"plan": [], "preempt": []}
    assert pre.decode_decision("/0-2", 5) == {"plan": [], "preempt": [0, 1, 2]}
    for bad in ("1/x", "1/3-2", "1/0-9", "1/", "1/1,,2"):
        with pytest.raises(sim.Invalid):
            pre.decode_decision(bad, 5)
    with pytest.raises(sim.Invalid, match="must be a string"):
        pre.decode_decision(["1"], 5)


def _seed_tree(tmp_path: Path, override: Path | None = None) -> Path:
    """The seed tree (or a baseline folder's files over it) laid out; its entry's path."""
    p = load_problem(PROBLEM)
    files = decode(p.seed_code, p.entry)
    for f in sorted(override.rglob("*.py")) if override else []:
        rel = f.relative_to(override).as_posix()
        files[rel] = complete_from_seed(f.read_text(), files[rel])
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    return tmp_path / p.entry


def _outcomes(evaluator, outputs: dict, split: str, replay) -> list[dict]:
    scenarios = evaluator.make_scenarios(split)
    perf = evaluator.perf_model()
    return [
        replay(sc, perf, log).results() for sc, log in zip(scenarios, outputs["plans"], strict=True)
    ]


@pytest.mark.parametrize("baseline, one_file", [("vllm", "fcfs.py"), ("sarathi", "sarathi.py")])
def test_the_modules_run_llm_servings_policy_request_for_request(
    baseline, one_file, tmp_path, monkeypatch
):
    """On the held-out split, where vLLM's rule preempts 44 times: every request's TTFT, gaps
    and outcome, the iterations and the preemptions are llm_serving's, so the scores are."""
    monkeypatch.setattr(kit, "REMOTE", False)  # both policies in this process: trusted files
    entry = _seed_tree(tmp_path / "tree", PROBLEM / "baselines" / baseline)
    monkeypatch.syspath_prepend(str(entry.parent.parent))  # the tree's root: `import policy`
    for name in [m for m in sys.modules if m == "policy" or m.startswith("policy.")]:
        monkeypatch.delitem(sys.modules, name)
    ours = ev.evaluate(str(entry), "test")
    program = tmp_path / one_file
    seed = (ONE_FILE / "seed.py").read_text()
    program.write_text(complete_from_seed((ONE_FILE / "baselines" / one_file).read_text(), seed))
    theirs = one.evaluate(str(program), "test")
    a = _outcomes(ev, ours["outputs"], "test", pre.replay)
    b = _outcomes(one, theirs["outputs"], "test", sim.replay)
    for x, y in zip(a, b, strict=True):
        for key in ("ttft", "max_gap", "met", "gaps", "done"):
            assert np.array_equal(x[key], y[key]), key
        for key in ("preemptions", "iterations", "tokens", "duration"):
            assert x[key] == y[key], key
    if baseline == "vllm":
        assert sum(x["preemptions"] for x in a) == 44
    assert (
        ev.score(ours["outputs"], "test")["score"] == one.score(theirs["outputs"], "test")["score"]
    )


def test_a_forged_log_is_rechecked_on_replay():
    r = ev.score({"plans": [["0:1/0"]]}, "quick")  # preempts the request it runs
    assert r["valid"] is False
    assert r["artifacts"]["error"] == (
        "scenario code_quick, iteration 0: preempt: request 0 is in the plan too; "
        "a preempted request cannot run"
    )


def _with_module(tmp_path: Path, path: str, body: str, monkeypatch) -> Path:
    """The seed tree with one module's EVOLVE block replaced, importable in this process."""
    entry = _seed_tree(tmp_path / "tree")
    module = entry.parent.parent / path
    head, rest = module.read_text().split("# EVOLVE-BLOCK-START", 1)
    module.write_text(
        f"{head}# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END{rest.split('# EVOLVE-BLOCK-END', 1)[1]}"
    )
    monkeypatch.setattr(kit, "REMOTE", False)
    monkeypatch.syspath_prepend(str(entry.parent.parent))
    for name in [m for m in sys.modules if m == "policy" or m.startswith("policy.")]:
        monkeypatch.delitem(sys.modules, name)
    return entry


@pytest.mark.parametrize(
    "body, error",
    [
        (
            "def admit(state):\n    return [999]\n",
            "policy/admission.py: admit() returned index 999",
        ),
        ("def admit(state):\n    return [-1]\n", "policy/admission.py: admit() returned index -1"),
        ("def admit(state):\n    return [[0]]\n", "admit() must return a 1-d sequence of indices"),
        ("def admit(state):\n    return [0.5]\n", "admit() must return a 1-d sequence of indices"),
    ],
)
def test_the_entry_names_the_module_that_broke_its_contract(body, error, tmp_path, monkeypatch):
    entry = _with_module(tmp_path, "policy/admission.py", body, monkeypatch)
    with pytest.raises((TypeError, ValueError)) as e:
        ev.evaluate(str(entry), "quick")
    assert error in str(e.value)


def test_admitting_nobody_is_a_policy_not_an_error(tmp_path, monkeypatch):
    body = "def admit(state):\n    return []\n"  # nothing ever starts: every request misses
    entry = _with_module(tmp_path, "policy/admission.py", body, monkeypatch)
    r = kit.evaluate_and_score(ev, str(entry), "quick")
    assert r["score"] == 0.0 and r["metrics"]["iterations"] == 0.0
