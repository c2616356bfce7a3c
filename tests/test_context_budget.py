"""Context packing: prompts fit the model's window, and the parent's EVOLVE-BLOCK always survives."""

from __future__ import annotations

from dataclasses import replace

import pytest

from evolve.edits.blocks import evolvable_text
from evolve.llm.context_budget import TokenBudget, estimate_tokens, messages_tokens
from evolve.problem.load import load_problem
from evolve.search.population import Attempt
from evolve.search.prompts import (
    PromptBuilder,
    PromptContext,
    PromptTooLong,
    ShownProgram,
    elide_fixed,
)
from evolve.testing.cli_helpers import BINPACK

PROBLEM = load_problem(BINPACK)
SEED = PROBLEM.seed_code
BLOCK = evolvable_text(SEED).strip()


def _ctx(fmt: str = "block", second: bool = False) -> PromptContext:
    arts = {
        "error": "Traceback (most recent call last):\n"
        + "  File 'x.py', line 3, in f\n" * 60
        + "ValueError: bad"
    }
    insp = [
        ShownProgram(
            f"def priority(item, bins):\n    return -(bins - item) * {i}.5 + {i}\n" * 8, -4.0 + i
        )
        for i in range(3)
    ]
    atts = [
        Attempt(i, "invalid_edit", None, f"the reply could not be applied: try {i} " + "x" * 80)
        for i in range(5)
    ]
    parent = ShownProgram(SEED, -4.2, {"excess_pct": 4.2, "bins": 1234}, arts)
    sec = ShownProgram(SEED.replace("Best fit", "Second parent"), -4.1) if second else None
    return PromptContext(
        parent=parent,
        edit_format="crossover" if second else fmt,
        inspirations=insp,
        attempts=atts,
        second=sec,
    )


def _full_tokens(ctx: PromptContext) -> int:
    b = PromptBuilder(PROBLEM)
    return b.tokens(b.render(ctx))


def test_estimate_is_conservative_and_simple():
    assert estimate_tokens("") == 0
    assert estimate_tokens("hello") == 2  # ceil(5 / 3)
    assert estimate_tokens("1234567890") == 10  # digits one by one
    assert estimate_tokens("é") == 2  # non-ASCII: a token per byte at worst
    text = SEED
    assert estimate_tokens(text) >= len(text) / 4  # far above what a BPE tokenizer gives for code
    msgs = [{"role": "system", "content": "a"}, {"role": "user", "content": "b"}]
    assert messages_tokens(msgs) == 2 * (8 + 1) + 4


def test_no_budget_renders_everything():
    ctx = _ctx()
    text = PromptBuilder(PROBLEM).build(ctx)[1]["content"]
    assert "Program 3" in text and "attempt 4" in text and "ValueError: bad" in text


def test_window_sweep_never_overflows_and_keeps_the_block():
    ctx = _ctx()
    full = _full_tokens(ctx)
    max_out = 200
    fitted = 0
    for window in range(300, full + 600, 97):
        budget = TokenBudget.for_model(window, max_out)
        b = PromptBuilder(PROBLEM, budget)
        try:
            msgs = b.build(ctx)
        except PromptTooLong:
            assert window < full, "a prompt that fits whole must never be refused"
            continue
        fitted += 1
        assert b.tokens(msgs) <= budget.prompt_tokens, window
        assert BLOCK in msgs[1]["content"], "the EVOLVE-BLOCK is never cut"
    assert fitted > 5


def test_drop_order_inspirations_attempts_feedback_then_fixed_code():
    ctx = _ctx()
    full = _full_tokens(ctx)
    order = []
    for window in range(full + 400, 200, -37):
        b = PromptBuilder(PROBLEM, TokenBudget.for_model(window, 100))
        try:
            b.build(ctx)
        except PromptTooLong:
            break
        for what in b.last_dropped:
            if what not in order:
                order.append(what)
    assert order[:2] == ["an inspiration", "an attempt"]
    assert (
        order.index("the feedback")
        < order.index("the fixed code")
        < order.index("the domain notes")
    )
    assert order.index("an attempt") < order.index("feedback beyond 600 chars")


def _min_window(ctx: PromptContext, max_out: int) -> int:
    """The smallest window a prompt for ctx fits in (packing is monotonic in the window)."""
    lo, hi = 1, _full_tokens(ctx) + max_out + 1000
    while lo < hi:
        mid = (lo + hi) // 2
        try:
            PromptBuilder(PROBLEM, TokenBudget.for_model(mid, max_out)).build(ctx)
            hi = mid
        except PromptTooLong:
            lo = mid + 1
    return lo


