"""SEARCH/REPLACE edits: parse them tolerantly, apply them only inside EVOLVE-BLOCKs.

Matching goes from strict to loose (exact lines, then trailing whitespace
ignored, then stripped lines re-indented) because small models copy code
imperfectly; the span an edit really changes must still lie inside one block.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from evolve.edits.blocks import Block, find_blocks, longest_prefix, split_lines
from evolve.edits.bounds import MAX_EDIT_BLOCKS, text_bytes
from evolve.edits.replies import FENCE_RE, SEARCH_RE


class EditError(Exception):
    """The reply holds an edit, but it cannot be applied."""


class Oversized(EditError):
    """The program grew past the size cap while the edits were applied: no more work on it."""

    def __init__(self, size: int):
        super().__init__(f"the edited program is {size:,} bytes")
        self.size = size


_DIVIDER_RE = re.compile(r"^[ \t]*={3,}[ \t]*$")
_REPLACE_RE = re.compile(r"^[ \t]*>{3,}[ \t]*(?:(?:REPLACE|UPDATED)\b.*)?$", re.I)


def _section(lines: list[str], open_ended: bool) -> list[str]:
    """Drop fence lines a model wrapped a section in; an unterminated last section
    ends at the next fence (what follows is prose). Indices, not slices: a section of
    thousands of fence lines must not be copied once per line."""
    a, b = 0, len(lines)
    while a < b and FENCE_RE.match(lines[a]):
        a += 1
    if open_ended:
        b = next((i for i in range(a, b) if FENCE_RE.match(lines[i])), b)
    while b > a and (not lines[b - 1].strip() or FENCE_RE.match(lines[b - 1])):
        b -= 1
    return lines[a:b]


def parse_search_replace(text: str) -> tuple[list[tuple[list[str], list[str]]], list[str]]:
    """(search lines, replace lines) pairs, plus the problems forgiven on the way."""
    edits: list[tuple[list[str], list[str]]] = []
    problems: list[str] = []
    search: list[str] = []
    repl: list[str] = []
    state = "out"
    for line in split_lines(text):
        s = line.rstrip("\n")
        if SEARCH_RE.match(s):
            if state == "search":
                problems.append("a SEARCH section had no ======= divider")
            elif state == "replace":  # REPLACE marker missing between two blocks
                edits.append((search, _section(repl, True)))
            state, search = "search", []
        elif state == "search" and _DIVIDER_RE.match(s):
            state, repl = "replace", []
        elif state == "search" and _REPLACE_RE.match(s):
            problems.append("a SEARCH section had no ======= divider")
            state = "out"
        elif state == "replace" and _REPLACE_RE.match(s):
            edits.append((search, _section(repl, False)))
            state = "out"
        elif state != "out":
            (search if state == "search" else repl).append(line)
    if state == "replace":
        edits.append((search, _section(repl, True)))
    elif state == "search":
        problems.append("a SEARCH section had no ======= divider")
    return [(_section(s, False), r) for s, r in edits], problems


def _indent(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _shift(lines: list[str], old: str, new: str) -> list[str]:
    """Re-indent lines written relative to indentation `old` to `new`."""
    if old == new:
        return lines
    out = []
    for ln in lines:
        ind = _indent(ln)
        if not ln.strip():
            out.append(ln)
        elif ind.startswith(old):
            out.append(new + ln[len(old) :])
        else:  # less indented than the anchor: best effort in columns
            cols = len(ind.expandtabs(4)) + len(new.expandtabs(4)) - len(old.expandtabs(4))
            out.append(" " * max(0, cols) + ln.lstrip())
    return out


def _matches(lines: list[str], search: list[str]) -> Iterator[tuple[int, int, str | None]]:
    """(start, end, anchor indent) of every match, tier by tier: exact lines, then
    ignoring trailing whitespace, then stripped lines ignoring blank lines."""
    n = len(search)
    keys: tuple[Callable[[str], str], ...] = (lambda s: s.rstrip("\n"), str.rstrip)
    for key in keys:
        hay, want = [key(ln) for ln in lines], [key(s) for s in search]
        for k in range(len(hay) - n + 1):
            if hay[k] == want[0] and hay[k : k + n] == want:
                yield k, k + n, None
    nonblank = [(i, ln.strip()) for i, ln in enumerate(lines) if ln.strip()]
    texts, want = [t for _, t in nonblank], [s.strip() for s in search if s.strip()]
    for k in range(len(nonblank) - len(want) + 1):
        if texts[k] == want[0] and texts[k : k + len(want)] == want:
            yield nonblank[k][0], nonblank[k + len(want) - 1][0] + 1, _indent(lines[nonblank[k][0]])


def _where_changed(old: list[str], new: list[str], start: int) -> tuple[int, int]:
    """Parent line range an edit really changes, once unchanged context is trimmed."""
    p = 0
    while p < min(len(old), len(new)) and old[p].rstrip() == new[p].rstrip():
        p += 1
    s = 0
    while s < min(len(old), len(new)) - p and old[-1 - s].rstrip() == new[-1 - s].rstrip():
        s += 1
    return start + p, start + len(old) - s


def _inside(blocks: list[Block], a: int, b: int) -> bool:
    """Does the changed range [a, b) (a == b: an insertion before line a) lie in a body?"""
    if not blocks:
        return True
    if a == b:
        return any(blk.start_line < a <= blk.end_line for blk in blocks)
    return any(blk.start_line < a and b <= blk.end_line for blk in blocks)


def _violation(code: str, blocks: list[Block], a: int, b: int) -> str:
    """Say which fixed line the changed range [a, b) touches first."""
    lines = split_lines(code)
    for i in range(a, b):
        if not _inside(blocks, i, i + 1):
            return f"the edit changes fixed code outside the EVOLVE-BLOCKs at line {i + 1}: {lines[i].strip()!r}"
    return f"the edit inserts code outside the EVOLVE-BLOCKs at line {a + 1}"


def _apply_one(code: str, search: list[str], replace: list[str]) -> str:
    lines = split_lines(code)
    lead = next((i for i, s in enumerate(search) if s.strip()), len(search))
    search = search[lead:]
    if not search:
        raise EditError("empty SEARCH section: nothing to match")
    replace = [r if r.endswith("\n") else r + "\n" for r in replace]
    r_first = next((r for r in replace if r.strip()), None)
    if r_first is not None and not _indent(r_first) and _indent(search[0]):
        replace = _shift(replace, "", _indent(search[0]))  # the model dropped the indentation
    violation = None
    blocks = find_blocks(code)  # once: a SEARCH line may match thousands of times
    for a, b, anchor in _matches(lines, search):
        new = replace if anchor is None else _shift(replace, _indent(search[0]), anchor)
        ca, cb = _where_changed(lines[a:b], new, a)
        if _inside(blocks, ca, cb):
            return "".join(lines[:a] + new + lines[b:])
        violation = violation or (ca, cb)
    if violation:
        raise EditError(_violation(code, blocks, *violation))
    want = [s.strip() for s in search if s.strip()]
    k = longest_prefix([ln.strip() for ln in lines if ln.strip()], want)
    first = want[min(k, len(want) - 1)]
    raise EditError(
        f"SEARCH text not found in the program; first line not found: {first.strip()!r}"
    )


def apply_search_replace(
    parent: str, text: str, max_bytes: int | None = None
) -> tuple[str, list[str]]:
    """Apply every SEARCH/REPLACE block of text in turn: (new code, forgiven problems).
    Blocks that fail are skipped and noted; EditError only when none applies, or when
    the reply holds more than MAX_EDIT_BLOCKS; Oversized as soon as the program grows
    past max_bytes (each block's work is bounded by the program it is applied to)."""
    edits, problems = parse_search_replace(text)
    if not edits:
        raise EditError(f"malformed SEARCH/REPLACE block: {problems[0]}")
    if len(edits) > MAX_EDIT_BLOCKS:
        raise EditError(
            f"the reply holds {len(edits):,} SEARCH/REPLACE blocks; at most"
            f" {MAX_EDIT_BLOCKS} are applied"
        )
    code, errors = parent, []
    for n, (search, replace) in enumerate(edits, 1):
        try:
            code = _apply_one(code, search, replace)
            if max_bytes is not None and (size := text_bytes(code)) > max_bytes:
                raise Oversized(size)
        except Oversized:
            raise
        except EditError as exc:
            errors.append(
                f"SEARCH/REPLACE block {n} of {len(edits)}: {exc}" if len(edits) > 1 else str(exc)
            )
    if len(errors) == len(edits):
        raise EditError(errors[0] if len(errors) == 1 else "; ".join(errors))
    return code, problems + [f"skipped {e}" for e in errors]
