"""The archive is the only state; the population is derived from it."""

import json
from dataclasses import replace

from evolve.archive import Archive, ArchiveReader, CallOutcome, LlmCall, ProgramRow, ProgramStatus
from evolve.search.population import Features, Population, SelectionPolicy

SEED = "import math\n# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"


def _row(run, it, score, status="ok", parent=None, island=0, cell="0-0", code=SEED):
    return ProgramRow(
        program_id=f"{run}:{it}",
        run_id=run,
        problem="p",
        iteration=it,
        island=island,
        status=status,
        score=score if status == "ok" else None,
        parent_id=parent,
        cell=cell if status == "ok" else None,
        code=code,
        code_hash=f"h{it}",
    )


def test_wal_best_across_runs_and_failed_never_best(tmp_path):
    a = Archive(tmp_path)
    assert a.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    for run in ("r1", "r2"):
        a.create_run(run, "p", "/x", {"k": 1}, 10)
    a.insert_program(_row("r1", 0, 1.0))
    a.insert_program(_row("r1", 1, 5.0))
    a.insert_program(_row("r2", 0, 1.0))
    a.insert_program(_row("r2", 1, None, status="runtime_error"))
    a.insert_program(_row("r2", 2, 3.0, parent="r2:0"))
    assert a.best("r2").program_id == "r2:2" and a.finished_count("r2") == 2
    reader = ArchiveReader(tmp_path)  # every look from outside the loop
    assert reader.best(problem="p").program_id == "r1:1"
    assert reader.best(run_id="r2").program_id == "r2:2"
    runs = {r["run_id"]: r for r in reader.list_runs()}
    assert runs["r2"]["iterations_done"] == 2 and runs["r2"]["best_score"] == 3.0
    assert [p.program_id for p in reader.lineage("r2:2")] == ["r2:2", "r2:0"]
    assert a.hash_seen("r2", "h2") == "r2:2" and a.hash_seen("r1", "h2") is None


def test_statuses_and_calls_are_stored_as_they_always_were_and_read_back_typed(tmp_path):
    a = Archive(tmp_path)
    a.create_run("r", "p", "/x", {}, 3)
    a.insert_program(_row("r", 0, 1.0))
    a.insert_program(_row("r", 1, None, status=ProgramStatus.PENDING))
    assert [p.iteration for p in a.programs("r", pending=True)] == [1]
    assert [p.iteration for p in a.programs("r", pending=False)] == [0]
    assert a.finished_count("r") == 0  # the seed is no iteration; a pending one is not done
    rows = a.db.execute("SELECT status, typeof(status) FROM programs ORDER BY iteration")
    assert [tuple(r) for r in rows] == [("ok", "text"), ("pending", "text")]
    assert (
        a.program("r:0").status is ProgramStatus.OK and json.dumps([ProgramStatus.OK]) == '["ok"]'
    )
    call = LlmCall(run_id="r", iteration=1, island=0, model="m", edit_format="diff",
                   prompt=[{"role": "user", "content": "hi"}], reply="x", prompt_tokens=3,
                   parent_id="r:0", purpose="mutation", temperature=0.5)  # fmt: skip
    call_id = a.insert_llm_call(call)
    assert call.call_id == call_id and call.created_at > 0
    a.reject_call(call_id, CallOutcome.REJECTED_DUPLICATE)
    (outcome,) = a.db.execute("SELECT outcome FROM llm_calls").fetchone()
    assert outcome == "rejected_duplicate"
    # the reader's LlmCall is the row the loop wrote, its outcome now set
    back = ArchiveReader(tmp_path).llm_call(call_id)
    assert back == replace(call, outcome=CallOutcome.REJECTED_DUPLICATE)
    assert back.category == "rejected duplicate"


