"""Candidate text never drives the operator's terminal.

A program's code, output, artifacts, metric names and error messages may hold
terminal escape sequences (OSC 52 clipboard writes, window titles, screen
clears, C1 CSI, `\\r` overwrites) and rich markup. The real CLI, run on such an
archive and on such a candidate, must show them as visible escapes and print the
markup literally; JSON, `--code` and `diff` to a pipe or file stay exact.
"""

from __future__ import annotations

import io
import json
import os
import pty
import re
import subprocess
import sys
import tty
from pathlib import Path

import pytest
from rich.console import Console

from evolve.archive import Archive, ProgramRow
from evolve.cli.progress import RunProgress
from evolve.cli.safe_text import safe_rich, safe_syntax, safe_text
from evolve.edits import unified_diff
from evolve.testing.cli_helpers import ROOT, env
from evolve.testing.scripted_llm import ScriptedLLM

# ESC-based OSC 52 (clipboard), OSC 0 (title), CSI (clear), 8-bit CSI, lone CR,
# backspace, DEL, a bidi override; then rich markup and an emoji code.
EVIL = "A\x1b]52;c;cHduZWQ=\x07B\x1b]0;pwned\x07C\x1b[2JD\x9b31mE\rF\x08G\x7fH\u202eI"
MARKUP = "[red]RED[/red][link=https://evil.example]L[/link]:smile:"
VISIBLE = (
    "\\x1b]52;c;cHduZWQ=\\x07",
    "\\x1b]0;pwned\\x07",
    "\\x1b[2J",
    "\\x9b31m",
    "\\x0dF",
    "\\x08G",
    "\\x7fH",
    "\\u202eI",
)
# What must never reach a terminal raw (the CLI itself emits none: no tty, NO_COLOR).
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

CODE = (
    '"""a candidate"""\n'
    "# EVOLVE-BLOCK-START\n"
    f'x = "{EVIL}{MARKUP}"\n'
    "def f():\n"
    "\treturn x\n"
    "# EVOLVE-BLOCK-END\n"
)
CHILD = CODE.replace("return x", f"return x + '{EVIL}'")


def _env() -> dict:
    e = env(NO_COLOR="1", TERM="dumb", COLUMNS="400", LINES="50")
    for k in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "CLICOLOR_FORCE"):
        e.pop(k, None)
    return e


def cli(*args: object, timeout: float = 240) -> tuple[int, str, str]:
    """The real CLI; output read as bytes so no `\\r` is translated away."""
    r = subprocess.run(
        [sys.executable, "-m", "evolve.cli", *map(str, args)],
        capture_output=True,
        timeout=timeout,
        env=_env(),
        cwd=ROOT,
    )
    return r.returncode, r.stdout.decode("utf-8"), r.stderr.decode("utf-8")


def cli_tty(*args: object) -> tuple[int, str]:
    """The real CLI with stdout on a (raw-mode) pseudo terminal."""
    master, slave = pty.openpty()
    tty.setraw(slave)  # no \n -> \r\n: every byte read is one the CLI wrote
    p = subprocess.Popen(
        [sys.executable, "-m", "evolve.cli", *map(str, args)],
        stdout=slave,
        stderr=subprocess.DEVNULL,
        env=_env(),
        cwd=ROOT,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the child closed its end
            break
        if not b:
            break
        chunks.append(b)
    os.close(master)
    return p.wait(timeout=60), b"".join(chunks).decode("utf-8")


def assert_neutral(text: str, *visible: str) -> None:
    bad = RAW.findall(text)
    assert not bad, f"raw control characters reached the terminal: {bad!r}\n{text!r}"
    for v in visible:
        assert v in text, f"{v!r} not shown in:\n{text}"


# ---- the function ------------------------------------------------------------------------


def test_safe_text_shows_controls_and_keeps_layout():
    assert safe_text("a\tb\nc") == "a\tb\nc"
    assert safe_text("l1\r\nl2\r\n") == "l1\nl2\n"  # CRLF line ends are just line ends
    assert safe_text("ok\roverwritten") == "ok\\x0doverwritten"
    assert safe_text("\x1b]0;t\x07\x9b2J\x00\x7f") == "\\x1b]0;t\\x07\\x9b2J\\x00\\x7f"
    assert safe_text("\u202e\u2066") == "\\u202e\\u2066"
    assert safe_text("bad \udc9b byte") == "bad \\udc9b byte"  # a surrogate-escaped byte
    assert safe_text("é ü 中 \\x1b") == "é ü 中 \\x1b"  # printable text is untouched
    assert safe_text(3.5) == "3.5"
    assert_neutral(safe_text(EVIL), *VISIBLE)


def test_rich_helpers_print_markup_literally():
    buf = io.StringIO()
    c = Console(file=buf, width=400, color_system=None)
    c.print(safe_rich(EVIL + MARKUP))
    c.print(safe_syntax(CODE, "python", line_numbers=True))
    out = buf.getvalue()
    assert_neutral(out, *VISIBLE, MARKUP)

    buf = io.StringIO()
    RunProgress(enabled=False, console=Console(file=buf, width=400)).note(EVIL + MARKUP)
    assert_neutral(buf.getvalue(), *VISIBLE, MARKUP)


# ---- evolve archive ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("runs")
    a = Archive(path)
    a.create_run("r", f"p{EVIL}", "/x", {}, 5)
    common = dict(run_id="r", problem=f"p{EVIL}", island=0, status="ok", model=f"m{EVIL}")
    a.insert_program(
        ProgramRow(
            program_id="r:0",
            iteration=0,
            code=CODE,
            score=1.0,
            kind="seed",
            metrics={f"metric{EVIL}{MARKUP}": 2.0, "label": f"v{EVIL}"},
            artifacts={
                "stderr": f"err {EVIL}{MARKUP}\n",
                f"key{EVIL}": f"out {EVIL}",
            },
            **common,
        )
    )
    a.insert_program(
        ProgramRow(program_id="r:1", iteration=1, code=CHILD, score=2.0, parent_id="r:0", **common)
    )
    a.set_run_status("r", "failed", f"seed said {EVIL}{MARKUP}")
    a.close()
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("show", "r:0"),
        ("best", "--run", "r"),
        ("best",),
        ("runs",),
        ("lineage", "r:1"),
    ],
)
def test_archive_display_is_neutralised(runs, args):
    rc, out, err = cli("archive", *args, "--runs-dir", runs)
    assert rc == 0, err
    assert_neutral(out, "\\x1b]0;pwned\\x07")
    assert_neutral(err)


