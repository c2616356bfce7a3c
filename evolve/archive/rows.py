"""The archive's rows and their vocabulary: ProgramRow (a `programs` row), LlmCall (an
`llm_calls` row), the statuses of programs, runs and calls.

Each type is the one the loop writes and the ArchiveReader reads back. Dict fields live in
`*_json` columns; these helpers are the one place that converts. Statuses are StrEnums: a
member is its string, so stored values and JSON are the strings they always were.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TypeVar

from evolve.archive.vocab import CallPurpose, ProgramKind, ProgramStatus

E = TypeVar("E", bound=StrEnum)


class RunStatus(StrEnum):
    """runs.status."""

    RUNNING = "running"
    FINISHED = "finished"
    STOPPED = "stopped"  # by a limit, or interrupted (resumable)
    FAILED = "failed"  # resumable: the reason says why
    INTERRUPTED = "interrupted"  # never stored: how a `running` row whose owner died reads


class CallOutcome(StrEnum):
    """llm_calls.outcome of an answered call whose reply did not become its iteration's
    program (NULL: it did)."""

    REJECTED_DUPLICATE = "rejected_duplicate"  # it repeated a program; the model was asked again


@dataclass
class ProgramRow:
    """One candidate program; status, score, scores, metrics, artifacts and eval_s are its
    evaluation's EvalResult fields, under the same names."""

    program_id: str
    run_id: str
    problem: str
    iteration: int
    island: int
    status: ProgramStatus
    code: str | None = None
    parent_id: str | None = None
    second_parent_id: str | None = None
    kind: str = ProgramKind.MUTATION
    edit_kind: str | None = None
    model: str | None = None
    code_hash: str | None = None
    diff: str | None = None
    score: float | None = None
    test_score: float | None = None
    scores: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)
    test_metrics: dict = field(default_factory=dict)
    artifacts: dict = field(default_factory=dict)
    features: dict = field(default_factory=dict)
    cell: str | None = None
    eval_s: float | None = None
    llm_call_id: int | None = None
    skip_reason: str | None = None  # set: never picked as a parent again (see population.py)
    created_at: float = 0.0


JSON_COLS = {
    "scores": "scores_json",
    "metrics": "metrics_json",
    "test_metrics": "test_metrics_json",
    "artifacts": "artifacts_json",
    "features": "features_json",
}

# The plain columns, stored as the attributes of the same name (created_at last).
PLAIN_COLS = (
    "program_id",
    "run_id",
    "problem",
    "iteration",
    "island",
    "parent_id",
    "second_parent_id",
    "kind",
    "edit_kind",
    "model",
    "code",
    "code_hash",
    "diff",
    "status",
    "score",
    "test_score",
    "cell",
    "eval_s",
    "llm_call_id",
    "skip_reason",
    "created_at",
)


def row_to_program(r: sqlite3.Row | dict) -> ProgramRow:
    d = dict(r)
    for attr, col in JSON_COLS.items():
        d[attr] = json.loads(d.pop(col, None) or "{}")
    d["status"] = member(ProgramStatus, d["status"])
    return ProgramRow(**d)


def member(kind: type[E], value: str) -> E | str:
    """A stored status read back as its member; one this version does not know (a
    hand-made archive's) stays the string it is, shown as stored."""
    try:
        return kind(value)
    except ValueError:
        return value


def insert_statement(p: ProgramRow, code: str | None, code_files: int) -> tuple[str, list]:
    """The INSERT that stores `p` and its values, with `code` and `code_files` as the archive
    keeps its code (trees.store: a tree's files are stored apart); an unset created_at
    becomes now."""
    cols = [*PLAIN_COLS, "code_files"]
    values = [getattr(p, c) for c in PLAIN_COLS] + [code_files]
    values[cols.index("code")] = code
    values[cols.index("created_at")] = p.created_at or time.time()
    for attr, col in JSON_COLS.items():
        cols.append(col)
        values.append(json.dumps(getattr(p, attr)))
    sql = f"INSERT INTO programs ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})"
    return sql, values


