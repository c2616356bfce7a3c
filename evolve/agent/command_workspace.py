"""The folder an agent's command works in: laid out from the parent, read back after.

Laid out: every file of the parent (a multi-file program's fixed files too, read-only by
rule) and TASK.md. Read back: only regular files, never through a link, each at most the
problem's size cap, as UTF-8; the candidate is the evolving files as the command left
them. The workspace is untrusted: what breaks a rule makes a rejected candidate with its
reason (a link anywhere, a fixed file or TASK.md edited, an evolving file gone, a file
made outside the evolving set but in scratch places, a fixed line of an EVOLVE-BLOCK
program edited), never a read outside the folder."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from evaluators import tree
from evolve.edits.blocks import fixed_unchanged
from evolve.problem.load import Problem

TASK_FILE = "TASK.md"
# Where a command may leave files of its own: dot folders and files at the top (an agent's
# settings and caches: .claude, .codex, .aider*), Python's caches, and scratch/.
SCRATCH_DIR = "scratch"


@dataclass(frozen=True)
class Harvest:
    """What the command left: `code` the candidate (None: rejected or unchanged, `reason`
    says why), `changed` whether any evolving file differs from the parent."""

    code: str | None
    reason: str
    changed: bool
    unchanged: bool = False  # no rule broken, no evolving file changed


def parent_files(problem: Problem, code: str) -> dict[str, str]:
    """path -> text of the parent (a one-file program: under its entry name)."""
    if problem.files:
        try:
            return tree.decode(code, problem.entry)
        except tree.TreeError:
            pass
    return {problem.entry: code}


def lay_out(root: Path, files: dict[str, str], task: str) -> None:
    """Write the parent's files and TASK.md into the empty folder `root`."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / TASK_FILE).write_text(task, encoding="utf-8")


def _scratch(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0].startswith(".") or parts[0] == SCRATCH_DIR or "__pycache__" in parts


def _read(root: Path, rel: str, limit: int) -> str:
    """A regular file's text, opened without following a link; ValueError why not."""
    fd = os.open(root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{rel} is not a regular file")
        data = os.read(fd, limit + 1)
    finally:
        os.close(fd)
    if len(data) > limit:
        raise ValueError(f"{rel} is over the size cap ({limit:,} bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ValueError(f"{rel} is not UTF-8 text") from None


def _walk(root: Path) -> tuple[list[str], str | None]:
    """The relative paths of the files under root, or the first rule broken there."""
    found = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in [*dirnames, *filenames]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                return [], f"the workspace holds a symlink, {ascii(rel[:120])}"
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                return [], f"the workspace holds a special file, {ascii(rel[:120])}"
            if stat.S_ISREG(mode):
                found.append(rel)
    return found, None


def harvest(root: Path, problem: Problem, parent: dict[str, str], task: str) -> Harvest:
    """The candidate the workspace holds now, checked against the rules above."""
    try:
        return _harvest(root, problem, parent, task)
    except OSError as e:  # a file gone mid-read, a folder made unreadable
        return Harvest(None, f"the workspace could not be read ({e.strerror})", False)
    except ValueError as e:
        return Harvest(None, str(e), False)


def _harvest(root: Path, problem: Problem, parent: dict[str, str], task: str) -> Harvest:
    paths, broken = _walk(root)
    if broken is not None:
        return Harvest(None, broken, False)
    fixed = set(problem.fixed_files)
    for rel in paths:
        if rel not in parent and rel != TASK_FILE and not _scratch(rel):
            return Harvest(None, f"a file outside the evolving files was made: {ascii(rel)}", False)
    limit = problem.max_code_bytes
    if _read(root, TASK_FILE, len(task.encode()) + 1) != task:
        return Harvest(None, f"{TASK_FILE} was edited (it is fixed)", False)
    child: dict[str, str] = {}
    for rel, before in parent.items():
        if not (root / rel).exists():
            return Harvest(None, f"{rel} was deleted", False)
        text = _read(root, rel, limit)
        if rel in fixed and text != before:
            return Harvest(None, f"{rel} was edited: it is a fixed file", False)
        if text != before and (why := fixed_unchanged(before, text)) is not None:
            return Harvest(None, f"{rel}: an edit outside the EVOLVE-BLOCK regions: {why}", False)
        child[rel] = text
    if child == parent:
        return Harvest(None, "the command changed no evolving file", False, unchanged=True)
    code = tree.encode(child) if problem.files else child[problem.entry]
    return Harvest(code, "", True)
