"""EVOLVE-BLOCK markers: where an edit may change a program, and where it must not.

Evolvable regions sit between comment lines containing EVOLVE-BLOCK-START and
EVOLVE-BLOCK-END. Everything else, marker lines included, is fixed API: the
evaluator calls it, so no edit may change it. A file without markers is
evolvable as a whole.

The markers' grammar (finding the blocks, replacing a body, completing a baseline
from the seed) lies in evaluators/inside/markers.py, where the problem kit uses it
too; it is re-exported here. This module adds what the loop checks of an edit: the
fixed code unchanged, no fixed name shadowed.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from evaluators.inside.markers import END as END
from evaluators.inside.markers import START as START
from evaluators.inside.markers import Block as Block
from evaluators.inside.markers import complete_from_seed as complete_from_seed
from evaluators.inside.markers import (
    find_blocks,
    fixed_parts,
    is_marker,
    part_ranges,
    split_lines,
)
from evaluators.inside.markers import replace_block as replace_block
from evaluators.tree import TreeError, decode, encode, is_tree

_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)")


def evolvable_text(code: str, fixed: Collection[str] = ()) -> str:
    """What a model may change: the block bodies joined (the whole file without markers).
    Of a program of several files, each evolving file's, under its path's header (`fixed`:
    the tree's files that never change, left out)."""
    if is_tree(code):
        try:
            files = decode(code, "")
        except TreeError:
            return code
        kept = {p: evolvable_text(t) for p, t in files.items() if p not in fixed}
        return encode(kept) if kept else ""
    blocks = find_blocks(code)
    return "\n".join(b.body for b in blocks) if blocks else code


# A fixed line as compared: (0-based line index, text without trailing whitespace).
_Line = tuple[int, str]


def _fixed_lines(code: str, blocks: list[Block]) -> list[list[_Line]]:
    """Per fixed part, its non-blank, non-marker lines (blank lines and trailing
    whitespace are formatting, not API)."""
    lines = split_lines(code)
    return [
        [
            (i, lines[i].rstrip())
            for i in range(a, b)
            if lines[i].strip() and not is_marker(lines[i])
        ]
        for a, b in part_ranges(len(lines), blocks)
    ]


def _changed(line: _Line, got: str | None = None) -> ValueError:
    msg = f"fixed code outside the EVOLVE-BLOCKs changed at line {line[0] + 1}: {line[1].strip()!r}"
    return ValueError(msg + (f" became {got.strip()!r}" if got is not None else " is missing"))


def _compare(expected: list[_Line], got: list[_Line]) -> None:
    for k, line in enumerate(expected):
        if k >= len(got) or got[k][1] != line[1]:
            raise _changed(line, got[k][1] if k < len(got) else None)
    if len(got) > len(expected):
        extra = got[len(expected)]
        raise ValueError(
            f"line added to the fixed code outside the EVOLVE-BLOCKs: {extra[1].strip()!r}"
        )


def _find_seq(hay: list[_Line], lo: int, hi: int, seq: list[_Line]) -> int:
    """First k >= lo with hay[k:k+len(seq)] == seq by text, ending by hi; else -1."""
    texts, hay_t = [t for _, t in seq], [t for _, t in hay[:hi]]
    if not texts:
        return lo if lo <= hi else -1
    for k in range(lo, hi - len(seq) + 1):
        if hay_t[k] == texts[0] and hay_t[k : k + len(texts)] == texts:
            return k
    return -1


def longest_prefix(hay: list[str], seq: list[str]) -> int:
    """Length of the longest prefix of seq found as a run anywhere in hay: one
    Knuth-Morris-Pratt pass, linear (trying every start is quadratic on a program of
    repeated lines, which a candidate may well be)."""
    if not seq:
        return 0
    fail = [0] * len(seq)  # fail[i]: the longest proper border of seq[: i + 1]
    k = 0
    for i in range(1, len(seq)):
        while k and seq[i] != seq[k]:
            k = fail[k - 1]
        if seq[i] == seq[k]:
            k += 1
        fail[i] = k
    best = n = 0
    for item in hay:
        while n and (n == len(seq) or item != seq[n]):
            n = fail[n - 1]
        if item == seq[n]:
            n += 1
        best = max(best, n)
    return best


def _not_found(hay: list[_Line], lo: int, hi: int, seq: list[_Line]) -> ValueError:
    """Name the first line of seq after its longest prefix that does occur."""
    k = longest_prefix([t for _, t in hay[lo:hi]], [t for _, t in seq])
    return _changed(seq[min(k, len(seq) - 1)])


def _strip_blank_edges(text: str) -> str:
    lines = split_lines(text)
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "".join(lines)


def _bodies_by_sequence(parts: list[list[_Line]], child: str) -> list[str]:
    """Locate the parent's fixed parts, in order, in a child without markers; what
    lies between them are the child's block bodies."""
    lines = split_lines(child)
    hay = [(i, ln.rstrip()) for i, ln in enumerate(lines) if ln.strip()]
    head, tail, middle = parts[0], parts[-1], parts[1:-1]
    _compare(head, hay[: len(head)])
    pos, bounds = len(head), []
    prev_end = hay[len(head) - 1][0] + 1 if head else 0
    tail_at = len(hay) - len(tail)
    for seq in middle:
        k = _find_seq(hay, pos, tail_at, seq) if seq else pos
        if k < 0:
            raise _not_found(hay, pos, tail_at, seq)
        start = hay[k][0] if seq else (hay[pos][0] if pos < len(hay) else len(lines))
        bounds.append((prev_end, start))
        pos = k + len(seq)
        prev_end = hay[pos - 1][0] + 1 if seq else start
    if tail_at < pos or [t for _, t in hay[tail_at:]] != [t for _, t in tail]:
        if _find_seq(hay, pos, len(hay), tail) >= 0:
            raise ValueError("code added after the fixed code at the end of the program")
        raise _not_found(hay, pos, len(hay), tail)
    bounds.append((prev_end, hay[tail_at][0] if tail else len(lines)))
    return [_strip_blank_edges("".join(lines[a:b])) for a, b in bounds]


def extract_bodies(parent: str, child: str) -> list[str]:
    """The child's text for each of the parent's blocks, taken by the child's own
    markers, or, when it has none, by locating the parent's fixed lines in it.
    ValueError naming the first fixed line the child changed. [] if parent has no blocks."""
    pblocks = find_blocks(parent)
    if not pblocks:
        return []
    parts = _fixed_lines(parent, pblocks)
    cblocks = find_blocks(child)
    if not cblocks:
        return _bodies_by_sequence(parts, child)
    if len(cblocks) != len(pblocks):
        raise ValueError(
            f"the program has {len(pblocks)} EVOLVE-BLOCKs but the new code has {len(cblocks)}"
        )
    for expected, got in zip(parts, _fixed_lines(child, cblocks), strict=True):
        _compare(expected, got)
    return [b.body for b in cblocks]


def fixed_unchanged(parent: str, child: str) -> str | None:
    """None when every fixed line of parent is unchanged in child (ignoring trailing
    whitespace and blank lines), else a one-line reason naming the first changed line."""
    try:
        extract_bodies(parent, child)
    except ValueError as exc:
        return str(exc)
    return None


def fixed_def_names(code: str) -> dict[str, str]:
    """Names defined by def/class lines in the fixed code -> their indentation."""
    names: dict[str, str] = {}
    for part in fixed_parts(code):
        for ln in split_lines(part):
            m = _DEF_RE.match(ln)
            if m:
                names.setdefault(m.group(2), m.group(1))
    return names


def shadowed_names(code: str) -> set[str]:
    """Fixed def/class names that a block redefines at the same indentation: a way to
    change fixed API (the later definition wins) without touching a fixed line."""
    fixed = fixed_def_names(code)
    found = set()
    for block in find_blocks(code):
        for ln in split_lines(block.body):
            m = _DEF_RE.match(ln)
            if m and fixed.get(m.group(2)) == m.group(1):
                found.add(m.group(2))
    return found
