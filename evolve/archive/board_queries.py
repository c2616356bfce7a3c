"""ArchiveReader's queries over the leaderboard (evolve/archive/boards.py): what every
cross-run view ranks by.

A problem's programs are ranked by their score on the archive's leaderboard data alone, so
every score ranked against another was measured on the same workloads. A program with no
such score (a run made before the leaderboard existed, or one whose leaderboard evaluation
failed) is listed apart, unranked, with its own run's score. An archive older than schema 6
has no leaderboard: all its programs are unranked.
"""

from __future__ import annotations

import sqlite3

from evolve.archive.boards import BoardScore, Ranked, board_from
from evolve.archive.readonly import ReadOnlyArchive, has_table, list_cols
from evolve.archive.rows import ProgramRow, ProgramStatus, row_to_program

_BOARD_COLS = ("status", "score", "test_score", "metrics_json", "test_metrics_json", "created_at")


def _program_cols(db: sqlite3.Connection, alias: str = "p") -> str:
    """The listing columns of programs (readonly.list_cols), each qualified by `alias`."""
    cols = (c.strip() for c in list_cols(db).split(","))
    return ", ".join(c if c.startswith("NULL") else f"{alias}.{c}" for c in cols)


def _board_cols(alias: str = "b") -> str:
    return ", ".join(f"{alias}.{c} AS lb_{c}" for c in _BOARD_COLS)


def _split(r: sqlite3.Row | dict) -> Ranked:
    d = dict(r)
    board = board_from(d, "lb_") if d.get("lb_status") is not None else None
    return Ranked(row_to_program({k: v for k, v in d.items() if not k.startswith("lb_")}), board)


class BoardQueries(ReadOnlyArchive):
    """The leaderboard half of ArchiveReader (evolve/archive/reader.py)."""

    def leaderboard_seed(self, problem: str) -> int | None:
        """The problem's private leaderboard seed (None: no run of it has drawn one yet).
        For trusted scoring only (the web view's baselines): never shown."""
        with self._db() as db:
            if not has_table(db, "leaderboards"):
                return None
            r = db.execute(
                "SELECT data_seed FROM leaderboards WHERE problem = ?", (problem,)
            ).fetchone()
        return int(r[0]) if r is not None else None

    def ranked(self, problem: str, limit: int = 50) -> list[Ranked]:
        """The problem's best programs across its runs by their leaderboard train score, one
        per distinct code (the earliest of equals)."""
        with self._db() as db:
            if not has_table(db, "leaderboards"):
                return []
            rows = db.execute(
                f"""SELECT {_program_cols(db)}, {_board_cols("r")} FROM (
                      SELECT b.*, ROW_NUMBER() OVER (
                          PARTITION BY COALESCE(p.code_hash, p.program_id)
                          ORDER BY b.score DESC, p.created_at) AS rank_
                      FROM leaderboard_scores b
                      JOIN programs p ON p.program_id = b.program_id
                      JOIN leaderboards l ON l.problem = b.problem AND l.data_seed = b.data_seed
                      WHERE b.problem = :problem AND b.status = :ok AND b.score IS NOT NULL) r
                    JOIN programs p ON p.program_id = r.program_id
                    WHERE r.rank_ = 1 ORDER BY r.score DESC, p.created_at LIMIT :limit""",
                {"problem": problem, "ok": ProgramStatus.OK, "limit": limit},
            ).fetchall()
        return [_split(r) for r in rows]

    def unranked(self, problem: str, limit: int = 50) -> list[Ranked]:
        """Valid programs that cannot be ranked: those of runs with no leaderboard score at
        all (made before it existed), best first by their own run's score, one per distinct
        code, and those whose leaderboard evaluation failed (with its status)."""
        with self._db() as db:
            if not has_table(db, "leaderboards"):
                where, board = "", "NULL AS lb_status"
                join = ""
            else:
                join = "LEFT JOIN leaderboard_scores b ON b.program_id = p.program_id"
                board = _board_cols()
                where = """AND ((b.program_id IS NOT NULL AND b.status != :ok) OR
                    (b.program_id IS NULL AND NOT EXISTS (
                        SELECT 1 FROM leaderboard_scores b2 JOIN programs p2
                        ON p2.program_id = b2.program_id WHERE p2.run_id = p.run_id)))"""
            rows = db.execute(
                f"""SELECT * FROM (
                      SELECT {_program_cols(db)}, {board}, ROW_NUMBER() OVER (
                          PARTITION BY COALESCE(p.code_hash, p.program_id)
                          ORDER BY p.score DESC, p.created_at) AS rank_
                      FROM programs p {join}
                      WHERE p.problem = :problem AND p.status = :ok AND p.score IS NOT NULL
                      {where})
                    WHERE rank_ = 1 ORDER BY score DESC, created_at LIMIT :limit""",
                {"problem": problem, "ok": ProgramStatus.OK, "limit": limit},
            ).fetchall()
        return [_split(_without_rank(r)) for r in rows]

    def board_best(self, problem: str) -> Ranked | None:
        """The problem's best program on the leaderboard data (None: none is scored)."""
        top = self.ranked(problem, 1)
        return top[0] if top else None

    def board_scores(self, run_id: str) -> dict[str, BoardScore]:
        """The leaderboard scores of a run's programs, by program id (under the problem's
        leaderboard seed; an archive older than schema 6 has none)."""
        with self._db() as db:
            if not has_table(db, "leaderboards"):
                return {}
            rows = db.execute(
                """SELECT b.* FROM leaderboard_scores b
                   JOIN programs p ON p.program_id = b.program_id
                   JOIN leaderboards l ON l.problem = b.problem AND l.data_seed = b.data_seed
                   WHERE p.run_id = ?""",
                (run_id,),
            ).fetchall()
        return {r["program_id"]: board_from(dict(r)) for r in rows}

    def ranked_best(self, program: ProgramRow) -> tuple[int, int] | None:
        """Where `program` stands on its problem's leaderboard: (its place, how many distinct
        programs are ranked); None when it has no leaderboard score."""
        mine = self.board_scores(program.run_id).get(program.program_id)
        if mine is None or mine.score is None:
            return None
        board = self.ranked(program.problem, 1_000_000)
        above = sum(1 for r in board if r.board and (r.board.score or 0.0) > mine.score)
        return above + 1, len(board)


def _without_rank(r: sqlite3.Row) -> dict:
    return {k: r[k] for k in r.keys() if k != "rank_"}
