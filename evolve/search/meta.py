"""Meta-notes: every N calls one call reads what the run's recent children changed and
scored, and writes at most ten lines of advice that later prompts carry (ShinkaEvolve's
meta-recommendations, kept short: small models ignore long history)."""

from __future__ import annotations

import re

from evolve.archive import ProgramRow, ProgramStatus
from evolve.edits.replies import clean_reply

MAX_LINES = 10
LINE_CHARS = 200
RECENT = 12  # children summarised per meta call
# [ \t], not \s: a \s* at each line start runs over every blank line after it (quadratic:
# 3 s for 20,000 blank lines in a candidate)
_IDEA = re.compile(r"^[ \t]*#[ \t]*Idea:[ \t]*(.+)$", re.M | re.I)


def idea_of(p: ProgramRow) -> str:
    """What a child tried: its `# Idea:` comment, else its first changed line."""
    m = _IDEA.search(p.code or "")
    if m:
        return m.group(1).strip()[:LINE_CHARS]
    for line in (p.diff or "").splitlines():
        if line.startswith("+") and not line.startswith("+++") and line[1:].strip():
            return f"changed: {line[1:].strip()[:LINE_CHARS]}"
    return "no visible change"


def summaries(children: list[ProgramRow], parent_scores: dict[str, float | None]) -> list[str]:
    """One line per recent child: what it tried and what became of it."""
    out = []
    for p in children[-RECENT:]:
        before = parent_scores.get(p.parent_id or "")
        if p.status == ProgramStatus.OK and p.score is not None:
            delta = "" if before is None else f" ({p.score - before:+.4g} vs its parent)"
            what = f"scored {p.score:.6g}{delta}"
        else:
            what = f"failed: {p.status}"
        out.append(f"{idea_of(p)} -> {what}")
    return out


def parse_notes(reply: str) -> str:
    """At most MAX_LINES lines of advice from a reply, each cut to LINE_CHARS; code and
    fences dropped (the notes are untrusted text and go into prompts as text)."""
    lines: list[str] = []
    in_fence = False
    for raw in clean_reply(reply).splitlines():
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence or not line:
            continue
        line = re.sub(r"^([-*•]|\d+[.)])\s*", "", line)
        if line:
            lines.append("- " + line[:LINE_CHARS])
        if len(lines) == MAX_LINES:
            break
    return "\n".join(lines)
