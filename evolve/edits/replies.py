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

SEARCH_RE = re.compile(r"^[ \t]*<{3,}[ \t]*(?:SEARCH|ORIGINAL)\b", re.I)
_THINK_RE = re.compile(r"<think>.*?</think>", re.S | re.I)
FENCE_RE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*(.*?)\s*$")
_NOT_PYTHON = {"bash", "sh", "shell", "console", "json", "yaml", "text", "txt", "output"}


def clean_reply(reply: object) -> str:
    """Reply as text: decoded, "\\n" line ends, <think> sections removed."""
    if isinstance(reply, bytes | bytearray):
        reply = bytes(reply).decode("utf-8", "replace")
    text = "" if reply is None else str(reply)
    text = _THINK_RE.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    if "</think>" in text.lower():  # template ate the opening tag: all before is thought
        text = text[text.lower().rindex("</think>") + len("</think>") :]
    return re.sub(r"</?think>", "", text, flags=re.I)


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
                cur, fence, tag = [], m.group(1), m.group(2).lower()
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not m.group(2):
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
    try:
        tree = ast.parse(textwrap.dedent(text))
    except (SyntaxError, ValueError):
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
