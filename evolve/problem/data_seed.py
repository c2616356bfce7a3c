"""The run's private data seed: what keeps a candidate from regenerating its workloads.

A problem's generated workloads (binpack's items, eplb's traces, llm_serving's prediction
noise, the spot problems' windows) are drawn from seeds written in its folder, which a
candidate (or the model that wrote it) can read and replay offline. A run draws one more
seed, kept in the archive (runs.data_seed) and handed only to trusted code (the evaluator
in the harness process and score(), through `kit.seed`), never to a prompt, the candidate's
environment or its files. None means the problem's public data, as `evolve eval` uses by
default, so the published numbers reproduce.
"""

from __future__ import annotations

import secrets

LIMIT = 2**63  # fits SQLite's INTEGER; far beyond a search within an evaluation's time limit


def draw() -> int:
    """A fresh seed for a new run."""
    return secrets.randbelow(LIMIT)


def check(value: int) -> int:
    """`value` if it can be a data seed, else ValueError saying the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < LIMIT:
        raise ValueError(f"a data seed is an integer in [0, 2**63), got {value!r}")
    return value


def describe(value: int | None) -> str:
    """How a person is told which data a run scores on (the CLI, never a prompt)."""
    return "public (the problem's own seeds)" if value is None else f"private ({value})"
