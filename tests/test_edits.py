"""Applying model replies: block and full rewrites, format fallbacks, garbage, hash, diff."""

from __future__ import annotations

import random

import pytest

from evolve.edits import EditOutcome, apply_reply, normalized_hash, unified_diff
from evolve.edits.blocks import find_blocks, fixed_unchanged, split_lines
from tests.support.edit_programs import BINPACK, PROGRAM, TWO, accepted, body, rejected

# ---------------------------------------------------------------- block


def test_block_with_markers_and_lost_indentation():
    reply = (
        "Here is the new block:\n```py\n# EVOLVE-BLOCK-START\norder = sorted(jobs, key=len)\n"
        "plan = {j: machines[0] for j in order}\n# EVOLVE-BLOCK-END\n```\n"
    )
    out = accepted(PROGRAM, reply, "block")
    assert out.kind == "block"
    assert body(out.code) == (
        "    order = sorted(jobs, key=len)\n    plan = {j: machines[0] for j in order}\n"
    )


def test_block_without_markers_just_the_body():
    reply = "```python\ndef priority(item, bins):\n    return -(bins - item)\n```"
    out = accepted(BINPACK, reply, "block")
    assert body(out.code) == "def priority(item, bins):\n    return -(bins - item)\n"


def test_block_reply_with_the_enclosing_def_line_is_trimmed():
    reply = (
        "```python\ndef schedule(jobs, machines):\n    plan = {j: machines[0] for j in jobs}\n"
        "    return plan\n```"
    )
    out = accepted(PROGRAM, reply, "block")
    assert body(out.code) == "    plan = {j: machines[0] for j in jobs}\n"


def test_block_reply_that_is_the_whole_program_with_a_changed_import():
    child = BINPACK.replace("import numpy as np", "import numpy as np\nimport scipy").replace(
        "return -np.arange(len(bins), dtype=float)", "return -(bins - item)"
    )
    out = accepted(BINPACK, f"Updated program:\n```python\n{child}```\n", "block")
    assert "import scipy" not in out.code
    assert "    return -(bins - item)\n" in out.code


def test_block_picks_the_last_real_code_block():
    reply = (
        "Old:\n```python\ndef priority(item, bins):\n    return -np.arange(len(bins))\n```\n"
        "New:\n```python\ndef priority(item, bins):\n    gap = bins - item\n    return -gap\n```\n"
        "Usage:\n```python\np = 1\n```\n"
    )
    out = accepted(BINPACK, reply, "block")
    assert "gap = bins - item" in out.code and "p = 1" not in out.code


def test_block_two_marker_pairs_map_in_order():
    reply = (
        "```python\n# EVOLVE-BLOCK-START\nWEIGHT = 2.5\n# EVOLVE-BLOCK-END\n\n"
        "# EVOLVE-BLOCK-START\ndef priority(item, bins):\n    return bins * WEIGHT\n"
        "# EVOLVE-BLOCK-END\n```"
    )
    out = accepted(TWO, reply, "block")
    assert body(out.code, 0) == "WEIGHT = 2.5\n"
    assert body(out.code, 1) == "def priority(item, bins):\n    return bins * WEIGHT\n"


def test_block_single_body_for_two_blocks_goes_to_the_most_similar():
    reply = "```python\ndef priority(item, bins):\n    return -bins * WEIGHT**2\n```"
    out = accepted(TWO, reply, "block")
    assert body(out.code, 0) == "WEIGHT = 1.0\n"
    assert "WEIGHT**2" in body(out.code, 1)
    assert any("EVOLVE-BLOCK 1" in n for n in out.notes)


def test_block_truncated_reply_without_closing_fence():
    reply = "Sure!\n```python\ndef priority(item, bins):\n    return bins - item\n"
    assert "return bins - item" in accepted(BINPACK, reply, "block").code


def test_bare_code_without_fences():
    reply = "def priority(item, bins):\n    return bins - item\n"
    assert "return bins - item" in accepted(BINPACK, reply, "block").code


# ---------------------------------------------------------------- full


def test_full_with_markers_and_changed_import_keeps_parent_fixed_code():
    child = PROGRAM.replace("import math", "import math\nimport os").replace(
        "order = sorted(jobs)", "order = sorted(jobs, reverse=True)"
    )
    out = accepted(PROGRAM, f"Here you go:\n```python\n{child}```\nDone.", "full")
    assert out.kind == "full"
    assert out.code == PROGRAM.replace("order = sorted(jobs)", "order = sorted(jobs, reverse=True)")


def test_full_without_markers_and_fixed_code_intact_keeps_markers():
    child = "".join(ln for ln in split_lines(PROGRAM) if "EVOLVE-BLOCK" not in ln)
    child = child.replace("plan = {}", "plan = dict()")
    out = accepted(PROGRAM, f"```\n{child}```", "full")
    assert out.code == PROGRAM.replace("plan = {}", "plan = dict()")


