"""A program as a tree of files, carried as one text.

A one-file program is its file's text, exactly as it always was. A program of several
files is one text in which each file starts with a header line `# evolve-file: PATH`,
in the problem's order. Everything that handles code as an opaque text (the archive's
rows, clone hashes, cascades, resume) handles a tree without knowing it; what must see
files (the sandboxes, edits, prompts, views) splits it here. Stdlib only: the sandboxes
import it.
"""

from __future__ import annotations

from collections.abc import Mapping

HEADER = "# evolve-file: "
MAX_PATH = 200  # characters of one relative path
MAX_FILES = 64
# What the harness keeps beside the candidate at the root of its scratch folder.
RESERVED = frozenset({"REQ.json", "OUTPUTS.json", "RESULT.json", "DATA_SEED"})


class TreeError(ValueError):
    """A tree or a path that breaks a rule: one line naming the file and the rule."""


def check_path(path: object) -> str:
    """`path` if it is a plain relative POSIX path that stays inside the tree, else TreeError."""
    if not isinstance(path, str) or not path:
        raise TreeError(f"file path {path!r}: expected a non-empty relative path")
    if len(path) > MAX_PATH:
        raise TreeError(f"file path {path[:40]!r}...: longer than {MAX_PATH} characters")
    if path.startswith("/") or "\\" in path or ":" in path.split("/")[0]:
        raise TreeError(f"file path {path!r}: must be relative (no leading '/', no '\\')")
    if any(not c.isprintable() for c in path):
        raise TreeError(f"file path {path!r}: control characters are not allowed")
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise TreeError(f"file path {path!r}: '..', '.' and empty parts are not allowed")
    if path in RESERVED:
        raise TreeError(f"file path {path!r}: the name is reserved for the harness")
    return path


def is_tree(code: str) -> bool:
    """Whether `code` is a tree of several files (else one file's text)."""
    return code.startswith(HEADER)


def encode(files: Mapping[str, str]) -> str:
    """The one text of `files` (path -> text, in order): a lone file is its own text.

    Each file's text ends with a newline in the tree (one is added where missing); no line
    of a file may itself start with the header."""
    if not files:
        raise TreeError("a program needs at least one file")
    if len(files) > MAX_FILES:
        raise TreeError(f"a program may have at most {MAX_FILES} files, got {len(files)}")
    if len(files) == 1:
        return next(iter(files.values()))
    parts = []
    for path, text in files.items():
        check_path(path)
        for n, line in enumerate(text.split("\n"), 1):
            if line.startswith(HEADER):
                raise TreeError(
                    f"{path}: line {n} starts with '{HEADER.strip()}', which only a tree's headers may"
                )
        if text and not text.endswith("\n"):
            text += "\n"
        parts.append(f"{HEADER}{path}\n{text}")
    return "".join(parts)


def decode(code: str, entry: str) -> dict[str, str]:
    """The files of `code` (path -> text, in order); a one-file program is `{entry: code}`."""
    if not is_tree(code):
        return {entry: code}
    files: dict[str, str] = {}
    path = ""
    lines: list[str] = []
    for line in code.splitlines(keepends=True):
        if line.startswith(HEADER):
            if path:
                files[path] = "".join(lines)
            path, lines = check_path(line[len(HEADER) :].rstrip("\r\n")), []
            if path in files:
                raise TreeError(f"{path}: the tree names this file twice")
        else:
            lines.append(line)
    files[path] = "".join(lines)
    if len(files) > MAX_FILES:
        raise TreeError(f"a program may have at most {MAX_FILES} files, got {len(files)}")
    return files