def test_archive_show_shows_every_candidate_field_escaped(runs):
    rc, out, _ = cli("archive", "show", "r:0", "--runs-dir", runs)
    assert rc == 0
    assert_neutral(out, *VISIBLE, MARKUP, "metricA\\x1b]52", "keyA\\x1b]52", "out A\\x1b", "err A")
    # the code is shown with syntax highlighting, escapes visible, markup literal
    assert 'x = "A\\x1b]52;c;cHduZWQ=\\x07B' in out and "[/link]:smile:" in out


def test_archive_runs_shows_the_stop_reason_escaped(runs):
    rc, out, _ = cli("archive", "runs", "--runs-dir", runs)
    assert rc == 0
    assert_neutral(out, "seed said A\\x1b]52", "\\x9b31m")


def test_archive_json_is_exact_and_terminal_safe(runs):
    rc, out, _ = cli("archive", "show", "r:0", "--json", "--runs-dir", runs)
    assert rc == 0
    assert_neutral(out)  # JSON escapes control characters itself
    d = json.loads(out)
    assert d["code"] == CODE
    assert d["artifacts"][f"key{EVIL}"] == f"out {EVIL}"


def test_code_and_diff_are_exact_to_a_pipe(runs):
    rc, out, _ = cli("archive", "show", "r:1", "--code", "--runs-dir", runs)
    assert rc == 0 and out == CHILD
    rc, out, _ = cli("archive", "best", "--run", "r", "--code", "--runs-dir", runs)
    assert rc == 0 and out == CHILD
    rc, out, _ = cli("archive", "diff", "r:1", "--runs-dir", runs)
    assert rc == 0 and out == unified_diff(CODE, CHILD, "r:0", "r:1")


def test_code_and_diff_are_neutralised_on_a_terminal(runs):
    rc, out = cli_tty("archive", "show", "r:1", "--code", "--runs-dir", runs)
    assert rc == 0
    assert_neutral(out, *VISIBLE, MARKUP)
    assert out == safe_text(CHILD)
    rc, out = cli_tty("archive", "diff", "r:1", "--runs-dir", runs)
    assert rc == 0
    assert_neutral(out, *VISIBLE)
    assert out == safe_text(unified_diff(CODE, CHILD, "r:0", "r:1"))


# ---- evolve eval, check, run -------------------------------------------------------------

PAYLOAD = EVIL + MARKUP
HOSTILE = f"""import sys
# EVOLVE-BLOCK-START
def schedule(jobs):
    print({PAYLOAD!r})
    print({PAYLOAD!r}, file=sys.stderr)
    raise RuntimeError({PAYLOAD!r})
# EVOLVE-BLOCK-END
"""