def test_full_without_markers_that_changes_the_signature_is_rejected():
    child = "".join(ln for ln in split_lines(PROGRAM) if "EVOLVE-BLOCK" not in ln)
    child = child.replace("def schedule(jobs, machines):", "def schedule(jobs, machines, k=2):")
    child = child.replace("plan = {}", "plan = dict()")
    for asked in ("full", "block", "diff"):
        out = rejected(PROGRAM, f"```python\n{child}```", asked, "def schedule(jobs, machines):")
        assert out.kind in ("full", "block")


def test_full_asked_but_model_sent_a_diff():
    reply = "<<<<<<< SEARCH\n    plan = {}\n=======\n    plan = {0: 1}\n>>>>>>> REPLACE\n"
    assert accepted(PROGRAM, reply, "full").kind == "diff"


def test_diff_asked_but_model_sent_the_whole_program():
    child = PROGRAM.replace("order = sorted(jobs)", "order = list(jobs)")
    assert accepted(PROGRAM, f"```python\n{child}```", "diff").kind == "full"


def test_full_identical_program_does_not_change_it():
    rejected(PROGRAM, f"```python\n{PROGRAM}```", "full", "does not change")


def test_full_on_a_program_without_markers_replaces_it():
    parent = "def f(x):\n    return x\n"
    out = accepted(parent, "```python\ndef f(x):\n    return x + 1\n```", "full")
    assert out.code == "def f(x):\n    return x + 1\n"


# ---------------------------------------------------------------- no edit, garbage


@pytest.mark.parametrize("reply", ["", "   \n", "I think the heuristic is already optimal."])
def test_replies_without_code(reply):
    for asked in ("diff", "block", "full"):
        out = rejected(PROGRAM, reply, asked, "no edit found")
        assert out.kind == "none"


def test_binary_garbage_and_odd_types_never_raise():
    rng = random.Random(0)
    garbage = bytes(rng.randrange(256) for _ in range(4000))
    for reply in (garbage, garbage.decode("latin-1"), None, 12, "\x00" * 50, "\ud800```"):
        for asked in ("diff", "block", "full", "bogus"):
            out = apply_reply(PROGRAM, reply, asked)
            assert isinstance(out, EditOutcome) and not out.ok and out.error


def test_malformed_parent_markers_are_reported():
    parent = "# EVOLVE-BLOCK-START\nx = 1\n"
    rejected(parent, "```python\nx = 2\n```", "full", "malformed EVOLVE-BLOCK", "never closed")


def test_fuzz_never_raises_and_never_touches_fixed_code():
    pieces = [
        "<<<<<<< SEARCH\n", "=======\n", ">>>>>>> REPLACE\n", "```python\n", "```\n",
        "<<< SEARCH\n", "# EVOLVE-BLOCK-START\n", "# EVOLVE-BLOCK-END\n", "<think>", "</think>",
        "import math\n", "import os\n", "    return plan\n", "    plan = {}\n", "plan = {}\n",
        "def schedule(jobs, machines):\n", "    order = sorted(jobs)\n", "x = 1\n", "\n",
        "Some prose.\n", "    ", "\t", "def evaluate(jobs, machines):\n", "\x00", "é",
    ]  # fmt: skip
    rng = random.Random(1234)
    ok = 0
    for _ in range(1500):
        reply = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 25)))
        out = apply_reply(PROGRAM, reply, rng.choice(["diff", "block", "full"]))
        assert out.error is None if out.ok else out.error
        if out.ok:
            ok += 1
            assert out.code != PROGRAM
            assert fixed_unchanged(PROGRAM, out.code) is None, reply
            assert len(find_blocks(out.code)) == 1
        else:
            assert "internal error" not in out.error, (reply, out.error)
    assert ok > 50  # the fuzz reaches the success paths too


# ---------------------------------------------------------------- hash and diff


def test_normalized_hash_ignores_comments_docstrings_and_formatting():
    a = "def f(x):\n    return x+1\n"
    b = 'def f( x ):\n    """Add one."""\n\n    # bump\n    return (x + 1)  # done\n'
    assert normalized_hash(a) == normalized_hash(b)
    assert normalized_hash(a) != normalized_hash("def f(x):\n    return x + 2\n")
    assert len(normalized_hash(a)) == 64


def test_normalized_hash_keeps_string_contents_and_handles_unparsable_code():
    assert normalized_hash("s = 'a # b'\n") != normalized_hash("s = 'a # c'\n")
    bad = "def f(:\n    return 1\n"
    assert normalized_hash(bad) == normalized_hash("def  f(:   # oops\n\n    return 1")
    assert normalized_hash(bad) != normalized_hash("def f(:\n    return 2\n")


def test_normalized_hash_is_the_same_for_marker_only_differences():
    stripped = "".join(ln for ln in split_lines(PROGRAM) if "EVOLVE-BLOCK" not in ln)
    assert normalized_hash(PROGRAM) == normalized_hash(stripped)


def test_unified_diff():
    assert unified_diff("a\n", "a\n") == ""
    d = unified_diff("a\nb", "a\nc")
    assert d.startswith("--- parent\n+++ child\n") and "-b\n+c\n" in d
