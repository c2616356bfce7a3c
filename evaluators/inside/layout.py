"""Lay a program's tree of files out in a folder: each file at its path, nothing outside it.

The host has checked every path (evaluators/tree.py `check_path`); this is the writer's own
guard, for the folders a candidate may have touched: each step goes through a descriptor
opened with O_NOFOLLOW, so a link in the folder (planted by a candidate at run time) is
never followed, and a file is only ever created (O_EXCL), never opened where it lies.
Used by the local sandbox's fallback, the Docker sandbox's host (its /in folder) and the
agent inside the container, and the harness reads a tree's paths here: stdlib only.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

HEADER = "# evolve-file: "  # evaluators/tree.py's, which this folder cannot import
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class LayoutError(ValueError):
    """A file of the tree cannot be written where it belongs: one line naming it and why."""


def tree_paths(code: str) -> list[str]:
    """The paths a tree's headers name, in order; [] for a one-file program. Exact: no line
    of a file may start with the header (tree.encode refuses it)."""
    if not code.startswith(HEADER):
        return []
    return [ln[len(HEADER) :].rstrip("\r") for ln in code.split("\n") if ln.startswith(HEADER)]


def tree_root(program: str, entry: str) -> str:
    """The folder a tree is laid out in, from its entry's path there and the entry's relative
    path (a one-file program's: the folder it lies in)."""
    program = os.path.normpath(program)
    suffix = "/" + entry.strip("/")
    if program.endswith(suffix):
        return program[: -len(suffix)] or "/"
    return os.path.dirname(program)


def _parts(path: str) -> list[str]:
    parts = path.split("/")
    if not path or path.startswith("/") or any(p in ("", ".", "..") or "\0" in p for p in parts):
        raise LayoutError(f"file path {path!r}: not a plain relative path inside the tree")
    return parts


def write_tree(root: str, files: Mapping[str, str | bytes], mode: int = 0o644) -> None:
    """Write each file of `files` (relative path -> text) under the folder `root`, making the
    folders between; LayoutError where a path would leave `root` or meets a link or a file
    already there."""
    top = os.open(root, _DIR)
    try:
        for path, text in files.items():
            _write_one(top, path, text.encode("utf-8") if isinstance(text, str) else text, mode)
    finally:
        os.close(top)


def _write_one(top: int, path: str, data: bytes, mode: int) -> None:
    parts = _parts(path)
    fd = os.dup(top)
    try:
        for part in parts[:-1]:
            try:
                os.mkdir(part, 0o755, dir_fd=fd)
                made = True
            except FileExistsError:
                made = False
            try:
                sub = os.open(part, _DIR, dir_fd=fd)
            except OSError as e:  # ELOOP: a link; ENOTDIR: a file
                raise LayoutError(
                    f"{path}: {part!r} is not a folder of the tree ({e.strerror})"
                ) from None
            os.close(fd)
            fd = sub
            if made:
                os.fchmod(fd, 0o755)  # whatever the umask: another uid may read the tree
        try:
            out = os.open(parts[-1], _NEW, mode, dir_fd=fd)
        except OSError as e:  # EEXIST (a link or a file already there), ELOOP
            raise LayoutError(f"{path}: cannot be created in the tree ({e.strerror})") from None
        try:
            os.fchmod(out, mode)
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
    finally:
        os.close(fd)
