"""Candidate text made inert where it is read by something other than a Python string.

What a candidate wrote (its code, output, artifacts, metric names, errors) reaches a
terminal (evolve/cli/safe_text.py shows each control character as a visible escape),
a model's prompt and the headers of an exported table (here: removed, with any
escape sequence they start, since neither a model nor a spreadsheet should see
half of `ESC [31m`), and the cells of a CSV file (a formula-looking cell is quoted).
"""

from __future__ import annotations

import re

# C0 controls but \t and \n, a \r not ending a line, DEL, C1 controls, every format
# character (Unicode's Cf: the bidi embeddings, overrides, isolates and marks, which reorder
# what is shown, "Trojan Source"; zero-width spaces and joiners, the BOM, soft hyphen,
# invisible operators, tags), the line and paragraph separators (U+2028/9: a line break
# to a viewer, none to Python), and lone surrogates (a surrogate-escaped byte would be
# written back raw, C1 included).
_FORMAT = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f"
    "\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd"
    "\U00013430-\U0001343f\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0001\U000e0020-\U000e007f"
)
UNSAFE = re.compile(f"\r\n|[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{_FORMAT}\ud800-\udfff]")

# A whole escape sequence, introduced by ESC or by its one-character C1 form (ECMA-48):
# CSI parameters and final byte; OSC, DCS, SOS, PM or APC up to their BEL or ST (or up to
# the end of the line, so an unterminated one does not swallow the rest of the text);
# any other ESC with its intermediate and final bytes.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
# Cells a spreadsheet would read as a formula (OWASP, "CSV Injection"): one starting with
# = + - @ (or their full-width forms, which some spreadsheets fold to ASCII), tab or CR,
# after any run of blanks and invisible characters a spreadsheet may trim or skip.
_FORMULA = re.compile(
    f"[\\s\u00a0{_FORMAT}]*[=+\\-@\uff1d\uff0b\uff0d\uff20\ufe62\ufe63\u2212]|[\t\r]"
)


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
    if isinstance(v, str) and _FORMULA.match(v):
        return "'" + v
    return v


def _visible(m: re.Match[str]) -> str:
    s = m.group()
    if s == "\r\n":
        return "\n"
    cp = ord(s)
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}"


def visible(s: object) -> str:
    """`s` with every character of UNSAFE shown as its escape (ESC as `\\x1b`, a bidi
    override as `\\u202e`): what a terminal or a web page shows is what the text holds.
    Newlines and tabs are kept, `\\r\\n` made `\\n`."""
    return UNSAFE.sub(_visible, s if isinstance(s, str) else str(s))
