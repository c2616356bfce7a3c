"""EVOLVE-BLOCK markers: where an edit may change a program, and where it must not.

Evolvable regions sit between comment lines containing EVOLVE-BLOCK-START and
EVOLVE-BLOCK-END. Everything else, marker lines included, is fixed API: the
evaluator calls it, so no edit may change it. A file without markers is
evolvable as a whole.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

START = "EVOLVE-BLOCK-START"
END = "EVOLVE-BLOCK-END"
_START_RE = re.compile(r"^\s*#.*EVOLVE-BLOCK-START")
_END_RE = re.compile(r"^\s*#.*EVOLVE-BLOCK-END")
_DEF_RE = re.compile(r"^([ \t]*)(?:async[ \t]+)?(?:def|class)[ \t]+([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Block:
    """One evolvable region. Line numbers are 0-based indices of the two marker lines."""

    index: int
    start_line: int
    end_line: int
    body: str  # the text strictly between the marker lines, line endings kept


def split_lines(code: str) -> list[str]:
    """Lines with their "\\n" kept; unlike str.splitlines, splits on "\\n" only (so
    form feeds and other exotic separators inside code stay where they are)."""
    parts = code.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def is_marker(line: str) -> bool:
    """True for an EVOLVE-BLOCK-START or EVOLVE-BLOCK-END comment line."""
    return bool(_START_RE.match(line) or _END_RE.match(line))


def find_blocks(code: str) -> list[Block]:
    """All blocks in order; ValueError on nested or unbalanced markers, because a
    program whose fixed/evolvable split is unclear cannot be edited safely."""
    lines = split_lines(code)
    blocks: list[Block] = []
    open_at: int | None = None
    for i, line in enumerate(lines):
        if _START_RE.match(line):
            if open_at is not None:
                raise ValueError(
                    f"nested {START} at line {i + 1} (block opened at line {open_at + 1})"
                )
            open_at = i
        elif _END_RE.match(line):
            if open_at is None:
                raise ValueError(f"{END} at line {i + 1} has no matching {START}")
            blocks.append(Block(len(blocks), open_at, i, "".join(lines[open_at + 1 : i])))
            open_at = None
    if open_at is not None:
        raise ValueError(f"{START} at line {open_at + 1} is never closed by {END}")
    return blocks


def _min_indent(text: str) -> str | None:
    indents = [ln[: len(ln) - len(ln.lstrip())] for ln in split_lines(text) if ln.strip()]
    return min(indents, key=len) if indents else None


def _fit_indent(body: str, target: str) -> str:
    """Indent body to target when a model dropped (part of) the indentation. Only ever
    adds: a body already indented at least as deep is left as the model wrote it."""
    current = _min_indent(body)
    if current is None or len(current) >= len(target):
        return body
    if target.startswith(current):
        extra = target[len(current) :]
    else:  # tabs vs spaces: pad by columns
        extra = " " * max(0, len(target.expandtabs(8)) - len(current.expandtabs(8)))
    return "".join(extra + ln if ln.strip() else ln for ln in split_lines(body))


def replace_block(code: str, index: int, new_body: str) -> str:
    """code with block `index`'s body replaced by new_body, re-indented to the block's
    indentation (the old body's, or the marker line's when the old body is blank)."""
    blocks = find_blocks(code)
    if not 0 <= index < len(blocks):
        raise IndexError(f"no EVOLVE-BLOCK #{index} (the program has {len(blocks)})")
    block = blocks[index]
    lines = split_lines(code)
    target = _min_indent(block.body)
    if target is None:
        marker = lines[block.start_line]
        target = marker[: len(marker) - len(marker.lstrip())]
    body = _fit_indent(new_body, target)
    if body and not body.endswith("\n"):
        body += "\n"
    return "".join(lines[: block.start_line + 1]) + body + "".join(lines[block.end_line :])


def _part_ranges(n_lines: int, blocks: list[Block]) -> list[tuple[int, int]]:
    """Half-open line ranges of the fixed parts (marker lines included): len(blocks)+1."""
    ranges, prev = [], 0
    for b in blocks:
        ranges.append((prev, b.start_line + 1))
        prev = b.end_line
    ranges.append((prev, n_lines))
    return ranges


def fixed_parts(code: str) -> list[str]:
    """The fixed text around the blocks, marker lines included; [] without markers."""
    blocks = find_blocks(code)
    if not blocks:
        return []
    lines = split_lines(code)
    return ["".join(lines[a:b]) for a, b in _part_ranges(len(lines), blocks)]


def complete_from_seed(code: str, seed: str) -> str:
    """A file that holds only EVOLVE-BLOCKs (a baseline written as what differs from the
    seed) becomes the seed with its blocks' bodies; any other program is returned as is.
    Only comments, blank lines and one docstring may stand outside its blocks."""
    blocks = find_blocks(code)
    outside = "".join(fixed_parts(code))
    if not blocks or not _only_docs(outside):
        return code
    wanted = find_blocks(seed)
    if len(wanted) != len(blocks):
        raise ValueError(
            f"the file holds {len(blocks)} EVOLVE-BLOCK(s) and no other code, "
            f"but the seed has {len(wanted)}: cannot complete it from the seed"
        )
    for block in reversed(blocks):
        seed = replace_block(seed, block.index, block.body)
    return seed


def _only_docs(text: str) -> bool:
    try:
        body = ast.parse(text).body
    except SyntaxError:
        return False
    return not body or (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )


def evolvable_text(code: str) -> str:
    """What a model may change: the block bodies joined (the whole file without markers)."""
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
        for a, b in _part_ranges(len(lines), blocks)
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
    """Length of the longest prefix of seq found as a run anywhere in hay."""
    best = 0
    for k in range(len(hay)):
        n = 0
        while n < len(seq) and k + n < len(hay) and hay[k + n] == seq[n]:
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
