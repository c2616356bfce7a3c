"""Turn an LLM reply into a candidate program: parse, apply, diff, dedup hash.

Models, small local ones especially, are sloppy about formats, so parsing is
forgiving: marker lengths, fences or none, prose around the code, lost
indentation, the wrong format. Safety is not: no accepted candidate changes the
fixed code outside the EVOLVE-BLOCKs (checked once more on every result).
"""

from __future__ import annotations

import ast
import difflib
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from evaluators.inside.languages import PYTHON, Language, by_suffix
from evaluators.tree import TreeError, decode, is_tree
from evolve.edits.blocks import (
    extract_bodies,
    find_blocks,
    fixed_def_names,
    fixed_parts,
    fixed_unchanged,
    is_marker,
    replace_block,
    shadowed_names,
    split_lines,
)
from evolve.edits.bounds import parse_python, text_bytes
from evolve.edits.replies import clean_reply, code_candidates, has_markers, is_search_replace
from evolve.edits.search_replace import EditError, Oversized, apply_search_replace
from evolve.edits.tidy import tidy

FORMATS = ("diff", "block", "full")
NO_CHANGE = "the edit does not change the program"
SIMILAR_CHARS = 20_000


@dataclass
class EditOutcome:
    """What became of one reply. On failure kind names the format whose error is
    reported ("none" when the reply held no recognizable edit at all)."""

    ok: bool
    code: str | None
    kind: str  # "diff" | "block" | "full" | "none"
    error: str | None
    diff: str = ""  # unified diff parent -> child; "" on failure
    notes: list[str] = field(default_factory=list)  # forgiven problems, e.g. a skipped SEARCH
    oversized: int | None = None  # the edited program's bytes, when over max_bytes


class _NoContent(Exception):
    """The reply holds nothing of this format; try the next one."""


def _looks_whole(parent: str, code: str) -> bool:
    """Does code look like the whole program rather than one block's body? It does if
    it defines a fixed function/class, or holds at least half of the fixed lines."""
    for name in fixed_def_names(parent):
        if re.search(rf"^[ \t]*(?:async\s+)?(?:def|class)\s+{re.escape(name)}\b", code, re.M):
            return True
    fixed = {
        s
        for part in fixed_parts(parent)
        for s in (ln.strip() for ln in split_lines(part))
        if len(s) >= 4 and not s.startswith("#")
    }
    hits = len(fixed & {ln.strip() for ln in split_lines(code)})
    return hits >= 1 and 2 * hits >= len(fixed)


def _pick(parent: str, cands: list[str]) -> str:
    """The one sensible code block: with markers > whole program > other; among
    equals the last one that is not a short snippet (e.g. a usage example)."""

    def score(c: str) -> int:
        return 2 if has_markers(c) else int(bool(find_blocks(parent)) and _looks_whole(parent, c))

    best = max(score(c) for c in cands)
    tied = [c for c in cands if score(c) == best]
    longest = max(len(c.strip()) for c in tied)
    return [c for c in tied if 2 * len(c.strip()) >= longest][-1]


# ---------------------------------------------------------------- block / full


def _fill(parent: str, bodies: list[str]) -> str:
    for i, body in enumerate(bodies):
        parent = replace_block(parent, i, body)
    return parent


def _fill_one(parent: str, body: str, notes: list[str]) -> str:
    """One new body for a program with possibly several blocks: the most similar."""
    blocks = find_blocks(parent)
    if len(blocks) == 1:
        return replace_block(parent, 0, body)
    ratio = [_similarity(b.body, body) for b in blocks]
    j = ratio.index(max(ratio))
    notes.append(f"the reply's code was matched to EVOLVE-BLOCK {j} by similarity")
    return replace_block(parent, j, body)


def _similarity(a: str, b: str) -> float:
    """difflib's ratio, or past SIMILAR_CHARS its linear upper bound (the exact one is
    quadratic in the worst case: minutes for a big repetitive body)."""
    sm = difflib.SequenceMatcher(None, a, b)
    return sm.ratio() if len(a) + len(b) <= SIMILAR_CHARS else sm.quick_ratio()


def _without_markers(code: str) -> str:
    return "".join(ln for ln in split_lines(code) if not is_marker(ln))


def _lead(fixed: list[str], texts: list[str]) -> int:
    """How many leading texts are fixed lines, in order (a model may skip some)."""
    k, pos = 0, 0
    while k < len(texts) and texts[k] in fixed[pos:]:
        pos += fixed[pos:].index(texts[k]) + 1
        k += 1
    return k


