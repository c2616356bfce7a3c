"""FunSearch's prompt: earlier versions of the evolving functions renamed `_v0`, `_v1`, ...,
and the model asked for the next one, which is renamed back before it is applied.

Small models continue a pattern better than they follow instructions: shown two versions
ordered by score, they write a third that differs from both.
"""

from __future__ import annotations

import ast
import re

from evolve.edits.blocks import find_blocks
from evolve.edits.bounds import parse_python


def block_functions(code: str) -> list[str]:
    """The names of the functions defined at the top of code's EVOLVE-BLOCKs."""
    try:
        blocks = find_blocks(code)
    except ValueError:
        return []
    names: list[str] = []
    for b in blocks:
        tree = parse_python(b.body)
        if tree is None:
            continue
        names += [
            n.name for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        ]
    return list(dict.fromkeys(names))


def _pattern(names: list[str], suffix: str) -> re.Pattern[str]:
    alts = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(rf"(?<![\w.])({alts}){suffix}(?!\w)")


def versioned(text: str, names: list[str], k: int) -> str:
    """text with each of names (a definition or a call, not an attribute) as NAME_vK."""
    if not names:
        return text
    return _pattern(names, "").sub(lambda m: f"{m.group(1)}_v{k}", text)


def unversioned(text: str, names: list[str]) -> str:
    """text with every NAME_vK of names back to NAME (the reply's new version, and any
    call it makes to an earlier one, become the program's own function)."""
    if not names:
        return text
    return _pattern(names, r"_v\d+").sub(lambda m: m.group(1), text)