@pytest.fixture(scope="module")
def problem(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("problem") / "prob"
    rc, out, err = cli("new", path)
    assert rc == 0, err
    return path


def test_eval_shows_candidate_output_escaped(problem, tmp_path):
    cand = tmp_path / "hostile.py"
    cand.write_text(HOSTILE)
    rc, out, err = cli("eval", problem, cand, "--sandbox", "local")
    assert rc == 1, err  # the candidate failed
    assert_neutral(out, *VISIBLE, MARKUP, "--- stdout", "--- stderr")
    assert_neutral(err)
    # exact in JSON
    rc, out, _ = cli("eval", problem, cand, "--sandbox", "local", "--json")
    assert rc == 1
    assert_neutral(out)
    arts = json.loads(out)["artifacts"]
    assert "\x1b]52;c;cHduZWQ=\x07" in arts["stdout"] and MARKUP in arts["stderr"]


def test_check_and_run_show_a_hostile_seed_escaped(problem, tmp_path):
    import shutil

    prob = tmp_path / "hostile_seed"
    shutil.copytree(problem, prob)
    (prob / "seed.py").write_text(HOSTILE)

    rc, out, err = cli("check", prob, "--sandbox", "local")
    assert rc == 2
    assert_neutral(out, *VISIBLE, MARKUP, "stdout: A\\x1b]52")
    assert_neutral(err, "does not evaluate cleanly")

    runs = tmp_path / "runs"
    with ScriptedLLM() as llm:
        rc, out, err = cli(
            "run", prob, "--sandbox", "local", "--model", "scripted", "--api-base",
            llm.base_url, "--runs-dir", runs, "--iterations", "1", "--no-progress",
        )  # fmt: skip
        assert llm.counters["chat"] == 0
    assert rc == 2  # the seed fails before any LLM call
    assert_neutral(out)
    # the reason quotes the error's last line (str.splitlines also splits at the lone \r)
    assert_neutral(err, "evolve: error:", "seed program failed", "F\\x08G\\x7fH\\u202eI", MARKUP)
    rc, out, _ = cli("archive", "runs", "--runs-dir", runs)
    assert rc == 0
    assert_neutral(out, "F\\x08G\\x7fH", MARKUP)


# ---- what the search recorded (schema 4) ---------------------------------------------------


def test_archive_show_says_how_a_program_was_proposed(search_archive):
    ids, runs = search_archive.ids, search_archive.runs_dir
    rc, out, err = cli("archive", "show", ids["failed"], "--runs-dir", runs)
    assert rc == 0, err
    # the model's rejected reply is shown as text, its escape sequence visible, not sent
    assert_neutral(out, "\\x1b]0;pwned\\x07", "the same program again </textarea><script>")
    assert re.search(r"purpose +│ resample", out) and re.search(r"temperature +│ 1 ", out)
    assert "UCB 0.812 (mean reward 0.300 over 4 calls)" in out
    assert "rejected replies of iteration 1 (1:" in out
    assert "call 1 to model-a, mutation, temperature 0.7: repeated a program" in out
    rc, out, err = cli("archive", "show", ids["repair"], "--runs-dir", runs)
    assert rc == 0, err
    assert f"{ids['failed']}: shown its error and fixed it" in out and "repair of" in out
    assert "stagnation burst on model-b (2 calls left)" in out and "rejected replies" not in out
    rc, out, _ = cli("archive", "show", ids["failed"], "--json", "--runs-dir", runs)
    prop = json.loads(out)["proposal"]
    assert prop["decision"].startswith("UCB") and prop["rejected_calls"][0]["outcome"] == (
        "rejected_duplicate"
    )


def test_archive_runs_counts_calls_rejected_and_repairs(search_archive):
    runs = search_archive.runs_dir
    rc, out, err = cli("archive", "runs", "--json", "--runs-dir", runs)
    assert rc == 0, err
    (run,) = json.loads(out)
    assert (run["calls"], run["rejected"], run["repairs"]) == (5, 1, 1)
    rc, out, _ = cli("archive", "runs", "--wide", "--runs-dir", runs)
    head, _, row = out.splitlines()[:3]
    assert head.split()[-4:] == ["calls", "rejected", "repairs", "data"]
    assert row.split()[-4:] == ["5", "1", "1", "public"]  # created without a data seed
    rc, out, _ = cli("archive", "runs", "--runs-dir", runs)
    assert "rejected" not in out.splitlines()[0]  # only --wide has room for them


def test_show_says_why_a_program_has_no_model():
    from evolve.cli.archive import _shown

    base = dict(run_id="r", problem="p", island=0, status="ok", code="x = 1\n", model=None)
    tuned = ProgramRow(program_id="r:5", iteration=5, kind="tune", parent_id="r:1", **base)
    seed = ProgramRow(program_id="r:0", iteration=0, kind="seed", **base)
    assert _shown(tuned, "model").startswith("none: a tuned child")
    assert _shown(seed, "model") == "none: the problem's initial program"
    assert _shown(seed, "parent_id") == "none" and _shown(tuned, "parent_id") == "r:1"
