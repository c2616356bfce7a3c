"""Content-addressed storage of programs whose code is a tree of files.

A tree (evaluators/tree.py) is stored as its files, each text once per archive under the
SHA-256 of its UTF-8 bytes (`blobs`), and per program the list of its (path, blob)
(`program_files`): a child that changes one file of five adds that file's text, never the
four it kept. Its `programs.code` is NULL and `code_files` says how many files make it.
A one-file program, and any text that would not come back byte for byte from its files,
keeps its code in `code` as before.

`load` is the one place that reassembles a tree: every query of the Archive and of the
ArchiveReader that reads code builds its ProgramRows through it, so no caller ever sees
how a tree is stored.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Sequence

from evaluators import tree
from evolve.archive.rows import ProgramRow, row_to_program

_CHUNK = 500  # program ids per query (well under SQLite's limit on parameters)


def digest(text: str) -> str:
    """The blob key of a file's text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def assemble(files: Iterable[tuple[str, str]]) -> str:
    """The one text of a tree's files (path, text), in order."""
    return "".join(f"{tree.HEADER}{path}\n{text}" for path, text in files)


def split(code: str | None) -> list[tuple[str, str]] | None:
    """The files (path, text) of `code` when it is a tree they reassemble exactly; None for a
    one-file program or a text that is no well-formed tree (stored whole, as it is)."""
    if code is None or not tree.is_tree(code):
        return None
    try:
        files = list(tree.decode(code, "").items())
    except tree.TreeError:
        return None
    return files if assemble(files) == code else None


def store(db: sqlite3.Connection, program_id: str, code: str | None) -> tuple[str | None, int]:
    """Store the files of a tree `code` (inside the caller's transaction); what the program's
    row then holds: (code, code_files), (None, n) for a tree, (code, 0) otherwise."""
    files = split(code)
    if files is None:
        return code, 0
    keys = [digest(text) for _, text in files]
    db.executemany(
        "INSERT OR IGNORE INTO blobs (sha256, text) VALUES (?, ?)",
        [(k, text) for k, (_, text) in zip(keys, files, strict=True)],
    )
    db.executemany(
        "INSERT INTO program_files (program_id, position, path, sha256) VALUES (?, ?, ?, ?)",
        [
            (program_id, i, path, k)
            for i, ((path, _), k) in enumerate(zip(files, keys, strict=True))
        ],
    )
    return None, len(files)


def load(db: sqlite3.Connection, rows: Sequence[sqlite3.Row | dict]) -> list[ProgramRow]:
    """ProgramRows of `rows` (of `programs`), each tree's code reassembled from its files.

    A row without `code_files` (a listing, or an archive older than schema 7) is as stored.
    A tree whose files are missing is a damaged archive: sqlite3.DatabaseError, which the
    callers report as one line naming the archive."""
    dicts = [dict(r) for r in rows]
    wanted = {d["program_id"]: n for d in dicts if (n := d.pop("code_files", 0) or 0)}
    found = _files(db, list(wanted)) if wanted else {}
    for d in dicts:
        n = wanted.get(d["program_id"])
        if n is None:
            continue
        files = found.get(d["program_id"], [])
        if len(files) != n:
            raise sqlite3.DatabaseError(
                f"program {d['program_id']}: {n} files stored for its tree, {len(files)} found"
            )
        d["code"] = assemble(files)
    return [row_to_program(d) for d in dicts]


def _files(db: sqlite3.Connection, program_ids: list[str]) -> dict[str, list[tuple[str, str]]]:
    out: dict[str, list[tuple[str, str]]] = {}
    for i in range(0, len(program_ids), _CHUNK):
        chunk = program_ids[i : i + _CHUNK]
        rows = db.execute(
            "SELECT f.program_id, f.path, b.text FROM program_files f"
            " JOIN blobs b ON b.sha256 = f.sha256"
            f" WHERE f.program_id IN ({','.join('?' * len(chunk))})"
            " ORDER BY f.program_id, f.position",
            chunk,
        ).fetchall()
        for program_id, path, text in rows:
            out.setdefault(program_id, []).append((path, text))
    return out


def move_whole_trees(db: sqlite3.Connection) -> None:
    """Migration to schema 7: the trees an older archive kept whole in `code` are stored by
    their files (inside the migration's transaction)."""
    rows = db.execute(
        "SELECT program_id, code FROM programs WHERE substr(code, 1, ?) = ?",
        (len(tree.HEADER), tree.HEADER),
    ).fetchall()
    for program_id, code in rows:
        kept, n = store(db, program_id, code)
        if n:
            db.execute(
                "UPDATE programs SET code = ?, code_files = ? WHERE program_id = ?",
                (kept, n, program_id),
            )
