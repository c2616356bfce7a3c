"""A native problem's program of several files (problem.toml's [program]): read and checked.

The seed tree is read once, here, at load time: every path a plain relative path that stays
in its folder (no `..`, no absolute path, no symlink on the way), every file UTF-8 text
within the size cap, the entry one of its files. It becomes one text (evaluators/tree.py),
so the loop carries it as it carries a one-file program.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from evaluators.inside.languages import by_suffix
from evaluators.tree import TreeError, check_path, encode
from evolve.edits.blocks import find_blocks
from evolve.problem.model import ProblemError
from evolve.settings.native import ProgramTable

SKIPPED_DIRS = frozenset({"__pycache__"})  # what a seed folder may hold that is no code
SKIPPED_SUFFIXES = (".pyc", ".pyo")


@dataclass(frozen=True)
class SeedTree:
    """The seed program's tree: `files` every tree path in order (evolving, then fixed, as
    declared; a folder's in sorted order), `fixed` those that never evolve, `code` the one
    text, `base` the folder the paths are relative to."""

    files: tuple[str, ...]
    fixed: tuple[str, ...]
    code: str
    base: Path


def read_tree(
    root: Path,
    shown: Path,
    program: ProgramTable,
    entry: str,
    max_bytes: int,
    initial: str | None = None,
) -> SeedTree:
    """The seed tree [program] declares, or ProblemError: one line naming problem.toml's key
    or the file. `initial` (--initial-program) is another folder holding the same paths."""
    where = f"{shown / 'problem.toml'}: [program]"
    if program.files and program.folder is not None:
        raise ProblemError(f"{where}: give 'files' or 'folder', not both")
    if program.folder is not None:
        folder = _path(program.folder, f"{where} folder")
        base, base_shown = root / folder, shown / folder
        if _link_on_way(root, folder) or not base.is_dir():
            raise ProblemError(f"{where} folder: '{folder}' is not a folder of {shown}")
        paths = _walk(base, base_shown)
        for f in program.fixed:
            if _path(f, f"{where} fixed") not in paths:
                raise ProblemError(f"{where} fixed: '{f}' is not a file under {base_shown}")
    elif program.files:
        base, base_shown = root, shown
        paths = [_path(f, f"{where} files") for f in program.files]
        for f in program.fixed:
            if _path(f, f"{where} fixed") in paths:
                raise ProblemError(f"{where} fixed: '{f}' is listed in 'files' too")
        paths += list(program.fixed)
    else:
        raise ProblemError(f"{where}: name the evolving files with 'files' or a 'folder'")
    _no_duplicates(program.files, f"{where} files")
    _no_duplicates(program.fixed, f"{where} fixed")
    if "evaluator.py" in paths:
        raise ProblemError(f"{where}: the program may not have a file named evaluator.py")
    fixed = tuple(program.fixed)
    if len(fixed) == len(paths):
        raise ProblemError(f"{where} fixed: every file is fixed; nothing would evolve")
    if entry not in paths:
        raise ProblemError(
            f"{shown / 'problem.toml'}: [problem] entry: '{entry}' is not a file of the "
            f"program ({', '.join(paths)})"
        )
    if initial is not None:  # the same paths from another folder
        base, base_shown = Path(initial).expanduser().resolve(), Path(initial)
        if not base.is_dir():
            raise ProblemError(
                f"--initial-program {initial}: this problem's program is several files; "
                "give a folder holding them"
            )
    files = {p: _read(base, base_shown, p, max_bytes) for p in paths}
    try:
        code = encode(files)
    except TreeError as e:
        raise ProblemError(f"{base_shown}: {e}") from None
    if (size := len(code.encode("utf-8"))) > max_bytes:
        raise ProblemError(
            f"{base_shown}: the program's files are {size:,} bytes together; this problem "
            f"allows at most {max_bytes:,} ([evaluation] max_code_kb)"
        )
    return SeedTree(tuple(paths), fixed, code, base)


def _path(path: str, where: str) -> str:
    try:
        return check_path(path)
    except TreeError as e:
        raise ProblemError(f"{where}: {e}") from None


def _no_duplicates(names: list[str], where: str) -> None:
    seen: set[str] = set()
    for p in names:
        if p in seen:
            raise ProblemError(f"{where}: '{p}' is named twice")
        seen.add(p)


def _link_on_way(base: Path, path: str) -> bool:
    """Whether a part of `path` under `base` is a symbolic link."""
    at = base
    for part in path.split("/"):
        at = at / part
        if at.is_symlink():
            return True
    return False


def _walk(base: Path, shown: Path) -> list[str]:
    """Every file under `base` (sorted, relative POSIX paths); a link is refused."""
    out = []
    for path in sorted(base.rglob("*")):
        rel = path.relative_to(base)
        if any(p in SKIPPED_DIRS for p in rel.parts) or path.suffix in SKIPPED_SUFFIXES:
            continue
        if path.is_symlink():
            raise ProblemError(f"{shown / rel}: a symbolic link; a program's files must be files")
        if path.is_file():
            out.append(_path(rel.as_posix(), str(shown)))
    if not out:
        raise ProblemError(f"{shown}: no files in the program's folder")
    return out


def _read(base: Path, shown: Path, path: str, max_bytes: int) -> str:
    """One file's text, checked: a file (no link on the way), UTF-8, within the cap, its
    EVOLVE-BLOCK markers balanced and, for Python, parsing."""
    where = shown / path
    if _link_on_way(base, path):
        raise ProblemError(f"{where}: a symbolic link on the way; a program's files must be files")
    full = base / path
    if not full.is_file():
        raise ProblemError(f"{where}: no such file (named by problem.toml's [program])")
    data = full.read_bytes()
    if len(data) > max_bytes:
        raise ProblemError(
            f"{where}: {len(data):,} bytes; this problem allows at most {max_bytes:,} "
            "([evaluation] max_code_kb)"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProblemError(f"{where}: not UTF-8 text (byte {e.start})") from None
    try:
        find_blocks(text)
    except ValueError as e:
        raise ProblemError(f"{where}: {e}") from None
    if by_suffix(full.suffix).is_python:
        try:
            ast.parse(text)
        except SyntaxError as e:
            raise ProblemError(f"{where}:{e.lineno}: does not parse: {e.msg}") from None
    return text
