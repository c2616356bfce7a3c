"""Reply text: what a model said once its thinking, fences and prose are peeled off.

Small models wrap code every which way (language tags or none, prose before and
after, truncated fences, no fences at all), so extraction is deliberately loose;
deciding what the code means is apply.py's job.
"""

from __future__ import annotations

import ast
import re
import textwrap

from evolve.edits.blocks import find_blocks, split_lines
from evolve.edits.bounds import parse_python

SEARCH_RE = re.compile(r"^[ \t]*<{3,}[ \t]*(?:SEARCH|ORIGINAL)\b", re.I)
_OPEN_THINK_RE = re.compile(r"<think>", re.I)
_CLOSE_THINK_RE = re.compile(r"</think>", re.I)
# A fence line: its marker, then the rest of the line (the tag: strip it). Nothing lazy
# before a `\s*$`: that backtracks quadratically on a long line with spaces inside.
FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})(.*)$")
_NOT_PYTHON = {"bash", "sh", "shell", "console", "json", "yaml", "text", "txt", "output"}


def clean_reply(reply: object) -> str:
    """Reply as text: decoded, "\\n" line ends, <think> sections removed."""
    if isinstance(reply, bytes | bytearray):
        reply = bytes(reply).decode("utf-8", "replace")
    text = "" if reply is None else str(reply)
    text = _drop_thinking(text.replace("\r\n", "\n").replace("\r", "\n"))
    last = None
    for last in _CLOSE_THINK_RE.finditer(text):  # noqa: B007 (the last one is wanted)
        pass
    if last is not None:  # template ate the opening tag: all before is thought
        text = text[last.end() :]
    return _OPEN_THINK_RE.sub("", text)


def _drop_thinking(text: str) -> str:
    """text without its <think>...</think> sections, in one pass (a regex `<think>.*?</think>`
    rescans to the end from every unclosed `<think>`: quadratic on a reply full of them)."""
    out, pos = [], 0
    while (start := _OPEN_THINK_RE.search(text, pos)) is not None:
        end = _CLOSE_THINK_RE.search(text, start.end())
        if end is None:  # unclosed, and so is every later one
            break
        out.append(text[pos : start.start()])
        pos = end.end()
    out.append(text[pos:])
    return "".join(out)


def fence_tag(m: re.Match[str]) -> str:
    """The language tag of a FENCE_RE match ("" for a bare fence)."""
    return m.group(2).strip()


def fenced_blocks(text: str) -> list[tuple[str, str]]:
    """(language tag, code) of each fenced block; an unclosed last fence runs to the
    end (truncated replies)."""
    found: list[tuple[str, str]] = []
    cur: list[str] | None = None
    fence, tag = "", ""
    for line in split_lines(text):
        m = FENCE_RE.match(line)
        if cur is None:
            if m:
                cur, fence, tag = [], m.group(1), fence_tag(m).lower()
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not fence_tag(m):
            found.append((tag, "".join(cur)))
            cur = None
        else:
            cur.append(line)
    if cur:
        found.append((tag, "".join(cur)))
    return found


def looks_like_code(text: str) -> bool:
    """Is an unfenced reply Python (it parses, and is not just a bare expression like
    a one-word answer)?"""
    tree = parse_python(textwrap.dedent(text))
    if tree is None:
        return False
    return any(not isinstance(node, ast.Expr) for node in tree.body)


def has_markers(code: str) -> bool:
    """Does code hold well-formed EVOLVE-BLOCK markers?"""
    try:
        return bool(find_blocks(code))
    except ValueError:
        return False


def code_candidates(text: str) -> list[str]:
    """Code the reply offers: its fenced blocks, else the bare reply if it is code."""
    fenced = fenced_blocks(text)
    if fenced:
        return [
            c for t, c in fenced if c.strip() and t not in _NOT_PYTHON and not is_search_replace(c)
        ]
    if not is_search_replace(text) and (has_markers(text) or looks_like_code(text)):
        return [text]
    return []


def is_search_replace(text: str) -> bool:
    """Does text hold a SEARCH marker line (so it is a diff, not a program)?"""
    return any(SEARCH_RE.match(ln) for ln in split_lines(text))
