"""Programs and assertions shared by the edit tests (data and helpers only)."""

from __future__ import annotations

import textwrap

from evolve.edits import EditOutcome, apply_reply
from evolve.edits.blocks import find_blocks, fixed_unchanged

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

BINPACK = textwrap.dedent('''\
    """Online bin packing heuristic.

    The evaluator calls priority(item, bins) once per arriving item.
    """

    import numpy as np


    # EVOLVE-BLOCK-START
    def priority(item: float, bins: np.ndarray) -> np.ndarray:
        """First fit."""
        return -np.arange(len(bins), dtype=float)


    # EVOLVE-BLOCK-END
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


def body(code: str, i: int = 0) -> str:
    return find_blocks(code)[i].body


def accepted(parent: str, reply: str, asked: str) -> EditOutcome:
    """Apply reply; it must succeed, change the program, and keep the fixed code."""
    out = apply_reply(parent, reply, asked)
    assert out.ok, out.error
    assert out.error is None and out.code != parent
    assert fixed_unchanged(parent, out.code) is None
    assert out.diff.startswith("--- parent\n+++ child\n")
    return out


def rejected(parent: str, reply: str, asked: str, *words: str) -> EditOutcome:
    """Apply reply; it must fail with an error containing every one of words."""
    out = apply_reply(parent, reply, asked)
    assert not out.ok and out.code is None and out.diff == ""
    for w in words:
        assert w in out.error, out.error
    return out
