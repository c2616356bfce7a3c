"""SEARCH/REPLACE replies: tolerant parsing, forgiving matching, and the fixed-code guard."""

from __future__ import annotations

import textwrap

from tests.support.edit_programs import PROGRAM, TWO, accepted, body, rejected


def test_diff_with_prose_and_fences():
    reply = (
        "Sorting longest jobs first balances load better.\n\n"
        "```python\n"
        "<<<<<<< SEARCH\n"
        "    order = sorted(jobs)\n"
        "=======\n"
        "    order = sorted(jobs, reverse=True)\n"
        ">>>>>>> REPLACE\n"
        "```\n\nThis should help."
    )
    out = accepted(PROGRAM, reply, "diff")
    assert out.kind == "diff"
    assert out.code == PROGRAM.replace("sorted(jobs)", "sorted(jobs, reverse=True)")
    assert "-    order = sorted(jobs)\n+    order = sorted(jobs, reverse=True)\n" in out.diff


def test_diff_tolerates_marker_lengths():
    reply = "<<<< SEARCH\n    plan = {}\n=====\n    plan = dict()\n>>>>>>>>>>>> REPLACE\n"
    out = accepted(PROGRAM, reply, "diff")
    assert "    plan = dict()\n" in out.code and "plan = {}" not in out.code


def test_diff_search_with_trailing_spaces():
    reply = "<<<<<<< SEARCH\n    plan = {}   \n    for i, job in enumerate(order):\t\n=======\n    plan = {}\n    for i, job in enumerate(order[::-1]):\n>>>>>>> REPLACE"
    out = accepted(PROGRAM, reply, "diff")
    assert "    for i, job in enumerate(order[::-1]):\n" in out.code


def test_diff_lost_indentation_is_restored():
    reply = textwrap.dedent("""\
        <<<<<<< SEARCH
        for i, job in enumerate(order):
            plan[job] = machines[i % len(machines)]
        =======
        for i, job in enumerate(order):
            if job:
                plan[job] = machines[-1 - i % len(machines)]
        >>>>>>> REPLACE
    """)
    out = accepted(PROGRAM, reply, "diff")
    assert body(out.code) == (
        "    order = sorted(jobs)\n"
        "    plan = {}\n"
        "    for i, job in enumerate(order):\n"
        "        if job:\n"
        "            plan[job] = machines[-1 - i % len(machines)]\n"
    )


def test_diff_replacement_alone_lost_its_indentation():
    reply = "<<<<<<< SEARCH\n    order = sorted(jobs)\n=======\norder = sorted(jobs, key=str)\n>>>>>>> REPLACE\n"
    out = accepted(PROGRAM, reply, "diff")
    assert "\n    order = sorted(jobs, key=str)\n" in out.code


def test_diff_missing_final_replace_marker_stops_at_the_fence():
    reply = (
        "```python\n<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {None: None}\n"
        "```\nThat adds a sentinel entry."
    )
    out = accepted(PROGRAM, reply, "diff")
    assert "    plan = {None: None}\n" in out.code
    assert "sentinel" not in out.code and "```" not in out.code


def test_diff_missing_final_replace_marker_at_end_of_text():
    reply = "<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {None: None}\n"
    assert "    plan = {None: None}\n" in accepted(PROGRAM, reply, "diff").code


def test_diff_several_blocks_in_one_reply():
    reply = (
        "Two changes:\n<<<<<<< SEARCH\n    order = sorted(jobs)\n=======\n"
        "    order = sorted(jobs, reverse=True)\n>>>>>>> REPLACE\n\nand\n\n"
        "<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {}  # fresh\n>>>>>>> REPLACE\n"
    )
    out = accepted(PROGRAM, reply, "diff")
    assert "sorted(jobs, reverse=True)" in out.code and "plan = {}  # fresh" in out.code
    assert out.notes == []


def test_diff_fences_inside_sections_are_dropped():
    reply = (
        "<<<<<<< SEARCH\n```python\n    plan = {}\n```\n=======\n```python\n"
        "    plan = {0: 0}\n```\n>>>>>>> REPLACE\n"
    )
    out = accepted(PROGRAM, reply, "diff")
    assert "    plan = {0: 0}\n" in out.code and "```" not in out.code


def test_diff_one_of_two_blocks_not_found_applies_the_other_and_notes_it():
    reply = (
        "<<<<<<< SEARCH\n    order = sorted(jobs)\n=======\n    order = list(jobs)\n>>>>>>> REPLACE\n"
        "<<<<<<< SEARCH\n    plan = collections.OrderedDict()\n=======\n    plan = {}\n"
        ">>>>>>> REPLACE\n"
    )
    out = accepted(PROGRAM, reply, "diff")
    assert "order = list(jobs)" in out.code
    assert len(out.notes) == 1 and "not found" in out.notes[0] and "OrderedDict" in out.notes[0]


