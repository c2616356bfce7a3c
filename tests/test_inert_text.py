"""Candidate text made inert: prompts and exported tables carry no control characters or
escape sequences, and no CSV cell a spreadsheet would run as a formula.

The prompt is built the way a run builds it (a program stored in a real archive, read
back, shown through evolve/pipeline/proposal.py, rendered by PromptBuilder); the tables are
written by `evolve archive export` and read back with pandas.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

from evolve.archive import Archive, ArchiveReader, LlmCall, ProgramRow
from evolve.cli import main
from evolve.cli.safe_text import safe_text
from evolve.inert import inert_cell, strip_controls
from evolve.pipeline.proposal import shown
from evolve.problem.load import load_problem
from evolve.search.population import Attempt
from evolve.search.prompts import PromptBuilder, PromptContext
from evolve.testing.cli_helpers import BINPACK

# What may never reach a model or a table header: C0 but \t and \n, DEL, C1, and the
# printable rest of an escape sequence ("[31m", "]0;title") right after where ESC was.
CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
LEFTOVER = re.compile(r"\[\d+(;\d+)*m|\]0;|\]52;|\]8;;")
ESC_TEXT = (
    "\x1b[31mred\x1b[0m \x1b]0;pwned title\x07 \x1b]52;c;ZWNobyBoaQ==\x1b\\ "
    "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \x9b2J\x9d0;c1 title\x9c bell\x07 "
    "del\x7f nel\x85 back\x08space car\rriage \u202eevil\u202c <script>alert(1)</script>"
)
VISIBLE = "red   link  bell del nel backspace carriage evil <script>alert(1)</script>"
CODE = (
    "import math\n\n# EVOLVE-BLOCK-START\ndef pick(bins, item):\n"
    "    '''\x1b[2J\x1b]0;code title\x07'''\n    return 0\n# EVOLVE-BLOCK-END\n"
)


def test_strip_controls_removes_whole_sequences_and_keeps_text() -> None:
    assert strip_controls(ESC_TEXT) == VISIBLE
    assert strip_controls("a\tb\r\nc\n") == "a\tb\nc\n"  # tabs and newlines are kept
    # an unterminated OSC ends at the line's end: the lines after it survive
    assert strip_controls("\x1b]0;no end\nTraceback: boom") == "\nTraceback: boom"
    assert strip_controls(3.5) == "3.5"


def test_the_terminal_helper_shares_the_character_set() -> None:
    """safe_text shows what strip_controls removes: one list of unsafe characters."""
    shown_text = safe_text(ESC_TEXT)
    assert not CONTROL.search(shown_text) and "\\x1b[31m" in shown_text


@pytest.fixture
def stored(tmp_path: Path) -> ProgramRow:
    """A failed program with hostile artifacts, a metric named with ESC, stored and read back."""
    a = Archive(tmp_path / "runs")
    a.create_run("r1", "binpack", str(BINPACK), {}, 1)
    p = ProgramRow("r1-p0", "r1", "binpack", 0, 0, "pending", code=CODE, created_at=1.0)
    a.insert_program(p)
    p.status, p.score = "runtime_error", None
    p.metrics = {"waste\x1b[2J": 1.5}
    p.artifacts = {"stderr": ESC_TEXT, "error": "ValueError: " + ESC_TEXT, "traceback": ESC_TEXT}
    a.finish_program(p)
    a.close()
    return next(iter(ArchiveReader(tmp_path / "runs").programs("r1", code=True)))


def _prompt_text(messages: list[dict]) -> str:
    return "\n".join(m["content"] for m in messages)


@pytest.mark.parametrize("style", ["full", "short"])
@pytest.mark.parametrize("edit_format", ["diff", "full", "repair", "crossover"])
def test_a_prompt_carries_no_control_characters(stored, style, edit_format) -> None:
    parent = shown(stored, full=True)
    assert "\x1b" in parent.artifacts["stderr"]  # what the archive gave back is hostile
    ctx = PromptContext(
        parent=parent,
        edit_format=edit_format,
        inspirations=[replace(shown(stored), score=1.0)],
        attempts=[Attempt(1, "runtime_error", None, "tried " + ESC_TEXT)],
        second=shown(stored, full=True) if edit_format == "crossover" else None,
        retry="again " + ESC_TEXT,
    )
    text = _prompt_text(PromptBuilder(load_problem(BINPACK), style=style).build(ctx))
    assert not CONTROL.search(text), repr(CONTROL.search(text))
    assert not LEFTOVER.search(text), LEFTOVER.search(text)
    assert VISIBLE in text  # the readable part, HTML included, reaches the model unchanged
    assert "def pick(bins, item):" in text


def test_a_meta_prompt_carries_no_control_characters() -> None:
    messages = PromptBuilder(load_problem(BINPACK)).meta(
        ["attempt 1: " + ESC_TEXT], "notes " + ESC_TEXT, 1.0, 2.0, 5
    )
    text = _prompt_text(messages)
    assert not CONTROL.search(text) and not LEFTOVER.search(text)
    assert VISIBLE in text


# ---- exported tables ----------------------------------------------------------------

FORMULAS = ["=HYPERLINK(\"http://evil\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(1)",
            "\tlead tab", "\rlead cr"]  # fmt: skip


@pytest.fixture
def hostile_runs(tmp_path: Path) -> Path:
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run("r1", "binpack", str(BINPACK), {}, 1)
    call = a.insert_llm_call(LlmCall(
        run_id="r1", iteration=1, island=0, edit_format="diff", model="m",
        prompt=[{"role": "user", "content": FORMULAS[2]}], reply=FORMULAS[3], error=FORMULAS[0],
        prompt_tokens=10, completion_tokens=1, cost_usd=0.0, latency_s=1.0,
    ))  # fmt: skip
    for i, code in enumerate(FORMULAS):
        p = ProgramRow(f"r1-p{i}", "r1", "binpack", i, 0, "pending", code=code,
                       created_at=1.0 + i, llm_call_id=call, diff=FORMULAS[1])  # fmt: skip
        a.insert_program(p)
        p.status, p.score = "ok", -1.5
        p.metrics = {"waste\x1b[31m\x07": -2.0, "note": FORMULAS[0], "\x85name": 1.0}
        p.artifacts = {"error": FORMULAS[0]}
        a.finish_program(p)
    a.close()
    return runs


def _export(runs: Path, out: Path, fmt: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    assert main(["archive", "export", "r1", "--format", fmt, "--out", str(out),
                 "--runs-dir", str(runs)]) == 0  # fmt: skip
    calls = out.with_name(f"{out.stem}.llm_calls.{fmt}")
    if fmt == "csv":
        return pd.read_csv(out, dtype=str, keep_default_na=False), pd.read_csv(
            calls, dtype=str, keep_default_na=False
        )
    if fmt == "parquet":
        return pd.read_parquet(out), pd.read_parquet(calls)
    return pd.read_json(out, lines=True), pd.read_json(calls, lines=True)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_exported_headers_carry_no_control_characters(hostile_runs, tmp_path, fmt) -> None:
    programs, calls = _export(hostile_runs, tmp_path / f"t.{fmt}", fmt)
    for col in [*programs.columns, *calls.columns]:
        assert not CONTROL.search(col) and not LEFTOVER.search(col), repr(col)
    assert {"metric.waste", "metric.name", "metric.note"} <= set(programs.columns)


def test_csv_cells_that_look_like_formulas_are_quoted(hostile_runs, tmp_path) -> None:
    programs, calls = _export(hostile_runs, tmp_path / "t.csv", "csv")
    assert list(programs["code"]) == ["'" + f for f in FORMULAS]
    assert set(programs["diff"]) == {"'" + FORMULAS[1]}
    assert set(programs["metric.note"]) == {"'" + FORMULAS[0]}
    assert set(programs["metric.waste"]) == {"-2.0"} and set(programs["score"]) == {"-1.5"}
    assert json.loads(programs["artifacts"][0]) == {"error": FORMULAS[0]}  # JSON text: "{"
    assert (calls["reply"][0], calls["error"][0]) == ("'" + FORMULAS[3], "'" + FORMULAS[0])


@pytest.mark.parametrize("fmt", ["parquet", "jsonl"])
def test_typed_formats_keep_cells_exact(hostile_runs, tmp_path, fmt) -> None:
    programs, calls = _export(hostile_runs, tmp_path / f"t.{fmt}", fmt)
    assert list(programs["code"]) == FORMULAS and calls["reply"][0] == FORMULAS[3]


def test_inert_cell_leaves_numbers_and_plain_text() -> None:
    assert [inert_cell(v) for v in (-1.0, None, "plain", "a=b")] == [-1.0, None, "plain", "a=b"]
