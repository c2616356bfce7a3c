"""Bounds on the controller's work with candidate text, so that no reply can stop a run.

A reply is untrusted input that the controller parses, applies, tidies, hashes, tunes and
diffs. Each of those is bounded here by the text alone, never by a clock: a bound that
depended on time (or on how deep the caller's stack happens to be) would let a resumed
run decide differently about the same stored reply. So:

- a reply longer than `reply_limit` is not parsed at all (the LLM client caps what it
  accepts too, but a stored reply of an older run, or a raised client cap, reaches here);
- a program is parsed by `parse_python` only: any failure of `ast.parse` (SyntaxError,
  the parser's MemoryError on too-complex input, RecursionError on deep trees) is "does
  not parse", and a tree deeper than MAX_AST_DEPTH is refused before any recursive walker
  (ast.unparse) sees it. Refused is the same answer whatever the caller's stack: a tree
  that shallow always builds, one deeper either fails to build or is refused;
- SEARCH/REPLACE edits are at most MAX_EDIT_BLOCKS per reply, and a program growing past
  the problem's size cap while edits are applied stops there (evolve/problem/size_cap.py).
"""

from __future__ import annotations

import ast

REPLY_BYTES = 1 << 20  # 1 MiB: the least any problem's replies may be before parsing
MAX_AST_DEPTH = 60  # the deepest syntax tree read (real programs: 20-35); up to ~5 frames a level
MAX_EDIT_BLOCKS = 100  # SEARCH/REPLACE blocks in one reply
PARSE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError)


def reply_limit(max_code_bytes: int) -> int:
    """The longest reply parsed for a problem whose programs may be `max_code_bytes`: a whole
    program with prose around it, or SEARCH/REPLACE blocks of its size, fit several times."""
    return max(REPLY_BYTES, 4 * max_code_bytes)


def text_bytes(text: str) -> int:
    """Size of text as stored (lone surrogates count as the 3 bytes they take)."""
    return len(text.encode("utf-8", "surrogatepass"))


def tree_depth(tree: ast.AST, limit: int = MAX_AST_DEPTH) -> int:
    """The depth of a syntax tree, without recursion; counting stops past `limit`."""
    deepest, stack = 0, [(tree, 1)]
    while stack:
        node, d = stack.pop()
        if d > deepest:
            deepest = d
            if d > limit:
                break
        stack.extend((child, d + 1) for child in ast.iter_child_nodes(node))
    return deepest


def parse_python(code: str) -> ast.Module | None:
    """The syntax tree of code, or None when it does not parse or is deeper than
    MAX_AST_DEPTH (then nothing may walk it: a recursive walker would overflow)."""
    try:
        tree = ast.parse(code)
    except PARSE_ERRORS:
        return None
    return tree if tree_depth(tree) <= MAX_AST_DEPTH else None
