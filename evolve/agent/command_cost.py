"""Tokens and dollars an agent's command reports on its standard output, where it does.

Read: one JSON document (Claude Code's `--output-format json`: `total_cost_usd`, `usage`)
or JSON lines (Codex's `exec --json` events: `usage` on each `turn.completed`), summed.
A number that is not finite and non-negative is ignored; nothing found is zero (the
command's cost is then unknown, and the notice says so once)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

READ_CHARS = 1_000_000  # of the output's end: where a final result is printed
_COST = ("total_cost_usd", "cost_usd", "cost")
_IN = ("input_tokens", "prompt_tokens")
_CACHED_IN = ("cache_creation_input_tokens", "cache_read_input_tokens")
_OUT = ("output_tokens", "completion_tokens")


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    reported: bool = False  # the output said anything of its usage


def _num(v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        return 0.0
    return float(v) if math.isfinite(v) and 0 <= v < 1e12 else 0.0


def _first(d: dict, keys: tuple[str, ...]) -> float:
    return next((_num(d[k]) for k in keys if k in d), 0.0)


def _of(doc: object) -> Usage | None:
    if not isinstance(doc, dict):
        return None
    usage = doc.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    cost = _first(doc, _COST)
    tokens_in = _first(usage, _IN) + sum(_num(usage.get(k)) for k in _CACHED_IN)
    tokens_out = _first(usage, _OUT)
    if not usage and not any(k in doc for k in _COST):
        return None
    return Usage(int(tokens_in), int(tokens_out), cost, True)


def parse(output: str) -> Usage:
    """The usage the command's output reports (zeros, not reported, when none)."""
    text = output[-READ_CHARS:].strip()
    docs: list[object] = []
    try:
        docs = [json.loads(text)]
    except ValueError:
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("{"):
                try:
                    docs.append(json.loads(line))
                except ValueError:
                    continue
    found = [u for u in map(_of, docs) if u is not None]
    if not found:
        return Usage()
    return Usage(
        sum(u.prompt_tokens for u in found),
        sum(u.completion_tokens for u in found),
        sum(u.cost_usd for u in found),
        True,
    )