def test_tiny_window_shows_only_the_block_and_then_refuses():
    ctx = _ctx()
    window = _min_window(ctx, 100)
    budget = TokenBudget.for_model(window, 100)
    b = PromptBuilder(PROBLEM, budget)
    msgs = b.build(ctx)
    user = msgs[1]["content"]
    assert (
        BLOCK in user
        and "Program 1" not in user
        and "attempt 0" not in user
        and "ValueError" not in user
    )
    assert "fixed lines not shown" in user and "import numpy as np" in user
    assert "FunSearch reached" not in msgs[0]["content"], "the domain notes go last"
    assert b.tokens(msgs) <= budget.prompt_tokens
    with pytest.raises(PromptTooLong, match="larger context window"):
        PromptBuilder(PROBLEM, TokenBudget.for_model(window - 1, 100)).build(ctx)


def test_full_format_falls_back_to_block_when_the_fixed_code_goes():
    ctx = _ctx("full")
    msgs = PromptBuilder(PROBLEM, TokenBudget.for_model(_min_window(ctx, 100), 100)).build(ctx)
    user = msgs[1]["content"]
    assert "fixed lines not shown" in user
    assert "Rewrite the code inside the EVOLVE-BLOCK" in user  # block.j2's task, not full.j2's


def test_crossover_drops_the_second_parent_before_the_first_parents_fixed_code():
    ctx = _ctx(second=True)
    seen = []
    for window in range(_full_tokens(ctx) + 200, 300, -61):
        b = PromptBuilder(PROBLEM, TokenBudget.for_model(window, 100))
        try:
            msgs = b.build(ctx)
        except PromptTooLong:
            break
        seen.extend(w for w in b.last_dropped if w not in seen)
        if "the second parent" in b.last_dropped:
            assert "Second parent" not in msgs[1]["content"]
            assert "Rewrite the code inside the EVOLVE-BLOCK" in msgs[1]["content"]
    assert seen.index("the second parent") < seen.index("the fixed code")


def test_profile_limits_inspirations_and_attempts():
    b = PromptBuilder(PROBLEM, max_inspirations=1, max_attempts=2)
    user = b.build(_ctx())[1]["content"]
    assert "Program 1" in user and "Program 2" not in user
    assert "try 4" in user and "try 3" in user and "try 2" not in user


def test_short_style_for_small_models():
    ctx = _ctx()
    ctx.parent.artifacts["items"] = "5000"  # one-word feedback is noise to a small model
    msgs = PromptBuilder(PROBLEM, style="short", max_inspirations=1, max_attempts=3).build(ctx)
    system, user = msgs[0]["content"], msgs[1]["content"]
    assert len(system) < len(PromptBuilder(PROBLEM).build(_ctx())[0]["content"])
    assert "FunSearch's evolved rule reaches" in system, "the domain notes stay"
    assert BLOCK in user and "Fixed API" not in user and "import numpy as np" in user
    assert "items:" not in user and "ValueError: bad" in user
    assert user.count("Another version for ideas") == 1
    # the last three attempts, by status only: a failed sibling's error text misleads a small model
    assert user.count("- invalid_edit") == 3 and "try 2" not in user
    assert "## " not in user, "no headings for a small model to continue"
    full = PromptBuilder(PROBLEM, style="short").build(_ctx("full"))[1]["content"]
    assert "Fixed API" in full, "a whole-program rewrite needs the whole program"


def test_elide_fixed_keeps_imports_markers_and_block():
    out = elide_fixed(SEED)
    assert "import numpy as np" in out and "EVOLVE-BLOCK-START" in out and "EVOLVE-BLOCK-END" in out
    assert BLOCK in out and "Fixed API" not in out
    assert (
        elide_fixed("def f():\n    return 1\n") == "def f():\n    return 1\n"
    )  # no markers: all evolvable


def test_a_huge_inspiration_is_dropped_never_refused():
    """A program too big for any prompt wedges nothing as an inspiration: it is left out."""
    pad = "    # a remark that pads this policy far past what a prompt can hold\n" * 4000
    huge = ShownProgram(f"def priority(item, bins):\n{pad}    return -(bins - item)\n", -1.0)
    ctx = _ctx()
    ctx = replace(ctx, inspirations=[huge, *ctx.inspirations])
    budget = TokenBudget.for_model(4096, 512)
    b = PromptBuilder(PROBLEM, budget)
    msgs = b.build(ctx)
    assert "pads this policy" not in msgs[1]["content"] and BLOCK in msgs[1]["content"]
    assert b.tokens(msgs) <= budget.prompt_tokens
    assert b.last_dropped.count("an inspiration") == 4
