"""ProgramRow: one candidate program as the `programs` table stores it.

Dict fields live in `*_json` columns; these helpers are the one place that converts.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field


@dataclass
class ProgramRow:
    program_id: str
    run_id: str
    problem: str
    iteration: int
    island: int
    status: str
    code: str | None = None
    parent_id: str | None = None
    second_parent_id: str | None = None
    kind: str = "mutation"
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
    return ProgramRow(**d)


def insert_statement(p: ProgramRow) -> tuple[str, list]:
    """The INSERT that stores `p` and its values; an unset created_at becomes now."""
    cols = list(PLAIN_COLS)
    values = [getattr(p, c) for c in cols]
    values[-1] = p.created_at or time.time()
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
