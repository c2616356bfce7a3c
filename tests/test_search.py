"""The search's parts on their own: behaviour clusters, FunSearch's renaming, the model
bandit, meta-notes, and the archive rows they leave."""

import random

from evolve.archive import Archive, LlmCall, ProgramRow
from evolve.search.bandit import ModelBandit
from evolve.search.behaviour import signature
from evolve.search.meta import MAX_LINES, parse_notes, summaries
from evolve.search.population import Population, SelectionPolicy
from evolve.search.state import SearchSettings, SearchState
from evolve.search.versions import block_functions, unversioned, versioned

SEED = "import numpy as np\n# EVOLVE-BLOCK-START\ndef priority(item, bins):\n    return -(bins - item)\n# EVOLVE-BLOCK-END\n"


def _row(it, score, code=SEED, parent=None, status="ok", metrics=None, cell="0-0"):
    return ProgramRow(
        program_id=f"r:{it}",
        run_id="r",
        problem="p",
        iteration=it,
        island=0,
        status=status,
        score=score if status == "ok" else None,
        parent_id=parent,
        cell=cell if status == "ok" else None,
        code=code,
        metrics=metrics or {},
        model="m",
    )


def test_signature_ignores_clock_readings_and_rounding_noise():
    a = signature(-3.88418, {"excess_pct": 3.88418, "eval_s": 1.2, "bins_0": 2001.0})
    b = signature(-3.884180000001, {"excess_pct": 3.88418, "eval_s": 9.9, "bins_0": 2001.0})
    c = signature(-3.88418, {"excess_pct": 3.88418, "bins_0": 2002.0})
    assert a == b and a != c and signature(None, {}) is None


def test_same_behaviour_is_one_cluster_represented_by_its_shortest_program():
    pop = Population(1, SelectionPolicy(), seed=0)
    pop.add(_row(0, 1.0))
    longer = SEED.replace("return", "x = 1\n    return")
    assert not pop.novel(_row(1, 1.0, longer))
    assert not pop.add(
        _row(1, 1.0, longer, parent="r:0", cell="1-1")
    )  # a longer twin: not a parent
    assert pop.attempts("r:0")[-1].summary.startswith("same results as the current code")
    assert pop.select_parent(0).program_id == "r:0"
    shorter = SEED.replace("-(bins - item)", "item-bins")
    assert pop.add(_row(2, 1.0, shorter, parent="r:0", cell="2-2"))  # shorter: represents it now
    assert {m.program_id for m in pop.islands[0].elites.values()} == {"r:2"}
    assert pop.novel(_row(3, 2.0)) and pop.best().program_id in ("r:0", "r:2")


def test_funsearch_names_round_trip():
    assert block_functions(SEED) == ["priority"]
    shown = versioned(
        "def priority(item, bins):\n    return np.priority(priority(1, 2))\n", ["priority"], 1
    )
    assert shown == "def priority_v1(item, bins):\n    return np.priority(priority_v1(1, 2))\n"
    reply = "def priority_v2(item, bins):\n    return priority_v1(item, bins) + 1\n"
    assert (
        unversioned(reply, ["priority"])
        == "def priority(item, bins):\n    return priority(item, bins) + 1\n"
    )


def test_bandit_follows_the_prior_then_the_evidence():
    b = ModelBandit.of({"cheap": 3.0, "strong": 1.0}, (0.5, 1.0), seed=1)
    assert b.pick().model == "cheap"
    for _ in range(6):
        b.record("cheap", 0.0)
        b.record("strong", 1.0)
    choice = b.pick()
    assert choice.model == "strong" and "UCB" in choice.decision
    assert b.pick(resample=2).temperature >= 1.1  # a resample goes hotter


