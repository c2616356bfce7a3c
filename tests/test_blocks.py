"""EVOLVE-BLOCK handling: finding blocks, splicing bodies, guarding the fixed code."""

from __future__ import annotations

import textwrap

import pytest

from evolve.edits.blocks import (
    Block,
    evolvable_text,
    extract_bodies,
    find_blocks,
    fixed_parts,
    fixed_unchanged,
    replace_block,
    shadowed_names,
    split_lines,
)

PROGRAM = textwrap.dedent('''\
    """Scheduler: the evaluator calls schedule(jobs, machines)."""

    import math


    def schedule(jobs, machines):
        """Assign each job to a machine."""
        # EVOLVE-BLOCK-START
        order = sorted(jobs)
        plan = {}
        for i, job in enumerate(order):
            plan[job] = machines[i % len(machines)]
        # EVOLVE-BLOCK-END
        return plan


    def evaluate(jobs, machines):
        return math.log(len(schedule(jobs, machines)) + 1)
''')

TWO = textwrap.dedent("""\
    import numpy as np

    # EVOLVE-BLOCK-START
    WEIGHT = 1.0
    # EVOLVE-BLOCK-END


    def fixed_helper(x):
        return x * 2


    # EVOLVE-BLOCK-START
    def priority(item, bins):
        return -bins * WEIGHT
    # EVOLVE-BLOCK-END
""")


def test_find_blocks_reports_marker_lines_and_body():
    [block] = find_blocks(PROGRAM)
    assert block == Block(
        index=0,
        start_line=7,
        end_line=12,
        body=(
            "    order = sorted(jobs)\n"
            "    plan = {}\n"
            "    for i, job in enumerate(order):\n"
            "        plan[job] = machines[i % len(machines)]\n"
        ),
    )
    lines = split_lines(PROGRAM)
    assert "EVOLVE-BLOCK-START" in lines[block.start_line]
    assert "EVOLVE-BLOCK-END" in lines[block.end_line]


def test_find_blocks_several_in_order():
    blocks = find_blocks(TWO)
    assert [b.index for b in blocks] == [0, 1]
    assert blocks[0].body == "WEIGHT = 1.0\n"
    assert blocks[1].body.startswith("def priority(item, bins):")


def test_no_markers_means_no_blocks_and_whole_file_evolvable():
    code = "def f(x):\n    return x\n"
    assert find_blocks(code) == []
    assert fixed_parts(code) == []
    assert evolvable_text(code) == code
    assert fixed_unchanged(code, "def f(x):\n    return 2 * x\n") is None


def test_marker_text_inside_a_string_is_not_a_marker():
    code = 'NOTE = "EVOLVE-BLOCK-START"\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\n'
    [block] = find_blocks(code)
    assert block.start_line == 1 and block.body == "x = 1\n"


@pytest.mark.parametrize(
    ("code", "words"),
    [
        ("# EVOLVE-BLOCK-START\n# EVOLVE-BLOCK-START\nx\n# EVOLVE-BLOCK-END\n", "nested"),
        ("x = 1\n# EVOLVE-BLOCK-END\n", "no matching"),
        ("# EVOLVE-BLOCK-START\nx = 1\n", "never closed"),
    ],
)
def test_unbalanced_or_nested_markers_raise_clear_errors(code, words):
    with pytest.raises(ValueError, match=words):
        find_blocks(code)


def test_split_lines_splits_on_newline_only():
    assert split_lines("a\x0cb\nc") == ["a\x0cb\n", "c"]
    assert split_lines("a\n") == ["a\n"]
    assert split_lines("") == []


def test_replace_block_reindents_a_body_that_lost_its_indentation():
    new = replace_block(PROGRAM, 0, "plan = {j: machines[0] for j in jobs}")
    assert (
        "    # EVOLVE-BLOCK-START\n    plan = {j: machines[0] for j in jobs}\n    # EVOLVE" in new
    )
    assert fixed_unchanged(PROGRAM, new) is None


def test_replace_block_keeps_relative_indentation_when_reindenting():
    body = "plan = {}\nfor j in jobs:\n    plan[j] = machines[0]\n"
    new = replace_block(PROGRAM, 0, body)
    assert "\n    for j in jobs:\n        plan[j] = machines[0]\n" in new


def test_replace_block_leaves_correctly_indented_body_alone():
    body = "    plan = {}\n    if jobs:\n        plan[jobs[0]] = machines[0]\n"
    new = replace_block(PROGRAM, 0, body)
    assert find_blocks(new)[0].body == body


def test_replace_block_on_empty_body_uses_marker_indentation():
    code = "def f():\n    # EVOLVE-BLOCK-START\n    # EVOLVE-BLOCK-END\n    return 1\n"
    new = replace_block(code, 0, "x = 2")
    assert (
        new
        == "def f():\n    # EVOLVE-BLOCK-START\n    x = 2\n    # EVOLVE-BLOCK-END\n    return 1\n"
    )


