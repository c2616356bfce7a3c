"""Candidate text made inert where it is read by something other than a Python string.

What a candidate wrote (its code, output, artifacts, metric names, errors) reaches a
terminal (evolve/cli/safe_text.py shows each control character as a visible escape),
a model's prompt and the headers of an exported table (here: removed, with any
escape sequence they start, since neither a model nor a spreadsheet should see
half of `ESC [31m`), and the cells of a CSV file (a formula-looking cell is quoted).
"""

from __future__ import annotations

import re

# C0 controls but \t and \n, a \r not ending a line, DEL, C1 controls, the bidi
# overrides and isolates (they reorder what is shown: "Trojan Source"), and lone
# surrogates (a surrogate-escaped byte would be written back raw, C1 included).
UNSAFE = re.compile("\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

# A whole escape sequence, introduced by ESC or by its one-character C1 form (ECMA-48):
# CSI parameters and final byte; OSC, DCS, SOS, PM or APC up to their BEL or ST (or up to
# the end of the line, so an unterminated one does not swallow the rest of the text);
# any other ESC with its intermediate and final bytes.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
# Cells a spreadsheet would read as a formula (OWASP, "CSV Injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _keep_newline(m: re.Match[str]) -> str:
    return "\n" if m.group() == "\r\n" else ""


def strip_controls(s: object) -> str:
    """`s` without control characters or the escape sequences they start; newlines and
    tabs kept, `\\r\\n` made `\\n`."""
    text = s if isinstance(s, str) else str(s)
    return UNSAFE.sub(_keep_newline, _SEQUENCE.sub("", text))


def inert_cell(v: object) -> object:
    """A CSV cell a spreadsheet shows as text: one starting like a formula gets a leading
    single quote; anything but a string is returned as it is."""
    if isinstance(v, str) and v.startswith(_FORMULA_START):
        return "'" + v
    return v
