"""Shared pieces of bench/controller_overhead.py; stdlib only.

Imported by the benchmark itself and by overhead_openevolve.py, which runs in
OpenEvolve's own virtual environment, so nothing here may import evolve.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures"
OPENEVOLVE_PROBLEM = FIXTURES / "trivial_openevolve"
NATIVE_PROBLEM = FIXTURES / "trivial_native"

HEADER = '"""Trivial program for bench/controller_overhead.py: the evaluator only imports it."""\n\n\n'
VALUE_RE = re.compile(r"^    x = (-?\d+)$", re.M)
SYNTHETIC_BASE = 1_000_000  # synthetic programs use values from here; LLM replies count from 1


def program_code(value: int, pad: int = 0) -> str:
    """The fixture program with value() returning `value`; `pad` extra statements
    vary the code length (so programs land in different MAP-Elites cells)."""
    body = "".join(f"    y{j} = {j}\n" for j in range(pad))
    return (
        HEADER
        + "# EVOLVE-BLOCK-START\n"
        + "def value():\n"
        + '    """A constant; the benchmark\'s scripted LLM rewrites it on every call."""\n'
        + body
        + f"    x = {value}\n"
        + "    return x\n\n\n"
        + "# EVOLVE-BLOCK-END\n"
    )


def score_of(value: int) -> float:
    """What the fixture evaluators return for a program whose value() is `value`."""
    return (value * 2654435761 % 4294967296) / 4294967296


def value_of(code: str) -> int:
    m = VALUE_RE.search(code)
    if m is None:
        raise ValueError("not a benchmark program: no `x = N` line")
    return int(m.group(1))


def reply_text(k: int) -> str:
    """The scripted LLM's k-th reply: a whole-program rewrite in a ```python fence,
    unique per k so no candidate is a duplicate; valid for both frameworks."""
    return f"Changed the constant to {k}.\n\n```python\n{program_code(k, pad=k % 4)}```\n"


def synthetic_programs(count: int, seed: int = 0) -> list[dict]:
    """`count` distinct programs with their real scores: what pre-populates the archives."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        value = SYNTHETIC_BASE + i
        code = program_code(value, pad=rng.randrange(0, 12))
        out.append({"code": code, "score": score_of(value)})
    return out


def steady_state(ts: list[float], fill: int) -> dict:
    """Per-candidate time from request arrival times.

    A new LLM request is issued when an earlier candidate finishes, so after the
    first `fill` requests (the initial burst that fills the pipeline) every
    arrival marks one finished candidate. Returns the mean over that window
    (span / completions) and the median gap, both in ms.
    """
    ts = sorted(ts)
    window = ts[fill:]
    if len(window) < 3:
        raise ValueError(f"too few requests ({len(ts)}) after the first {fill}: raise --iterations")
    gaps = [b - a for a, b in zip(window, window[1:], strict=False)]
    q = statistics.quantiles(gaps, n=10, method="inclusive")
    return {
        "mean_ms": (window[-1] - window[0]) / len(gaps) * 1e3,
        "median_ms": statistics.median(gaps) * 1e3,
        "p10_ms": q[0] * 1e3,
        "p90_ms": q[-1] * 1e3,
        "candidates": len(gaps),
    }


def ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b <= 0 or not math.isfinite(a):
        return None
    return a / b
