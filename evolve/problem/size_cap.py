"""The program size cap: the one check of a candidate's size, wherever a program enters.

A huge candidate costs a sandbox run and an archive row, and as a parent a prompt that no
model's window holds; the problem's cap (`[evaluation] max_code_kb`, or OpenEvolve's
`max_code_length`) keeps every candidate bounded. Three places ask, each for its own
boundary, all through `too_large`: a run's launch (the seed, refused before anything is
written), a reply made into a row (recorded `invalid` with no code kept: evolve/pipeline/candidates.py)
and the evaluator (no sandbox ever runs an oversized program, whoever sends it: a resumed
candidate, `evolve eval`, a baseline, the API: evolve/pipeline/evaluation.py).
"""

from __future__ import annotations

from evaluators.sandbox import EvalResult, Status
from evolve.problem.load import Problem


def too_large(problem: Problem, code: str) -> str | None:
    """Why `code` is over the problem's size cap, or None when it is not."""
    return size_reason(problem, len(code.encode("utf-8", "surrogatepass")))


def size_reason(problem: Problem, size: int) -> str | None:
    """Why a program of `size` bytes is over the problem's size cap, or None."""
    if size <= problem.max_code_bytes:
        return None
    setting = (
        "max_code_length in config.yaml"
        if problem.fmt == "openevolve"
        else "[evaluation] max_code_kb"
    )
    return f"code is {size:,} bytes; this problem allows at most {problem.max_code_bytes:,} ({setting})"


def oversized(problem: Problem, code: str) -> EvalResult | None:
    """The size check as a candidate's outcome: None when `code` is within the cap, else the
    `invalid` result recorded in place of a score."""
    return refused(size_reason(problem, len(code.encode("utf-8", "surrogatepass"))))


def refused(reason: str | None) -> EvalResult | None:
    """The `invalid` result recorded for a program over the cap (None: within it)."""
    return None if reason is None else EvalResult(Status.INVALID, artifacts={"error": reason})