def _trim_context(parent: str, code: str) -> tuple[int, str] | None:
    """A body that comes with the fixed lines around its block (say the enclosing
    def line): (block index, body without them), for the block with most such lines."""
    lines = split_lines(code)
    nb = [i for i, ln in enumerate(lines) if ln.strip()]
    texts = [lines[i].strip() for i in nb]
    parts = [
        [ln.strip() for ln in split_lines(p) if ln.strip() and not is_marker(ln)]
        for p in fixed_parts(parent)
    ]
    best = (0, 0, 0, 0)  # (lines trimmed, block, lead, trail)
    for j in range(len(parts) - 1):
        lead = _lead(parts[j], texts)
        trail = _lead(parts[j + 1][::-1], texts[lead:][::-1])
        if lead + trail < len(texts) and lead + trail > best[0]:
            best = (lead + trail, j, lead, trail)
    if not best[0]:
        return None
    _, j, lead, trail = best
    start = nb[lead - 1] + 1 if lead else 0
    end = nb[len(nb) - trail] if trail else len(lines)
    return j, "".join(lines[start:end])


def _apply_program(parent: str, text: str, notes: list[str], as_block: bool) -> str:
    """The "full" or (as_block) "block" reading: the picked code spliced into the
    parent, whose fixed code always wins over the reply's copy of it."""
    cands = code_candidates(text)
    if not cands:
        raise _NoContent
    code = _pick(parent, cands)
    pblocks = find_blocks(parent)
    if not pblocks:
        return code
    try:
        cblocks = find_blocks(code)
    except ValueError:
        cblocks = []
    if len(cblocks) == len(pblocks):
        return _fill(parent, [b.body for b in cblocks])
    if as_block and len(cblocks) == 1:
        return _fill_one(parent, cblocks[0].body, notes)
    bare = _without_markers(code)
    whole = _looks_whole(parent, bare)
    if not whole and not as_block:
        raise _NoContent  # a fragment: the "block" reading will take it
    try:
        return _fill(parent, extract_bodies(parent, bare))
    except ValueError as exc:
        if not as_block:
            raise EditError(str(exc)) from None
        reason = str(exc)
    trimmed = _trim_context(parent, bare)
    if trimmed and not _looks_whole(parent, trimmed[1]):
        return replace_block(parent, trimmed[0], trimmed[1])
    if whole:
        raise EditError(reason)
    return _fill_one(parent, bare, notes)


def _apply_diff(parent: str, text: str, notes: list[str], max_bytes: int | None) -> str:
    if not is_search_replace(text):
        raise _NoContent
    code, forgiven = apply_search_replace(parent, text, max_bytes)
    notes.extend(forgiven)
    return code


_APPLY = {
    "diff": _apply_diff,
    "block": lambda p, t, n, _: _apply_program(p, t, n, as_block=True),
    "full": lambda p, t, n, _: _apply_program(p, t, n, as_block=False),
}


def _check(parent: str, child: str) -> str | None:
    """Final gate every candidate passes, whichever way it was made."""
    if child == parent:
        return NO_CHANGE
    if not child.strip():
        return "the edit leaves an empty program"
    try:
        find_blocks(child)
    except ValueError as exc:
        return f"the edit breaks the EVOLVE-BLOCK markers: {exc}"
    try:
        child.encode("utf-8")
    except UnicodeEncodeError as exc:  # no file, sandbox or compiler takes it
        line = child.count("\n", 0, exc.start) + 1
        return (
            f"the edit leaves text that is not UTF-8 at line {line}"
            f" (a lone surrogate, U+{ord(child[exc.start]):04X})"
        )
    if not find_blocks(parent):
        return None
    reason = fixed_unchanged(parent, child)
    if reason:
        return reason
    shadowed = sorted(shadowed_names(child) - shadowed_names(parent))
    if shadowed:
        return f"the edit redefines fixed {', '.join(shadowed)} inside an EVOLVE-BLOCK"
    return None


def apply_reply(
    parent_code: str, reply: str, asked: str, max_bytes: int | None = None
) -> EditOutcome:
    """Apply a model's reply to parent_code, trying the asked format first and then
    the others (models do not always obey). A program over max_bytes ends the work at
    once (`oversized`: nothing more is parsed, tidied or diffed). Never raises."""
    try:
        return _apply_reply(parent_code, reply, asked, max_bytes)
    except Exception as exc:  # a reply is untrusted input; a bug must not stop a run
        why = repr(exc)[:300]  # RecursionError, MemoryError: the candidate's failure
        return EditOutcome(False, None, "none", f"internal error applying the edit: {why}")