def test_search_state_queues_repairs_once_and_counts_stagnation():
    st = SearchState(SearchSettings({"m": 1.0}, (0.8,), 1, 2, 3, None, 0))
    failed = _row(1, None, status="runtime_error", parent="r:0")
    st.finished(failed, 1.0, False, False, 0)
    assert st.next_repair() == "r:1" and st.next_repair() is None
    st.finished(_row(2, None, status="runtime_error", parent="r:1"), None, False, False, 1)
    assert st.next_repair() is None  # a repair that failed again is not repaired twice
    assert st.stagnant()
    st.start_burst()
    assert [st.choose().decision.startswith("stagnation burst") for _ in range(4)] == [
        True,
        True,
        True,
        False,
    ]


def test_meta_notes_are_short_plain_text():
    reply = "Here you go:\n```python\nimport os\n```\n" + "\n".join(
        f"{i}. idea {i} " + "x" * 300 for i in range(20)
    )
    notes = parse_notes(reply).splitlines()
    assert len(notes) == MAX_LINES and all(n.startswith("- ") and len(n) <= 202 for n in notes)
    assert not any("import os" in n for n in notes)
    kid = _row(2, 1.5, SEED.replace("return", "# Idea: square the gap\n    return"), parent="r:0")
    assert summaries([kid], {"r:0": 1.0}) == ["square the gap -> scored 1.5 (+0.5 vs its parent)"]


def test_rejected_calls_meta_notes_and_decisions_are_rows(tmp_path):
    a = Archive(tmp_path)
    a.create_run("r", "p", "/x", {}, 5)
    a.insert_program(_row(0, 1.0))
    c1 = a.insert_llm_call(
        LlmCall(
            run_id="r",
            iteration=1,
            island=1,
            parent_id="r:0",
            edit_format="block",
            model="m",
            prompt=[],
            reply="same",
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=0.01,
            latency_s=0.1,
            purpose="mutation",
            temperature=0.6,
            decision="the only model",
        )
    )
    a.reject_call(c1, "rejected_duplicate")
    a.insert_llm_call(
        LlmCall(
            run_id="r",
            iteration=1,
            island=1,
            parent_id="r:0",
            edit_format="block",
            model="m",
            prompt=[],
            reply="other",
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=0.01,
            latency_s=0.1,
            purpose="resample",
            temperature=0.9,
            decision="the only model",
        )
    )
    assert a.rejected_call_count("r", 1) == 1 and [c.reply for c in a.unconsumed_replies("r")] == [
        "other"
    ]
    m = a.insert_llm_call(
        LlmCall(
            run_id="r",
            iteration=2,
            island=2,
            edit_format="meta",
            model="m",
            prompt=[],
            reply="- try squares",
            prompt_tokens=1,
            completion_tokens=1,
            cost_usd=0.0,
            latency_s=0.1,
            purpose="meta",
        )
    )
    assert a.unconsumed_replies("r")[0].iteration == 1  # a meta reply is no iteration's reply
    assert a.meta_calls("r")[0]["text"] is None
    a.add_meta_note("r", 3, m, "- try squares")
    a.add_decision("r", 4, "stagnation", {"island": 1, "from": "r:0"})
    assert a.meta_notes("r")[0].text == "- try squares"
    assert a.decisions("r")[0].detail["island"] == 1
    assert a.usage("r")["answered"] == 3 and a.usage("r")["calls"] == 3


def test_worst_island_restart_keeps_only_the_best():
    pop = Population(3, SelectionPolicy(), seed=0)
    pop.rng = random.Random(0)
    pop.add(_row(0, 1.0))
    for island in (1, 2):
        pop.migrate("r:0", island)
    pop.add(
        ProgramRow(
            program_id="r:1",
            run_id="r",
            problem="p",
            iteration=1,
            island=1,
            status="ok",
            score=5.0,
            cell="1-1",
            code=SEED.replace("item)", "item) * 2"),
            parent_id="r:0",
        )
    )
    assert pop.worst_island("r:1") in (0, 2)
    pop.reset_island(2, "r:1")
    assert [m.program_id for m in pop.islands[2].elites.values()] == ["r:1"]
