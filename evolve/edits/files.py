"""Edits to a program of several files: each edit under the path of the file it changes.

Coding models name the file above an edit (a line holding the path, a ```lang path fence
header, a `### path` heading, or the tree's own `# evolve-file: path` header), so a reply is
cut into sections at those lines and each section is applied, by apply.py's one-file rules
(its blocks, its fixed code), to the file it names. A section naming a file that is not an
evolving file of the program (a fixed file, an unknown path) rejects the whole reply with a
reason that goes back to the model; a reply that names no file is matched to the evolving
file its edits fit. A one-file program never comes here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from evaluators.tree import HEADER, MAX_PATH, TreeError, decode, encode
from evolve.edits.apply import NO_CHANGE, EditOutcome, apply_reply, unified_diff
from evolve.edits.blocks import complete_from_seed, split_lines
from evolve.edits.bounds import MAX_EDIT_BLOCKS, text_bytes
from evolve.edits.replies import (
    FENCE_RE,
    SEARCH_RE,
    clean_reply,
    code_candidates,
    fence_tag,
    is_search_replace,
)
from evolve.edits.search_replace import parse_search_replace

# A path a model names: relative parts and a source file's suffix (a bare `math.pi` is code).
_PATH_RE = re.compile(
    r"(?:[\w.\-]+/)*[\w\-][\w.\-]*\."
    r"(?:py|pyi|rs|c|cc|cpp|cxx|h|hh|hpp|cu|go|java|js|ts|jl|scala|kt|swift|rb|sh"
    r"|toml|json|yaml|yml|txt|md|cfg|ini|csv)"
)
_LABELS = ("evolve-file:", "filename:", "file:", "path:")


@dataclass(frozen=True)
class Layout:
    """What an edit of a tree may touch: `files` every tree path in order, `evolving` those
    it may change, `entry` the file the evaluator loads, `fixed` the seed's text of each
    file that never changes."""

    files: tuple[str, ...]
    evolving: tuple[str, ...]
    entry: str
    fixed: Mapping[str, str]


def layout(files: tuple[str, ...], fixed: tuple[str, ...], entry: str, seed: str) -> Layout:
    seed_files = decode(seed, entry)
    return Layout(
        files,
        tuple(f for f in files if f not in fixed),
        entry,
        {f: seed_files[f] for f in fixed},
    )


def named_path(line: str) -> str | None:
    """The file path a line names on its own (`policy/a.py`, `### policy/a.py:`, `**File:
    a.py**`, `# evolve-file: a.py`), or None."""
    s = line.strip()
    if len(s) > MAX_PATH + 20 or not s:
        return None
    s = s.strip("#*`>- \t")
    low = s.lower()
    for label in _LABELS:
        if low.startswith(label):
            s = s[len(label) :].strip("*` \t")
            break
    s = s.rstrip(":").strip("*`'\" \t").removeprefix("./")
    return s if _PATH_RE.fullmatch(s) else None


def _fence_path(tag: str) -> str | None:
    """The path in a fence's header (```python policy/a.py, ```policy/a.py, ```py:a.py)."""
    for token in re.split(r"[\s:=]+", tag):
        path = named_path(token.strip("'\""))
        if path:
            return path
    return None


def _search_next(lines: list[str], i: int) -> bool:
    """Whether the next non-blank line after i opens a SEARCH section."""
    for line in lines[i + 1 : i + 4]:
        if line.strip():
            return bool(SEARCH_RE.match(line))
    return False


def split_by_file(text: str) -> list[tuple[str | None, str]]:
    """The reply cut at the lines naming a file: (path, its section) in order, the text
    before the first such line under None. A path line inside a fence (before a SEARCH
    section, or a tree header) closes the fence for the section before it and opens it
    again for its own, so each section reads as a reply of its own."""
    lines = split_lines(text)
    sections: list[tuple[str | None, list[str]]] = [(None, [])]
    fence: tuple[str, str] | None = None  # (marker, opening line) while inside one
    for i, line in enumerate(lines):
        m = FENCE_RE.match(line)
        if fence is None and m:
            fence = (m.group(1), line)
            path = _fence_path(fence_tag(m))
            if path:
                sections.append((path, [line]))
            else:
                sections[-1][1].append(line)
            continue
        if fence is not None and m and m.group(1)[0] == fence[0][0] and not fence_tag(m):
            if len(m.group(1)) >= len(fence[0]):
                fence = None
                sections[-1][1].append(line)
                continue
        path = named_path(line)
        header = line.startswith(HEADER)
        if path and (fence is None or header or _search_next(lines, i)):
            if fence is not None:
                sections[-1][1].append(fence[0] + "\n")
                sections.append((path, [fence[1] if fence[1].endswith("\n") else fence[1] + "\n"]))
            else:
                sections.append((path, []))
            continue
        sections[-1][1].append(line)
    return [(p, "".join(ls)) for p, ls in sections if p is not None or "".join(ls).strip()]