def _apply_reply(parent: str, reply: str, asked: str, max_bytes: int | None) -> EditOutcome:
    try:
        find_blocks(parent)
    except ValueError as exc:
        return EditOutcome(
            False, None, "none", f"the parent has malformed EVOLVE-BLOCK markers: {exc}"
        )
    text = clean_reply(reply)
    order = [asked] if asked in FORMATS else []
    order += [f for f in ("diff", "full", "block") if f not in order]
    failure: tuple[str, str] | None = None
    for kind in order:
        notes: list[str] = []
        try:
            child = _APPLY[kind](parent, text, notes, max_bytes)
        except _NoContent:
            continue
        except Oversized as exc:
            return EditOutcome(False, None, kind, str(exc), oversized=exc.size)
        except EditError as exc:
            failure = failure or (kind, str(exc))
            continue
        if max_bytes is not None and (size := text_bytes(child)) > max_bytes:
            return EditOutcome(False, None, kind, "the edited program is too big", oversized=size)
        if not find_blocks(parent):  # markers a model invents would fence off the next edits
            child = _without_markers(child)
        child, tidied = tidy(parent, child)
        notes.extend(tidied)
        reason = _check(parent, child)
        if reason:
            failure = failure or (kind, reason)
            continue
        return EditOutcome(True, child, kind, None, unified_diff(parent, child), notes)
    if failure:
        return EditOutcome(False, None, failure[0], failure[1])
    return EditOutcome(
        False,
        None,
        "none",
        "no edit found in the reply: expected SEARCH/REPLACE blocks or a fenced code block",
    )


# ---------------------------------------------------------------- diff and hash


def unified_diff(a: str, b: str, fromfile: str = "parent", tofile: str = "child") -> str:
    """Unified diff a -> b ("" when equal); every line newline-terminated."""
    la, lb = split_lines(a), split_lines(b)
    for lines in (la, lb):
        if lines and not lines[-1].endswith("\n"):
            lines[-1] += "\n"
    return "".join(difflib.unified_diff(la, lb, fromfile, tofile))


def _drop_docstrings(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]


def normalized_hash(code: str, language: Language = PYTHON) -> str:
    """sha256 of code with comments, docstrings, blank lines and formatting removed,
    so candidates that differ only in those count as duplicates. Python is compared by
    its syntax tree; another language by its text, its own comments and whitespace out.
    A program of several files: each file's, by its own suffix's language, with its path."""
    if is_tree(code):
        try:
            files = decode(code, "")
        except TreeError:
            files = {}
        if files:
            parts = [
                f"{p}\0{normalized_hash(t, by_suffix(PurePosixPath(p).suffix))}"
                for p, t in files.items()
            ]
            return hashlib.sha256(("tree:" + "\n".join(parts)).encode()).hexdigest()
    if not language.is_python:
        text = "txt:" + _textual_form(code, language.comments)
    else:
        tree = parse_python(code)  # None: unparsable, or too deep to walk (bounds.py)
        try:
            if tree is None:
                raise ValueError
            _drop_docstrings(tree)
            text = "ast:" + ast.unparse(tree)
        except Exception:  # unparsable (or pathological) code: a textual normal form
            text = "txt:" + _textual_form(code, ("#",))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _without_block_comments(code: str) -> str:
    """code with each /* ... */ made a space, in one pass (a lazy regex from `/*` to `*/` rescans
    to the end from every unclosed `/*`: 15 s for 60 KB of them). An unclosed one stays."""
    out, pos = [], 0
    while (start := code.find("/*", pos)) >= 0:
        end = code.find("*/", start + 2)
        if end < 0:
            break
        out.append(code[pos:start] + " ")
        pos = end + 2
    out.append(code[pos:])
    return "".join(out)


def _textual_form(code: str, comments: tuple[str, ...]) -> str:
    """code without its line comments (and C-style block comments where `//` is one),
    each line's whitespace collapsed, blank lines dropped."""
    if "//" in comments or "/*" in comments:
        code = _without_block_comments(code)
    for leader in comments:
        if leader not in ("/*", "(*", "<!--"):
            code = re.sub(rf"(?m)(^|\s){re.escape(leader)}.*$", r"\1", code)
    kept = (" ".join(ln.split()) for ln in code.split("\n"))
    return "\n".join(ln for ln in kept if ln)
