"""How a prompt shows a program of several files: each file under its path, the fixed ones
marked read-only, and, where the context window cannot hold them all, some as signatures.

The model answers in the same shape (a path line above each edit: evolve/edits/files.py),
so the prompt shows the files as it expects them back. What a call is about (the files
its parent's edit changed, or that its feedback names) stays in full the longest.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from evaluators.inside.languages import by_suffix
from evaluators.tree import TreeError, decode, encode, is_tree
from evolve.edits.blocks import split_lines
from evolve.problem.load import Problem

SIGNATURES = "signatures only: the context window cannot hold every file in full"
_PY_SIG = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s|^(?:import\s|from\s\S+\s+import\s)")
_OTHER_SIG = re.compile(
    r"^(?:pub\s+)?(?:fn|struct|enum|trait|impl|class|template|typedef)\b|^\S.*\)\s*\{?\s*$"
)
_DIFF_PATH = re.compile(r"^\+\+\+ b/(\S+)", re.M)


def files_view(code: str, problem: Problem) -> str:
    """The program's files as a prompt shows them: `### PATH` and its fenced text, a fixed
    file marked read-only, a file cut to its signatures said so. A one-file text (an
    inspiration's evolving code when one file evolves) is shown under that file's path."""
    try:
        files = decode(code, problem.entry) if is_tree(code) else {_lone(problem): code}
    except TreeError:
        files = {_lone(problem): code}
    parts = []
    for path, text in files.items():
        notes = ["fixed: read-only, shown for reference"] if path in problem.fixed_files else []
        if SIGNATURES in text.split("\n", 1)[0]:
            notes.append("signatures only")
        label = f"{path} ({'; '.join(notes)})" if notes else path
        fence = by_suffix(PurePosixPath(path).suffix).fence
        parts.append(f"### {label}\n```{fence}\n{text.strip()}\n```")
    return "\n\n".join(parts)


def _lone(problem: Problem) -> str:
    evolving = problem.evolving_files
    return evolving[0] if len(evolving) == 1 else problem.entry


def signatures(path: str, text: str) -> str:
    """A file cut to its def/class lines (and imports), with a first line saying so."""
    lang = by_suffix(PurePosixPath(path).suffix)
    sig = _PY_SIG if lang.is_python else _OTHER_SIG
    kept = [ln.rstrip() for ln in split_lines(text) if sig.match(ln)]
    note = f"{lang.comment} {SIGNATURES}"
    return "\n".join([note, *kept]) + "\n"


def about(diff: str, artifacts: dict, problem: Problem) -> tuple[str, ...]:
    """The evolving files a call on this program is about: those its edit changed and those
    its feedback names, in the tree's order; else the first evolving file."""
    named = set(_DIFF_PATH.findall(diff or ""))
    text = "\n".join(str(v) for v in artifacts.values())
    named |= {p for p in problem.evolving_files if p in text}
    return tuple(p for p in problem.evolving_files if p in named) or problem.evolving_files[:1]


def cut_to_signatures(code: str, keep: tuple[str, ...], problem: Problem) -> str:
    """The tree with every file not in `keep` cut to its signatures."""
    try:
        files = decode(code, problem.entry)
    except TreeError:
        return code
    if not is_tree(code):
        return code
    return encode({p: t if p in keep else signatures(p, t) for p, t in files.items()})


def per_file(code: str, fn) -> str:  # type: ignore[no-untyped-def]
    """`fn` applied to each file of a tree (to the text of a one-file program)."""
    if not is_tree(code):
        return fn(code)
    try:
        files = decode(code, "")
    except TreeError:
        return code
    return encode({p: fn(t) for p, t in files.items()})
