"""Prompts of a program of several files: every file under its path, the fixed ones marked
read-only, the edit format with paths; a window too small for all of them keeps the files
the call is about in full and shows the others as signatures, saying so."""

from __future__ import annotations

from pathlib import Path

from evolve.edits.blocks import evolvable_text
from evolve.llm.context_budget import TokenBudget
from evolve.problem.load import load_problem
from evolve.search.prompts import PromptBuilder, PromptContext, ShownProgram

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "tree_policy"
PROBLEM = load_problem(FIXTURE)
SEED = PROBLEM.seed_code


def _user(fmt: str, budget: int | None = None, **kw) -> tuple[str, list[str]]:
    builder = PromptBuilder(PROBLEM, TokenBudget.for_model(budget, 256) if budget else None)
    parent = ShownProgram(
        SEED, 3.0, {}, {"error": "ValueError in policy/pick.py"}, about=("policy/pick.py",)
    )
    messages = builder.build(PromptContext(parent=parent, edit_format=fmt, **kw))
    return messages[0]["content"] + "\n" + messages[1]["content"], builder.last_dropped


def test_every_file_is_shown_under_its_path_and_the_fixed_one_read_only():
    text, _ = _user(
        "diff", inspirations=[ShownProgram(evolvable_text(SEED, PROBLEM.fixed_files), 2.0)]
    )
    assert "### policy/rank.py\n```python\n" in text
    assert "### policy/pick.py\n```python\ndef choose(ranked, capacity):" in text
    assert "### policy/__init__.py (fixed: read-only, shown for reference)" in text
    assert "You may change policy/rank.py, policy/pick.py" in text
    assert "policy/__init__.py is fixed" in text
    assert "policy/rank.py\n<<<<<<< SEARCH\n" in text  # the format, with its path line
    assert "# evolve-file:" not in text  # the tree's own headers are not the prompt's
    # the inspiration: its evolving files only, each under its path
    inspiration = text.split("#### Program 1")[1]
    assert "### policy/pick.py" in inspiration and "policy/__init__.py" not in inspiration


def test_each_format_says_how_to_name_files():
    for fmt, phrase in [
        (
            "full",
            "each file you change, complete, in its own ```python code block under a line holding its path",
        ),
        (
            "block",
            "for each file you change, a line holding its path and then one ```python code block",
        ),
        ("crossover", "A file may come whole from either parent"),
        ("repair", "for each file you change, a line holding its path"),
    ]:
        second = ShownProgram(SEED, 2.0) if fmt == "crossover" else None
        text, _ = _user(fmt, second=second)
        assert phrase in text, fmt


def test_a_small_window_shows_other_files_as_signatures():
    full, dropped = _user("diff")
    assert not dropped and "(signatures only)" not in full
    text, dropped = _user("diff", budget=1300)
    assert "the fixed files (shown as signatures)" in dropped
    assert "the files the call is not about (shown as signatures)" in dropped
    assert (
        "### policy/rank.py (signatures only)\n```python\n# signatures only: the context window"
        in text
    )
    assert "def weight(item):\n```" in text  # its def line kept, its body not
    assert "### policy/__init__.py (fixed: read-only, shown for reference; signatures only)" in text
    # the file the call is about (its feedback names it) stays whole
    assert (
        "### policy/pick.py\n```python\ndef choose(ranked, capacity):\n    taken, used = [], 0"
        in text
    )