def test_unconsumed_replies_are_found_after_a_crash(tmp_path):
    a = Archive(tmp_path)
    a.create_run("r", "p", "/x", {}, 5)
    a.insert_program(_row("r", 0, 1.0))
    a.insert_llm_call(
        LlmCall(
            run_id="r",
            iteration=1,
            island=1,
            parent_id="r:0",
            edit_format="block",
            model="m",
            prompt=[],
            reply="reply one",
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=0.0,
            latency_s=0.1,
        )
    )
    a.insert_llm_call(
        LlmCall(
            run_id="r",
            iteration=2,
            island=2,
            parent_id="r:0",
            edit_format="block",
            model="m",
            prompt=[],
            error="HTTP 500",
            prompt_tokens=0,
            completion_tokens=0,
            cost_usd=0.0,
            latency_s=0.1,
        )
    )
    a.insert_llm_call(
        LlmCall(
            run_id="r",
            iteration=3,
            island=0,
            parent_id="r:0",
            edit_format="block",
            model="m",
            prompt=[],
            reply="reply three",
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=0.0,
            latency_s=0.1,
        )
    )
    a.insert_program(_row("r", 3, 2.0))
    left = a.unconsumed_replies("r")
    assert [c.iteration for c in left] == [1]
    assert a.usage("r")["prompt_tokens"] == 20


def test_failed_programs_never_enter_the_grid_and_feedback_is_kept():
    pop = Population(2, SelectionPolicy(), seed=1)
    pop.add(_row("r", 0, 1.0))
    bad = _row("r", 1, None, status="runtime_error", parent="r:0")
    bad.artifacts = {"traceback": "Traceback...\nZeroDivisionError: division by zero"}
    assert not pop.add(bad)
    assert pop.best().program_id == "r:0"
    assert pop.attempts("r:0")[0].summary == "ZeroDivisionError: division by zero"
    assert pop.add(_row("r", 2, 2.0, parent="r:0", cell="1-1"))
    assert not pop.add(_row("r", 3, 1.5, parent="r:0", cell="1-1"))  # worse in the same cell
    assert pop.best().program_id == "r:2"


def test_selection_is_seeded_and_migration_rings():
    def build(seed):
        pop = Population(3, SelectionPolicy(), seed=seed)
        for i in range(30):
            pop.add(_row("r", i, float(i % 7), island=i % 3, cell=f"{i % 5}-0"))
        return pop

    a = [build(7).select_parent(i % 3).program_id for i in range(20)]
    b = [build(7).select_parent(i % 3).program_id for i in range(20)]
    assert a == b
    pop = build(7)
    plan = pop.migration_plan()
    assert sorted(to for _, to in plan) == [0, 1, 2]
    best0 = pop.islands[0].best().program_id
    assert (best0, 1) in plan


def test_features_bin_code_length_and_diversity():
    f = Features(SEED, ("code_length", "diversity"), 8)
    same = f.values(SEED, {})
    assert same["diversity"] == 0.0
    longer = SEED.replace("return x", "y = x * 2 + 1\n    z = y ** 2 - 3\n    return max(y, z) + x")
    v = f.values(longer, {})
    assert v["code_length"] > same["code_length"] and v["diversity"] > 0.2
    assert f.cell(same) != f.cell(v)
    g = Features(SEED, ("bins_used",), 4)
    assert g.cell(g.values(SEED, {"bins_used": 100.0})) == "3"


def test_the_archive_vocabulary_is_the_strings_it_always_stored():
    """ProgramKind, EditFormat and CallPurpose are StrEnums: each member is the string the
    archive stored before they existed, so an old archive reads as it is."""
    from evolve.archive.rows import PURPOSES
    from evolve.archive.vocab import CallPurpose, EditFormat, ProgramKind
    from evolve.search.prompts import EDIT_FORMATS
    from evolve.search.tune import KIND

    assert list(ProgramKind) == ["seed", "mutation", "crossover", "repair", "tune"]
    assert EDIT_FORMATS == tuple(EditFormat) == ("diff", "block", "full")
    assert PURPOSES == ("mutation", "crossover", "repair", "resample", "meta", "agent")
    assert PURPOSES == tuple(CallPurpose) and KIND == "tune"
    assert json.dumps([ProgramKind.SEED, CallPurpose.META]) == '["seed", "meta"]'