def test_diff_search_not_found_names_the_first_missing_line():
    reply = (
        "<<<<<<< SEARCH\n    plan = {}\n    for job in jobs:\n=======\n    plan = {}\n"
        ">>>>>>> REPLACE\n"
    )
    out = rejected(PROGRAM, reply, "diff", "not found", "for job in jobs:")
    assert out.kind == "diff"


def test_diff_spanning_a_marker_line_is_rejected():
    reply = (
        "<<<<<<< SEARCH\n            plan[job] = machines[i % len(machines)]\n"
        "    # EVOLVE-BLOCK-END\n    return plan\n=======\n"
        "            plan[job] = machines[0]\n    return plan\n>>>>>>> REPLACE\n"
    )
    rejected(PROGRAM, reply, "diff", "fixed code", "EVOLVE-BLOCK-END")


def test_diff_that_keeps_a_marker_as_unchanged_context_is_accepted():
    reply = (
        "<<<<<<< SEARCH\n    # EVOLVE-BLOCK-START\n    order = sorted(jobs)\n=======\n"
        "    # EVOLVE-BLOCK-START\n    order = sorted(jobs)[::-1]\n>>>>>>> REPLACE\n"
    )
    assert "order = sorted(jobs)[::-1]" in accepted(PROGRAM, reply, "diff").code


def test_diff_changing_fixed_code_is_rejected():
    reply = "<<<<<<< SEARCH\nimport math\n=======\nimport math\nimport os\n>>>>>>> REPLACE\n"
    rejected(PROGRAM, reply, "diff", "inserts code outside the EVOLVE-BLOCKs at line 4")
    reply = "<<<<<<< SEARCH\n    return plan\n=======\n    return {}\n>>>>>>> REPLACE\n"
    rejected(PROGRAM, reply, "diff", "fixed code", "return plan")


def test_diff_prefers_the_occurrence_inside_the_block():
    parent = "x = 0\n# EVOLVE-BLOCK-START\nx = 0\n# EVOLVE-BLOCK-END\nprint(x)\n"
    out = accepted(parent, "<<<<<<< SEARCH\nx = 0\n=======\nx = 1\n>>>>>>> REPLACE", "diff")
    assert out.code == "x = 0\n# EVOLVE-BLOCK-START\nx = 1\n# EVOLVE-BLOCK-END\nprint(x)\n"


def test_diff_that_smuggles_a_marker_into_the_block_is_rejected():
    reply = (
        "<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {}\n    # EVOLVE-BLOCK-END\n"
        "    return {}\n    # EVOLVE-BLOCK-START\n>>>>>>> REPLACE\n"
    )
    rejected(PROGRAM, reply, "diff", "EVOLVE-BLOCKs")


def test_diff_redefining_fixed_api_inside_a_block_is_rejected():
    reply = (
        "<<<<<<< SEARCH\n        return -bins * WEIGHT\n=======\n        return -bins * WEIGHT\n\n\n"
        "def fixed_helper(x):\n    return 0\n>>>>>>> REPLACE\n"
    )
    rejected(TWO, reply, "diff", "redefines fixed fixed_helper")


def test_diff_without_divider_is_malformed():
    reply = "<<<<<<< SEARCH\n    plan = {}\n>>>>>>> REPLACE\n"
    out = rejected(PROGRAM, reply, "diff", "malformed", "=======")
    assert out.kind == "diff"


def test_diff_that_changes_nothing():
    reply = "<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {}\n>>>>>>> REPLACE\n"
    rejected(PROGRAM, reply, "diff", "the edit does not change the program")


def test_diff_inside_think_is_ignored_and_crlf_is_fine():
    reply = (
        "<think>\n<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = 1\n>>>>>>> REPLACE\n</think>\r\n"
        "<<<<<<< SEARCH\r\n    plan = {}\r\n=======\r\n    plan = {1: 2}\r\n>>>>>>> REPLACE\r\n"
    )
    out = accepted(PROGRAM, reply, "diff")
    assert (
        "    plan = {1: 2}\n" in out.code and "plan = 1\n" not in out.code and "\r" not in out.code
    )


def test_think_without_its_opening_tag_is_dropped():
    reply = (
        "maybe\n<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = 1\n>>>>>>> REPLACE\n</think>"
        "<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {1: 2}\n>>>>>>> REPLACE\n"
    )
    assert "    plan = {1: 2}\n" in accepted(PROGRAM, reply, "diff").code


def test_diff_on_a_program_without_markers_may_change_anything():
    parent = "import math\n\n\ndef f(x):\n    return math.sqrt(x)\n"
    reply = "<<<<<<< SEARCH\nimport math\n=======\nimport cmath as math\n>>>>>>> REPLACE\n"
    assert accepted(parent, reply, "diff").code.startswith("import cmath as math\n")
