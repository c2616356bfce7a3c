"""The window an agent session's conversation may fill.

A session's first prompt is a single call's, packed to the run's context window; every turn
after it adds the model's reply and its tool's result. A local model is served with the
window its profile gives a single call (4,096 tokens), which the first prompt of a long
problem nearly fills: on llm_serving every session of the 1.5B model ended after one or two
turns, the window full (bench/README.md, 2026-12-05). So with `--proposer agent` a local
model's server is started with twice that window and the session may fill it, while the
first prompt is packed as before. A hosted model's window is what it says."""

from __future__ import annotations

from collections.abc import Iterable

from evolve.llm.profiles import is_local

LOCAL_FACTOR = 2


def session_window(context_window: int | None, proposer: str, models: Iterable[str]) -> int | None:
    if context_window is None or proposer != "agent" or not any(is_local(m) for m in models):
        return context_window
    return context_window * LOCAL_FACTOR
