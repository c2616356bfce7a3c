"""Small models' slips undone without another call (evolve/edits/tidy.py), through apply_reply:
the replies are the shapes the bundled 0.5B model gave on binpack (bench/prompt_probe.py)."""

from __future__ import annotations

import textwrap

from evolve.edits import apply_reply
from tests.support.edit_programs import BINPACK, accepted, body

TWO_DEFS = textwrap.dedent("""\
    import numpy as np


    # EVOLVE-BLOCK-START
    def priority(item, bins):
        return -(bins - item)


    def helper(x):
        return x
    # EVOLVE-BLOCK-END
    """)


def fence(code: str) -> str:
    return "```python\n" + textwrap.dedent(code) + "```"


def test_example_usage_after_the_function_is_dropped():
    reply = fence("""\
        def priority(item, bins):
            gap = bins - item
            return np.where(gap < 20, -gap - 40.0, -gap)

        # Example usage
        bins = np.array([100, 95, 90])
        score = priority(25, bins)
        print(score)
        """)
    out = accepted(BINPACK, reply, "block")
    assert "print" not in out.code and "score = priority" not in out.code
    assert "np.where(gap < 20" in out.code and "bins = np.array([100, 95, 90])" in out.code
    assert out.notes == ["dropped 2 statement(s) after the last function (example usage)"]
    compile(out.code, "child.py", "exec")


def test_a_constant_the_function_reads_is_kept_wherever_it_stands():
    reply = fence("""\
        def priority(item, bins):
            return -(bins - item) - PENALTY * (bins - item < SMALL)

        PENALTY = 40.0
        SMALL = 20
        print(priority(3, np.array([5.0])))
        """)
    out = accepted(BINPACK, reply, "block")
    assert "PENALTY = 40.0" in out.code and "SMALL = 20" in out.code
    assert "print(" not in out.code


def test_other_module_level_code_after_the_function_stays():
    # not usage: it runs at import as the author meant (a hostile one is the sandbox's business)
    reply = fence("""\
        def priority(item, bins):
            return -(bins - item)

        np.seterr(all="ignore")
        while False:
            pass
        """)
    out = accepted(BINPACK, reply, "block")
    assert 'np.seterr(all="ignore")' in out.code and "while False:" in out.code and not out.notes


def test_a_renamed_function_gets_the_name_the_program_calls():
    reply = fence("""\
        def binpack(item, bins):
            gap = bins - item
            return np.where(gap == 0, 1e9, -gap)
        """)
    out = accepted(BINPACK, reply, "block")
    assert "def priority(item, bins):" in out.code and "binpack" not in body(out.code)
    assert out.notes == [
        "renamed the reply's function binpack to priority, the name the program calls"
    ]


def test_a_new_name_beside_the_parents_functions_is_not_renamed():
    reply = fence("""\
        def priority(item, bins):
            return helper2(bins - item)


        def helper2(x):
            return -x
        """)
    out = accepted(TWO_DEFS, reply, "block")
    assert "def helper2" in out.code and not out.notes


def test_a_body_without_its_def_line_goes_under_the_parents_def():
    reply = fence("""\
        # Idea: prefer bins that are already fairly full
        gap = bins - item
        return np.where(bins < 100, -gap, -gap - 10.0)
        """)
    out = accepted(BINPACK, reply, "block")
    code = body(out.code)
    assert code.startswith("def priority(item: float, bins: np.ndarray) -> np.ndarray:\n")
    assert "    return np.where(bins < 100, -gap, -gap - 10.0)\n" in code
    assert out.notes == ["put the reply's statements under the parent's `def priority` line"]
    compile(out.code, "child.py", "exec")


def test_unfixable_code_is_left_as_the_model_wrote_it():
    # the array's truth value: a runtime error the evaluator names; nothing here guesses
    reply = fence("""\
        def priority(item, bins):
            if bins - item < 8:
                return 0.0
            return -(bins - item)
        """)
    out = apply_reply(BINPACK, reply, "block")
    assert out.ok and not out.notes and "if bins - item < 8:" in out.code


def test_blocks_inside_a_function_are_not_touched():
    parent = textwrap.dedent("""\
        def solve(xs):
            # EVOLVE-BLOCK-START
            ys = sorted(xs)
            # EVOLVE-BLOCK-END
            return ys
        """)
    reply = fence("""\
        ys = sorted(xs, reverse=True)
        print(ys)
        """)
    out = apply_reply(parent, reply, "block")
    assert out.ok and "print(ys)" in out.code and not out.notes