def public_dict(p: ProgramRow, code: bool = True) -> dict:
    """What `archive show --json` and the web API say of a program (not its hash or diff)."""
    d = {
        "program_id": p.program_id,
        "run_id": p.run_id,
        "problem": p.problem,
        "iteration": p.iteration,
        "island": p.island,
        "parent_id": p.parent_id,
        "second_parent_id": p.second_parent_id,
        "kind": p.kind,
        "edit_kind": p.edit_kind,
        "model": p.model,
        "status": p.status,
        "skip_reason": p.skip_reason,
        "score": p.score,
        "test_score": p.test_score,
        "scores": p.scores,
        "metrics": p.metrics,
        "test_metrics": p.test_metrics,
        "artifacts": p.artifacts,
        "cell": p.cell,
        "features": p.features,
        "eval_s": p.eval_s,
    }
    if code:
        d["code"] = p.code
    return d


# What an LLM call can be for (llm_calls.purpose), and every category a call is shown as.
PURPOSES = tuple(CallPurpose)
CALL_CATEGORIES = (
    *PURPOSES,
    "rejected duplicate",
    "rejected",
    "failed attempt",
    "not recorded",
    "other",
)


@dataclass
class LlmCall:
    """One request to a model and its reply (or its error), as the archive keeps it: the loop
    stores it with Archive.insert_llm_call (call_id and created_at are set then), the
    ArchiveReader reads it back (without prompt and reply where a listing skips them)."""

    run_id: str
    iteration: int
    island: int
    model: str
    edit_format: str  # block | diff | full | crossover | funsearch | repair | meta
    prompt: list
    reply: str | None = None
    error: str | None = None  # a failed attempt's
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    parent_id: str | None = None
    second_parent_id: str | None = None
    # schema 4 (None in older archives): what the call was for and what became of it
    purpose: str | None = None  # one of PURPOSES
    outcome: CallOutcome | None = None  # None: its reply was used
    temperature: float | None = None
    decision: str | None = None  # why this model and temperature
    call_id: int | None = None
    created_at: float = 0.0

    @property
    def category(self) -> str:
        """What the call was, as the run page's charts colour it: a failed attempt, a
        rejected reply, else its purpose (one of CALL_CATEGORIES, whatever the row holds)."""
        if self.error is not None:
            return "failed attempt"
        if self.outcome is not None:
            return (
                "rejected duplicate"
                if self.outcome == CallOutcome.REJECTED_DUPLICATE
                else "rejected"
            )
        if self.purpose is None:
            return "not recorded"
        return self.purpose if self.purpose in PURPOSES else "other"


# llm_calls' columns, stored as the attributes of the same name but prompt (prompt_json)
# and call_id (the table's key): what insert_llm_call writes.
CALL_COLS = (
    "run_id",
    "iteration",
    "island",
    "parent_id",
    "second_parent_id",
    "edit_format",
    "model",
    "reply",
    "error",
    "prompt_tokens",
    "completion_tokens",
    "cost_usd",
    "latency_s",
    "created_at",
    "purpose",
    "outcome",
    "temperature",
    "decision",
)


def call_insert(c: LlmCall) -> tuple[str, list]:
    """The INSERT that stores `c` and its values."""
    cols = [*CALL_COLS, "prompt_json"]
    values = [getattr(c, k) for k in CALL_COLS] + [json.dumps(c.prompt)]
    sql = f"INSERT INTO llm_calls ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})"
    return sql, values


def row_to_call(r: sqlite3.Row | dict) -> LlmCall:
    d = dict(r)
    d["prompt"] = json.loads(d.pop("prompt_json", None) or "[]")
    if d.get("outcome") is not None:
        d["outcome"] = member(CallOutcome, d["outcome"])
    return LlmCall(**d)
