"""A program a user names on disk (`evolve eval`, a problem's baselines), as the one text a
run carries.

A one-file problem's program is a file, written whole or as its EVOLVE-BLOCKs only (a
baseline), completed with the seed's fixed code as ever. A program of several files is a
folder laid out like the seed's tree (all of a program's files, or a baseline holding only
the files it changes), or a file holding the tree's one text (`archive best
--json`'s code): each evolving file given is completed from the seed's file the same way,
every file not given is the seed's, and a fixed file may appear only unchanged.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from evaluators.tree import TreeError, check_path, decode, is_tree
from evolve.edits.blocks import complete_from_seed
from evolve.edits.files import complete_tree, layout
from evolve.problem.model import Problem

SKIPPED_DIRS = frozenset({"__pycache__"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")


class ProgramInputError(ValueError):
    """The program on disk does not fit the problem: one line naming the file and the rule."""


def program_code(problem: Problem, path: Path) -> str:
    """The code of the program at `path` (a file, or for a program of several files also a
    folder), completed from the seed; ProgramInputError says what does not fit."""
    if not problem.files:
        if not path.is_file():
            raise ProgramInputError(f"{path}: no such program file")
        try:
            return complete_from_seed(path.read_text(), problem.seed_code)
        except ValueError as e:
            raise ProgramInputError(f"{path}: {e}") from None
    if path.is_dir():
        given = _folder(path)
    elif path.is_file():
        text = _text(path)
        if not is_tree(text):
            raise ProgramInputError(
                f"{path}: this problem's program is {len(problem.files)} files "
                f"({', '.join(problem.files)}); give a folder holding them, or a tree's text"
            )
        try:
            given = decode(text, problem.entry)
        except TreeError as e:
            raise ProgramInputError(f"{path}: {e}") from None
    else:
        raise ProgramInputError(f"{path}: no such program file or folder")
    return _completed(problem, path, given)


def program_digest(path: Path) -> bytes:
    """The bytes that identify a program on disk (a file's, or a folder's names and files')."""
    if not path.is_dir():
        return path.read_bytes()
    h = hashlib.sha256()
    for rel, text in sorted(_folder(path).items()):
        h.update(rel.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest().encode()


def _completed(problem: Problem, where: Path, given: dict[str, str]) -> str:
    """The problem's tree from the files given (edits/files.complete_tree's rules), an
    evolving file not given being the seed's: a baseline folder holds what it changes."""
    seed = decode(problem.seed_code, problem.entry)
    lay = layout(problem.files, problem.fixed_files, problem.entry, problem.seed_code)
    unchanged = {p: seed[p] for p in lay.evolving if p not in given}
    try:
        return complete_tree({**given, **unchanged}, lay, problem.seed_code)
    except ValueError as e:
        raise ProgramInputError(f"{where}: {e}") from None


def _folder(folder: Path) -> dict[str, str]:
    """Every file under `folder` (relative POSIX path -> text); links are refused."""
    out = {}
    for full in sorted(folder.rglob("*")):
        rel = full.relative_to(folder)
        if set(rel.parts) & SKIPPED_DIRS or full.suffix in SKIPPED_SUFFIXES:
            continue
        if full.is_symlink():
            raise ProgramInputError(f"{full}: a symbolic link; a program's files must be files")
        if full.is_file():
            try:
                key = check_path(rel.as_posix())
            except TreeError as e:
                raise ProgramInputError(f"{full}: {e}") from None
            out[key] = _text(full)
    if not out:
        raise ProgramInputError(f"{folder}: no files in the program's folder")
    return out


def _text(path: Path) -> str:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProgramInputError(f"{path}: not UTF-8 text (byte {e.start})") from None
