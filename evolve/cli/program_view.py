"""A program's files on the command line: `archive show` prints a tree file by file, `archive
diff` diffs it file by file, `--json` carries a `files` map, and `archive checkout ID DIR`
writes the files to a new folder (evolve/program_files.py says what the files are).

Paths and texts are the candidate's: on a terminal they go through safe_rich/safe_syntax;
a diff to a file or pipe stays byte-exact, so it applies as a patch.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.syntax import Syntax

from evaluators import tree
from evolve.answers import program_entry
from evolve.archive import ArchiveReader, ProgramRow
from evolve.cli.safe_text import for_stream, safe_rich, safe_syntax
from evolve.edits import unified_diff
from evolve.program_files import FALLBACK_ENTRY, file_diffs, files_of, has_files


def print_files(out: Console, code: str) -> None:
    """A tree's files, each under its path, highlighted by its file name."""
    files = files_of(code, FALLBACK_ENTRY)
    out.print(safe_rich(f"{len(files)} files: " + ", ".join(files), style="bold"))
    for path, text in files.items():
        out.print(safe_rich(f"── {path}", style="bold"))
        lexer = Syntax.guess_lexer(path, text)
        out.print(safe_syntax(text, lexer, line_numbers=True))


def write_diff(reader: ArchiveReader, old: ProgramRow, new: ProgramRow) -> None:
    """The diff of `old` -> `new`: one unified diff for one-file programs, labelled with
    their ids (`new` need not be a child of `old`), one per file that differs for trees, an
    added or removed file against /dev/null."""
    if not has_files(old.code) and not has_files(new.code):
        text = unified_diff(old.code or "", new.code or "", old.program_id, new.program_id)
    else:
        entry = program_entry(reader, new if not has_files(new.code) else old)
        text = "".join(d.diff for d in file_diffs(old.code, new.code, entry))
    sys.stdout.write(for_stream(text, sys.stdout))


def checkout(reader: ArchiveReader, p: ProgramRow, folder: Path) -> list[str]:
    """Write `p`'s files into `folder` (new, or empty) at their relative paths; the paths.

    The files are written into a fresh folder beside it and renamed into place at the end,
    so a checkout stopped midway leaves no half tree; a path that would leave the folder
    (tree.check_path) writes nothing at all."""
    from evolve.cli.common import UsageError

    if p.code is None:
        raise UsageError(f"{p.program_id}: has no code to check out (its status: {p.status})")
    files = files_of(p.code, program_entry(reader, p))
    try:
        for path in files:
            tree.check_path(path)
    except tree.TreeError as e:
        raise UsageError(f"{p.program_id}: {e}") from None
    where = f"checkout {folder}"
    if folder.is_symlink():
        raise UsageError(f"{where}: is a symbolic link (checkout writes only into a real folder)")
    if folder.exists() and not folder.is_dir():
        raise UsageError(f"{where}: exists and is not a folder")
    if folder.is_dir() and any(folder.iterdir()):
        raise UsageError(f"{where}: not empty (checkout writes only into a new or empty folder)")
    parent = folder.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=parent))
    except OSError as e:
        raise UsageError(f"{where}: cannot create it ({e.strerror or e})") from None
    try:
        for path, text in files.items():
            target = tmp / path
            if not target.resolve().is_relative_to(tmp.resolve()):  # a symlink made on the way
                raise UsageError(f"{p.program_id}: file path {path!r} leaves the folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "x", encoding="utf-8", newline="") as f:
                f.write(text)
        tmp.chmod(0o755 & ~_umask())
        _move(tmp, folder)
    except OSError as e:
        shutil.rmtree(tmp, ignore_errors=True)
        raise UsageError(f"{where}: cannot write it ({e.strerror or e})") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return list(files)


def _move(tmp: Path, folder: Path) -> None:
    """`tmp` renamed to `folder` in one step (onto a missing or an empty folder); where the
    empty folder cannot be replaced (the current directory, a mount point), its entries are
    renamed into it one by one."""
    try:
        os.rename(tmp, folder)
    except OSError:
        if not folder.is_dir() or any(folder.iterdir()):
            raise
        for entry in tmp.iterdir():
            os.rename(entry, folder / entry.name)
        tmp.rmdir()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
