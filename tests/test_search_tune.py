"""Constant tuning's pure parts: which numbers are quantities, the programs they make, and
which tuned child comes next (evolve/search/tune.py). The loop's use is in test_search_loop."""

from __future__ import annotations

from evolve.archive import ProgramRow, ProgramStatus
from evolve.search.tune import INERT_STOP, Tuner, literals, variants

PROGRAM = """import numpy as np

LIMIT = 7  # fixed: outside the block


# EVOLVE-BLOCK-START
def priority(item, bins):
    gap = bins - item  # gap of 1 item
    first = bins[0] + bins[1:3].sum(axis=0)
    return np.where((gap > 0) & (gap < 10), -gap - 5.0, -gap) + 0 * first
# EVOLVE-BLOCK-END
"""


def test_only_the_blocks_quantities_are_literals():
    found = [(lit.line, lit.value) for lit in literals(PROGRAM)]
    # Not LIMIT (fixed code), not the indices, slice or axis, not 0, not the 1 in a comment.
    assert found == [(9, 10), (9, 5.0)]


def test_numbers_in_example_usage_left_in_the_block_are_not_tuned():
    """A small model's example usage after its function sets names no function reads:
    scaling its numbers changes nothing. A module-level constant the function reads is a
    quantity."""
    code = (
        "import numpy as np\n"
        "# EVOLVE-BLOCK-START\n"
        "PENALTY = 5.0\n"
        "def priority(item, bins):\n"
        "    return np.where(bins - item < 10, -PENALTY, 0.5)\n"
        "item_sizes = [25, 10, 30]\n"
        "bins = np.array([24, 16, 18])\n"
        "print(priority(3, bins))\n"
        "# EVOLVE-BLOCK-END\n"
    )
    assert [lit.value for lit in literals(code)] == [5.0, 10, 0.5]


def test_numbers_of_a_helper_the_function_never_calls_are_not_tuned():
    """From a README run: the model defined two helpers and used neither; their numbers came
    first, and four tuned children that changed nothing nearly stopped the root."""
    code = (
        "import numpy as np\n"
        "# EVOLVE-BLOCK-START\n"
        "def priority(item, bins):\n"
        "    gap = bins - item\n"
        "    def small_gap_penalty(gap):\n"
        "        return -(gap * 5.0)\n"
        "    def used(gap):\n"
        "        return gap * 3.0\n"
        "    return np.where((gap > 0) & (gap < 10), -gap - 7.0, -used(gap))\n"
        "# EVOLVE-BLOCK-END\n"
    )
    assert [lit.value for lit in literals(code)] == [3.0, 10, 7.0]


def test_each_variant_scales_one_number_and_keeps_the_rest_byte_for_byte():
    vs = variants(PROGRAM)
    assert [v.splitlines()[9].split("np.where")[1] for v in vs] == [
        "((gap > 0) & (gap < 20), -gap - 5.0, -gap) + 0 * first",
        "((gap > 0) & (gap < 5), -gap - 5.0, -gap) + 0 * first",
        "((gap > 0) & (gap < 10), -gap - 10.0, -gap) + 0 * first",
        "((gap > 0) & (gap < 10), -gap - 2.5, -gap) + 0 * first",
    ]
    for v in vs:
        assert sum(a != b for a, b in zip(v.splitlines(), PROGRAM.splitlines(), strict=True)) == 1


def test_ints_stay_ints_and_a_number_that_would_not_change_is_skipped():
    code = "def f(x):\n    return x * 1 + 3 + 1e-06 + 2.0\n"
    lines = [v.splitlines()[1] for v in variants(code)]
    assert lines == [
        "    return x * 2 + 3 + 1e-06 + 2.0",  # 1 halved rounds to 0: left out
        "    return x * 1 + 6 + 1e-06 + 2.0",
        "    return x * 1 + 2 + 1e-06 + 2.0",  # round(1.5) == 2
        "    return x * 1 + 3 + 2e-06 + 2.0",
        "    return x * 1 + 3 + 5e-07 + 2.0",
        "    return x * 1 + 3 + 1e-06 + 4.0",
        "    return x * 1 + 3 + 1e-06 + 1.0",
    ]


def test_a_program_that_does_not_parse_has_no_variants():
    assert variants("def f(:\n    return 3\n") == []


def _row(pid: str, kind: str, score: float | None, parent: str | None, code: str) -> ProgramRow:
    return ProgramRow(
        program_id=pid,
        run_id="r",
        problem="p",
        iteration=int(pid.split(":")[1]),
        island=0,
        status=ProgramStatus.OK if score is not None else ProgramStatus.RUNTIME_ERROR,
        code=code,
        score=score,
        parent_id=parent,
        kind=kind,
    )


def test_a_better_tuned_child_is_tuned_first_and_the_budget_bounds_a_root():
    base = "def f(x):\n    return x * 3 + 10\n"
    t = Tuner(budget=5)
    t.finished(_row("r:1", "mutation", -5.0, "r:0", base), parent_score=-4.0, novel=True)
    first = t.next(lambda code: False)
    assert first is not None and first.parent_id == "r:1" and "x * 6 + 10" in first.code
    # It scored better than its base: its own variants come before the base's others.
    t.finished(_row("r:2", "tune", -3.0, "r:1", first.code), parent_score=-5.0, novel=True)
    nxt = t.next(lambda code: False)
    assert nxt is not None and nxt.parent_id == "r:2" and "x * 12 + 10" in nxt.code
    seen = {nxt.code}
    given = [t.next(lambda code: code in seen) for _ in range(10)]
    assert sum(g is not None for g in given) == 5 - 2  # two given already; a root gets five
    assert not t.waiting() or t.next(lambda code: False) is None


