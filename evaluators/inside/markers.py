"""EVOLVE-BLOCK markers in a program file: where the blocks are, a block's body replaced, and a
baseline written as its blocks alone completed from the problem's seed.

Evolvable regions sit between comment lines containing EVOLVE-BLOCK-START and
EVOLVE-BLOCK-END, in the program's language's comment syntax (`# ...` in Python and
shell, `// ...` in Rust, C++, Go, JavaScript, `-- ...` in SQL and Lua: any leader of
languages.ALL_COMMENTS is read, so a seed of any suffix works). Everything else, marker
lines included, is fixed API. The grammar
of the problem contract, shared by the loop (evolve/edits/blocks.py builds its edit
checks on it) and the problem kit (`kit.main` completes a baseline before it runs it).

Stdlib only: it lies with the kit, below everything that imports it.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from evaluators.inside.languages import ALL_COMMENTS

START = "EVOLVE-BLOCK-START"
END = "EVOLVE-BLOCK-END"
_LEADER = "(?:" + "|".join(re.escape(c) for c in ALL_COMMENTS) + ")"
_START_RE = re.compile(rf"^\s*{_LEADER}.*EVOLVE-BLOCK-START")
_END_RE = re.compile(rf"^\s*{_LEADER}.*EVOLVE-BLOCK-END")
_COMMENT_RE = re.compile(rf"^\s*{_LEADER}")


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


def part_ranges(n_lines: int, blocks: list[Block]) -> list[tuple[int, int]]:
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
    return ["".join(lines[a:b]) for a, b in part_ranges(len(lines), blocks)]


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
    except SyntaxError:  # another language: comment lines alone
        return all(_COMMENT_RE.match(ln) for ln in split_lines(text) if ln.strip())
    except Exception:  # too deep (RecursionError) or large to parse, a NUL byte: code, not docs
        return False
    return not body or (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and isinstance(body[0].value.value, str)
    )