def _has_edit(section: str) -> bool:
    return is_search_replace(section) or bool(code_candidates(section))


def _copy_of(section: str, text: str) -> bool:
    """Whether a section only repeats `text` (a fixed file shown back unchanged)."""
    if is_search_replace(section):
        return False
    strip = [ln.rstrip() for ln in split_lines(text) if ln.strip()]
    return all(
        [ln.rstrip() for ln in split_lines(c) if ln.strip()] == strip
        for c in code_candidates(section)
    )


def _fail(kind: str, why: str) -> EditOutcome:
    return EditOutcome(False, None, kind, why)


def apply_tree_reply(
    parent: str, reply: str, asked: str, lay: Layout, max_bytes: int | None = None
) -> EditOutcome:
    """A model's reply applied to the tree `parent`, file by file. Never raises."""
    try:
        return _apply_tree(parent, clean_reply(reply), asked, lay, max_bytes)
    except Exception as exc:  # a reply is untrusted input; a bug must not stop a run
        return _fail("none", f"internal error applying the edit: {repr(exc)[:300]}")


def _apply_tree(
    parent: str, reply_text: str, asked: str, lay: Layout, max_bytes: int | None
) -> EditOutcome:
    try:
        files = decode(parent, lay.entry)
    except TreeError as e:
        return _fail("none", f"the parent's files are broken: {e}")
    new, kinds, notes = dict(files), [], []
    unchanged = False  # an edit that changes nothing was seen
    sections = split_by_file(reply_text)
    if not any(p for p, _ in sections):  # no file named: the files the edits fit
        sections = [(None, reply_text)]
    for path, section in sections:
        if not _has_edit(section):
            continue  # prose, under a heading or before the first path
        if path is None:
            out = _unnamed(new, section, asked, lay, max_bytes)
            if isinstance(out, EditOutcome):
                return out
            notes += out
            kinds.append("diff" if is_search_replace(section) else asked)
            continue
        if path not in files:
            return _fail(
                "none",
                f"the reply edits '{path}', which is not a file of this program (its evolving "
                f"files: {', '.join(lay.evolving)}); name the file above each edit",
            )
        if path not in lay.evolving:
            if _copy_of(section, files[path]):
                continue
            return _fail(
                "none",
                f"the reply edits '{path}', a fixed file that no edit may change (evolving "
                f"files: {', '.join(lay.evolving)})",
            )
        out1 = apply_reply(new[path], section, asked, max_bytes)
        if out1.oversized is not None:
            return out1
        if not out1.ok:
            if out1.error == NO_CHANGE:
                unchanged = True
                continue
            return _fail(out1.kind, f"{path}: {out1.error}")
        assert out1.code is not None
        new[path] = out1.code
        kinds.append(out1.kind)
        notes += [f"{path}: {n}" for n in out1.notes]
    if not kinds:
        return _fail(
            "none",
            NO_CHANGE
            if unchanged
            else "no edit found in the reply: expected SEARCH/REPLACE blocks or fenced code "
            "under each file's path",
        )
    return _finish(parent, files, new, kinds, notes, lay, max_bytes)


def _unnamed(
    files: dict[str, str], section: str, asked: str, lay: Layout, max_bytes: int | None
) -> EditOutcome | list[str]:
    """Edits under no path: each SEARCH/REPLACE block goes to the evolving file it applies to;
    code goes to the one evolving file, or to the evolving file it is most like. Updates
    `files`; the notes, or the failure."""
    if len(lay.evolving) == 1:
        only = lay.evolving[0]
        out = apply_reply(files[only], section, asked, max_bytes)
        if not out.ok:
            return out if out.error != NO_CHANGE else []
        files[only] = out.code or files[only]
        return out.notes
    if is_search_replace(section):
        return _route_blocks(files, section, lay, max_bytes)
    fits = []
    for path in lay.evolving:
        out = apply_reply(files[path], section, asked, max_bytes)
        if out.oversized is not None:
            return out
        if out.ok and out.code is not None:
            code = code_candidates(section)[-1]
            fits.append((difflib.SequenceMatcher(None, files[path], code).quick_ratio(), path, out))
    if not fits:
        return _fail(
            asked,
            "the reply names no file and its code fits none of the evolving files "
            f"({', '.join(lay.evolving)}); put each file's code under its path",
        )
    _, path, out = max(fits, key=lambda f: f[0])
    files[path] = out.code or files[path]
    return [f"the reply named no file: its code was matched to {path}", *out.notes]


