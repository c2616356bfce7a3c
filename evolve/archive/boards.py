"""The leaderboard's tables: one private data seed per problem in an archive, and the scores
of programs under it.

Each run draws its own private workloads (runs.data_seed), so the same code scores
differently in two runs: a run's own scores rank its programs, never programs of other runs.
What ranks programs across runs (and against the problem's baselines) is one more seed per
problem, drawn once per archive (table `leaderboards`), under which every run's seed and
best are scored again (table `leaderboard_scores`, written by the loop through BoardStore;
evolve/pipeline/leaderboard.py). The ArchiveReader's side is board_queries.py.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Protocol

from evolve.archive.rows import ProgramRow, ProgramStatus, member

# How every cross-run view names the data its numbers are measured on.
BOARD_DATA = "this archive's leaderboard data (seed private)"
BOARD_CAPTION = f"scored on {BOARD_DATA}"


@dataclass
class BoardScore:
    """A program scored on its problem's leaderboard data: the train cascade (as a run
    scores) and the held-out split, under the leaderboard seed."""

    status: ProgramStatus | str
    score: float | None = None  # train; None unless status is ok
    test_score: float | None = None
    metrics: dict = field(default_factory=dict)
    test_metrics: dict = field(default_factory=dict)
    created_at: float = 0.0


@dataclass
class Ranked:
    """A program of a cross-run view with its leaderboard score (None: never scored on the
    leaderboard data, as in a run made before it existed: unranked)."""

    program: ProgramRow
    board: BoardScore | None


def board_from(d: dict, prefix: str = "") -> BoardScore:
    """A BoardScore from a row's columns (`prefix` + status, score, ...)."""
    return BoardScore(
        member(ProgramStatus, d[prefix + "status"]),
        d[prefix + "score"],
        d[prefix + "test_score"],
        json.loads(d.get(prefix + "metrics_json") or "{}"),
        json.loads(d.get(prefix + "test_metrics_json") or "{}"),
        d.get(prefix + "created_at") or 0.0,
    )


class _Writable(Protocol):
    db: sqlite3.Connection

    def tx(self) -> AbstractContextManager[sqlite3.Connection]: ...


class BoardStore:
    """The loop's writes to the leaderboard tables (a mixin of Archive): each is one
    committed transaction, so a kill never leaves a score half written or a seed drawn twice."""

    def draw_leaderboard_seed(self: _Writable, problem: str, fresh: int) -> int:
        """The problem's leaderboard seed: `fresh` if it has none yet (the first run of the
        problem in this archive draws it), else the one drawn before, for good."""
        with self.tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO leaderboards (problem, data_seed, created_at)"
                " VALUES (?,?,?)",
                (problem, fresh, time.time()),
            )
            r = db.execute(
                "SELECT data_seed FROM leaderboards WHERE problem=?", (problem,)
            ).fetchone()
            return int(r[0])

    def set_board_score(
        self: _Writable, program_id: str, problem: str, seed: int, s: BoardScore
    ) -> None:
        """Store a program's leaderboard score; one already stored is kept (never measured
        twice, never overwritten)."""
        with self.tx() as db:
            db.execute(
                "INSERT OR IGNORE INTO leaderboard_scores (program_id, problem, data_seed,"
                " status, score, test_score, metrics_json, test_metrics_json, created_at)"
                " VALUES (?,?,?,?,?,?,?,?,?)",
                (
                    program_id,
                    problem,
                    seed,
                    s.status,
                    s.score,
                    s.test_score,
                    json.dumps(s.metrics),
                    json.dumps(s.test_metrics),
                    s.created_at or time.time(),
                ),
            )

    def board_score(self: _Writable, program_id: str) -> BoardScore | None:
        r = self.db.execute(
            "SELECT * FROM leaderboard_scores WHERE program_id=?", (program_id,)
        ).fetchone()
        return board_from(dict(r)) if r is not None else None

    def board_of_code(
        self: _Writable, problem: str, seed: int, code_hash: str
    ) -> BoardScore | None:
        """A valid leaderboard score of a program with this code (normalised hash) under
        `seed`: the same code is scored on the leaderboard data once per archive."""
        r = self.db.execute(
            "SELECT b.* FROM leaderboard_scores b JOIN programs p ON p.program_id = b.program_id"
            " WHERE b.problem=? AND b.data_seed=? AND b.status=? AND p.code_hash=?"
            " ORDER BY b.created_at LIMIT 1",
            (problem, seed, ProgramStatus.OK, code_hash),
        ).fetchone()
        return board_from(dict(r)) if r is not None else None
