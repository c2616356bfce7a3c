"""A program's files as people look at them: what every view asks (the command line's
`archive show`, `diff`, `best --json` and `checkout`, the exports, the web view, the report).

A tree's files come from its own text (evaluators/tree.py); a one-file program is one file,
named as its problem names its entry. A text that looks like a tree but breaks a rule of
one (a path leaving the tree, a file named twice) is shown as the one file it is: a view
never refuses to show what the archive holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from evaluators import tree
from evolve.edits import unified_diff

# A one-file program's name when its problem folder can no longer be read.
FALLBACK_ENTRY = "program.py"


def files_of(code: str | None, entry: str) -> dict[str, str]:
    """path -> text of a program's code ({} when it has none)."""
    if code is None:
        return {}
    try:
        return tree.decode(code, entry)
    except tree.TreeError:
        return {entry: code}


def has_files(code: str | None) -> bool:
    """Whether `code` is a tree, shown file by file (else one text, shown as it is)."""
    if code is None or not tree.is_tree(code):
        return False
    try:
        tree.decode(code, "")
    except tree.TreeError:
        return False
    return True


@dataclass(frozen=True)
class FileDiff:
    """One file that differs between two programs: `change` is changed, added or removed;
    `diff` a unified diff with a/PATH and b/PATH (/dev/null for the side it is missing from)."""

    path: str
    change: str
    diff: str


def file_diffs(old: str | None, new: str | None, entry: str) -> list[FileDiff]:
    """The files of `new` that differ from `old` (in `new`'s order), then those it removed."""
    a, b = files_of(old, entry), files_of(new, entry)
    out = []
    for path, text in b.items():
        if path not in a:
            out.append(FileDiff(path, "added", unified_diff("", text, "/dev/null", f"b/{path}")))
        elif a[path] != text:
            out.append(
                FileDiff(path, "changed", unified_diff(a[path], text, f"a/{path}", f"b/{path}"))
            )
    for path, text in a.items():
        if path not in b:
            out.append(FileDiff(path, "removed", unified_diff(text, "", f"a/{path}", "/dev/null")))
    return out


@lru_cache(maxsize=64)
def entry_name(problem_dir: str) -> str:
    """The entry file a run's problem names (what a one-file program is called), or
    FALLBACK_ENTRY when its folder can no longer be read as a problem."""
    from evolve.problem.load import load_problem
    from evolve.problem.model import ProblemError

    try:
        return load_problem(problem_dir).entry
    except (ProblemError, OSError, ValueError):
        return FALLBACK_ENTRY
