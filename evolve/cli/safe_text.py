"""Candidate text made harmless for the operator's terminal.

What a candidate wrote (its code, stdout/stderr, artifacts, metric names, error
messages) must not drive the terminal: an ESC or C1 byte starts an escape
sequence (window title, OSC 52 clipboard write, cursor moves, screen clear),
and `\\r` or backspace overwrite what was printed. `safe_text` shows every such
character as a visible escape (ESC as `\\x1b`) and keeps newlines and tabs.
rich's own `strip_control_codes`/`escape_control_codes` cover only BEL, BS,
VT, FF and CR, not ESC or C1, so they are not enough here.

rich also reads `[...]` as markup (`[link=...]` writes an OSC 8 hyperlink) and
`:name:` as emoji in plain strings; `safe_rich` gives a Text, which rich prints
literally. Byte-exact output (JSON, code or a diff written to a file or pipe)
does not go through here, see `for_stream`.
"""

from __future__ import annotations

from typing import TextIO

from rich.syntax import Syntax
from rich.text import Text

from evolve.inert import visible


def safe_text(s: object) -> str:
    """`s` as text a terminal only displays: control and invisible format characters
    (bidi overrides among them) become visible escapes."""
    return visible(s)


def safe_rich(s: object, style: str = "") -> Text:
    """For rich (table cells, titles, console.print): neutralised, and no markup or emoji."""
    return Text(safe_text(s), style=style)


def safe_syntax(code: str, lexer: str = "python", **kw) -> Syntax:
    """Highlighted code for the terminal; escape characters in it shown, not sent."""
    return Syntax(safe_text(code), lexer, **kw)


def for_stream(s: str, stream: TextIO) -> str:
    """`s` unchanged for a file or a pipe (byte-exact, e.g. a diff to apply), neutralised
    when `stream` is a terminal."""
    isatty = getattr(stream, "isatty", None)
    return safe_text(s) if isatty is not None and isatty() else s