def test_replace_block_second_block_only():
    new = replace_block(TWO, 1, "def priority(item, bins):\n    return bins\n")
    assert find_blocks(new)[0].body == "WEIGHT = 1.0\n"
    assert find_blocks(new)[1].body == "def priority(item, bins):\n    return bins\n"


def test_replace_block_bad_index():
    with pytest.raises(IndexError):
        replace_block(PROGRAM, 1, "x = 1")


def test_fixed_parts_include_markers_and_rebuild_the_file():
    parts = fixed_parts(TWO)
    assert len(parts) == 3
    assert parts[0].endswith("# EVOLVE-BLOCK-START\n")
    assert parts[1].startswith("# EVOLVE-BLOCK-END\n") and "def fixed_helper" in parts[1]
    bodies = [b.body for b in find_blocks(TWO)]
    assert parts[0] + bodies[0] + parts[1] + bodies[1] + parts[2] == TWO


def test_evolvable_text_joins_block_bodies():
    text = evolvable_text(TWO)
    assert "WEIGHT = 1.0" in text and "def priority" in text
    assert "fixed_helper" not in text and "import numpy" not in text


def test_fixed_unchanged_accepts_body_change_and_formatting_noise():
    child = replace_block(PROGRAM, 0, "    plan = {}\n")
    child = child.replace("import math\n", "import math   \n\n\n")  # trailing space, blank lines
    assert fixed_unchanged(PROGRAM, child) is None


def test_fixed_unchanged_names_the_changed_import():
    child = PROGRAM.replace("import math", "import math, os")
    reason = fixed_unchanged(PROGRAM, child)
    assert reason is not None and "line 3" in reason and "import math" in reason


def test_fixed_unchanged_rejects_removed_marker_and_changed_indentation():
    no_end = PROGRAM.replace("    # EVOLVE-BLOCK-END\n", "")
    assert fixed_unchanged(PROGRAM, no_end) is not None
    dedented = PROGRAM.replace("    return plan\n", "return plan\n")
    assert "return plan" in fixed_unchanged(PROGRAM, dedented)


def test_fixed_unchanged_rejects_added_fixed_line():
    child = PROGRAM.replace("    return plan\n", "    plan.clear()\n    return plan\n")
    reason = fixed_unchanged(PROGRAM, child)
    assert reason is not None and "plan" in reason


def test_fixed_unchanged_counts_blocks():
    child = TWO.replace(
        "# EVOLVE-BLOCK-START\nWEIGHT = 1.0\n# EVOLVE-BLOCK-END\n", "WEIGHT = 1.0\n"
    )
    assert "2 EVOLVE-BLOCKs" in fixed_unchanged(TWO, child)


def test_child_without_markers_is_checked_by_locating_fixed_lines():
    child = "".join(ln for ln in split_lines(PROGRAM) if "EVOLVE-BLOCK" not in ln)
    child = child.replace("order = sorted(jobs)", "order = sorted(jobs, reverse=True)")
    assert fixed_unchanged(PROGRAM, child) is None
    assert extract_bodies(PROGRAM, child) == [
        find_blocks(PROGRAM)[0].body.replace("sorted(jobs)", "sorted(jobs, reverse=True)")
    ]


def test_child_without_markers_and_changed_signature_names_it():
    child = "".join(ln for ln in split_lines(PROGRAM) if "EVOLVE-BLOCK" not in ln)
    child = child.replace("def schedule(jobs, machines):", "def schedule(jobs, machines, k=2):")
    reason = fixed_unchanged(PROGRAM, child)
    assert reason is not None and "def schedule(jobs, machines):" in reason


def test_child_without_markers_two_blocks_and_appended_code():
    child = "".join(ln for ln in split_lines(TWO) if "EVOLVE-BLOCK" not in ln)
    child = child.replace("WEIGHT = 1.0", "WEIGHT = 3.0")
    assert extract_bodies(TWO, child)[0] == "WEIGHT = 3.0\n"
    assert extract_bodies(TWO, child)[1].startswith("def priority")
    assert fixed_unchanged(TWO, child + "\nprint('hi')\n") is None  # the last block is at the end
    appended = "".join(ln for ln in split_lines(PROGRAM) if "EVOLVE-BLOCK" not in ln)
    assert "end of the program" in fixed_unchanged(PROGRAM, appended + "x = 1\n")


def test_shadowed_names_sees_a_block_redefining_fixed_api():
    assert shadowed_names(TWO) == set()
    evil = replace_block(TWO, 1, "def fixed_helper(x):\n    return 0\n")
    assert shadowed_names(evil) == {"fixed_helper"}