def test_replay_counts_stored_tuned_children_once():
    """Resume: the stored children are counted from the archive, not again when given."""
    base = "def f(x):\n    return x * 3 + 10\n"
    live = Tuner(budget=3)
    live.finished(_row("r:1", "mutation", -5.0, "r:0", base), parent_score=-4.0, novel=True)
    v = live.next(lambda code: False)
    assert v is not None
    live.finished(_row("r:2", "tune", -6.0, "r:1", v.code), parent_score=-5.0, novel=True)
    replay = Tuner(budget=3)
    replay.finished(_row("r:1", "mutation", -5.0, "r:0", base), parent_score=-4.0, novel=True)
    replay.finished(_row("r:2", "tune", -6.0, "r:1", v.code), parent_score=-5.0, novel=True)
    assert live.spent == replay.spent == {"r:1": 1}


def test_failed_seed_and_unchanged_programs_are_not_bases():
    t = Tuner(budget=4)
    t.finished(_row("r:0", "seed", -4.0, None, "def f(x):\n    return x + 1\n"), None, novel=True)
    t.finished(
        _row("r:1", "mutation", None, "r:0", "def f(x):\n    return x + 2\n"), -4.0, novel=False
    )
    t.finished(
        _row("r:2", "mutation", -4.0, "r:0", "def f(x):\n    return x ** 2\n"), -4.0, novel=True
    )
    assert not t.waiting()  # the last scores as its parent: a monotone rewrite
    off = Tuner(budget=0)
    off.finished(
        _row("r:1", "mutation", -4.0, "r:0", "def f(x):\n    return x + 2\n"), -4.0, novel=True
    )
    assert not off.waiting()


def test_a_program_that_behaves_as_an_earlier_one_is_not_tuned_again():
    """A crossover that rebuilt an earlier child's behaviour scores unlike its parent, but
    its twin was tuned already: tuning it again would evaluate the same behaviours."""
    t = Tuner(budget=4)
    twin = "def f(x):\n    return x // 100 + 3\n"
    t.finished(_row("r:5", "crossover", -4.2, "r:0", twin), -4.0, novel=False)
    assert not t.waiting()
    t.finished(_row("r:6", "tune", -3.0, "r:5", twin.replace("3", "6")), -4.2, novel=False)
    assert not t.waiting()


def test_a_root_whose_first_tuned_children_all_score_as_their_base_is_given_no_more():
    """Numbers that decide nothing (a constant priority: every bin ties) stop the tuning of
    their root after INERT_STOP children; a child still in flight that moved brings it back,
    and a replay of the same children reaches the same state."""
    base = "def f(x):\n    return x * 3 + 10 + 7\n"  # six variants

    def run(order: list[int], moved: int | None) -> tuple[Tuner, list]:
        t = Tuner(budget=12)
        t.finished(_row("r:1", "mutation", -5.0, "r:0", base), -4.0, novel=True)
        given = [t.next(lambda code: False) for _ in range(INERT_STOP + 1)]
        for k in order:  # finished in this order; `moved` scored unlike its base
            v = given[k]
            assert v is not None
            score = -4.5 if k == moved else -5.0
            t.finished(_row(f"r:{k + 2}", "tune", score, "r:1", v.code), -5.0, novel=k == moved)
        return t, given

    t, _ = run(list(range(INERT_STOP)), moved=None)
    assert not t.waiting() and t.next(lambda code: False) is None
    assert len(t.pending) == 6 - (INERT_STOP + 1)  # held, not dropped
    live, given = run([*range(INERT_STOP), INERT_STOP], moved=INERT_STOP)
    assert live.waiting()
    replay, _ = run([INERT_STOP, *range(INERT_STOP)], moved=INERT_STOP)
    assert replay.spent == live.spent and replay.moved == live.moved
    assert sorted(p.code for p in replay.pending) == sorted(p.code for p in live.pending)


def test_left_is_what_the_queue_can_still_give_within_each_roots_budget():
    """What the progress display shows as `tuning 1/N` while the model's candidates are done."""
    from evolve.cli.progress import counts
    from evolve.pipeline.state import RunStats

    base = "def f(x):\n    return x * 3 + 10\n"  # two numbers: four variants
    t = Tuner(budget=3)
    assert t.left() == 0
    t.finished(_row("r:1", "mutation", -5.0, "r:0", base), parent_score=-4.0, novel=True)
    assert t.left() == 3  # four queued, three allowed
    first = t.next(lambda code: False)
    assert first is not None and t.left() == 3  # one being evaluated, two more
    t.finished(_row("r:2", "tune", -6.0, "r:1", first.code), parent_score=-5.0, novel=True)
    assert t.left() == 2  # worse than its base: nothing of its own queued
    stats = RunStats(target=20, done=20, tuned=1, tune_left=t.left())
    assert counts(stats) == "20/20 model, tuning 1/3"
    assert counts(RunStats(target=20, done=7)) == "7/20 model"