def _route_blocks(
    files: dict[str, str], section: str, lay: Layout, max_bytes: int | None
) -> EditOutcome | list[str]:
    edits, _ = parse_search_replace(section)
    if len(edits) > MAX_EDIT_BLOCKS:
        return _fail(
            "diff",
            f"the reply holds {len(edits):,} SEARCH/REPLACE blocks; at most {MAX_EDIT_BLOCKS} are applied",
        )
    notes, errors = [], []
    for n, (search, repl) in enumerate(edits, 1):
        block = (
            "<<<<<<< SEARCH\n" + "".join(search) + "=======\n" + "".join(repl) + ">>>>>>> REPLACE\n"
        )
        for path in lay.evolving:
            out = apply_reply(files[path], block, "diff", max_bytes)
            if out.oversized is not None:
                return out
            if out.ok and out.code is not None:
                files[path] = out.code
                notes.append(f"SEARCH/REPLACE block {n} named no file: applied to {path}")
                break
        else:
            errors.append(n)
    if len(errors) == len(edits):
        return _fail(
            "diff",
            "the reply's SEARCH/REPLACE blocks name no file and apply to none of the evolving "
            f"files ({', '.join(lay.evolving)}); write the file's path on the line before each",
        )
    return notes + [
        f"skipped SEARCH/REPLACE block {n}: it applies to no evolving file" for n in errors
    ]


def _finish(
    parent: str,
    files: dict[str, str],
    new: dict[str, str],
    kinds: list[str],
    notes: list[str],
    lay: Layout,
    max_bytes: int | None,
) -> EditOutcome:
    kind = kinds[0] if kinds else "none"
    for path, text in lay.fixed.items():
        if new.get(path) != text:
            return _fail(kind, f"the fixed file '{path}' differs from the seed's")
    try:
        child = encode(new)
    except TreeError as e:
        return _fail(kind, f"the edit breaks the program's files: {e}")
    if max_bytes is not None and (size := text_bytes(child)) > max_bytes:
        return EditOutcome(False, None, kind, "the edited program is too big", oversized=size)
    if child == parent or not kinds:
        return _fail(
            kind,
            NO_CHANGE
            if kinds
            else "no edit found in the reply: expected SEARCH/REPLACE blocks or fenced code under each file's path",
        )
    return EditOutcome(True, child, kind, None, tree_diff(files, new), notes)


def tree_diff(old: Mapping[str, str], new: Mapping[str, str]) -> str:
    """Unified diffs of the files that differ, each under a/PATH and b/PATH."""
    return "".join(
        unified_diff(old.get(p, ""), new.get(p, ""), f"a/{p}", f"b/{p}")
        for p in dict.fromkeys([*old, *new])
        if old.get(p) != new.get(p)
    )


def complete_tree(given: Mapping[str, str], lay: Layout, seed: str) -> str:
    """The program a user gives as files (a baseline folder, `evolve eval DIR`), as the
    problem's tree: no file missing (a fixed one left out is the seed's) and none extra,
    each evolving file completed from the seed's (a file of block bodies only, as a one-file
    baseline may be), each fixed file the seed's. ValueError: one line naming the file."""
    seed_files = decode(seed, lay.entry)
    extra = [p for p in given if p not in seed_files]
    if extra:
        raise ValueError(f"{extra[0]}: not a file of this program ({', '.join(lay.files)})")
    out = {}
    for path in lay.files:
        if path in lay.fixed:
            text = given.get(path, lay.fixed[path])
            if text != lay.fixed[path]:
                raise ValueError(f"{path}: a fixed file, and it differs from the seed's")
        elif path not in given:
            raise ValueError(f"{path}: missing (the program's files: {', '.join(lay.files)})")
        else:
            try:
                text = complete_from_seed(given[path], seed_files[path])
            except ValueError as e:
                raise ValueError(f"{path}: {e}") from None
        out[path] = text
    try:
        return encode(out)
    except TreeError as e:
        raise ValueError(str(e)) from None
