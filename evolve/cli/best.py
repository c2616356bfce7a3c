"""`evolve archive best`: the best program of a run, of a problem, or of each problem.

Within a run (`--run`) programs are ranked by the run's own scores. Across runs (`--problem`,
or each problem) they are ranked by their score on the archive's leaderboard data
(evolve/pipeline/leaderboard.py): every run draws its own private workloads, so its own numbers rank
nothing but its own programs. A problem with no leaderboard score yet (its runs predate it)
shows its best by its own run's score, marked unranked, with a warning on stderr.
"""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.text import Text

from evolve.answers import UNRANKED, board_fields, files_json
from evolve.archive import ArchiveReader, Ranked
from evolve.archive.boards import BOARD_DATA
from evolve.archive.rows import public_dict
from evolve.cli.safe_text import safe_rich, safe_text


def warn_unranked(r: Ranked) -> None:
    if r.board is None or r.board.score is None:
        print(
            safe_text(
                f"warning: no program of {r.program.problem} is scored on this archive's"
                f" leaderboard data; {r.program.program_id} is its best by its own run's"
                " score, not comparable across runs"
            ),
            file=sys.stderr,
        )


def board_rows(r: Ranked) -> list[tuple[str, str | Text]]:
    """The rows `archive show`'s table gets for a cross-run answer."""
    b = r.board
    if b is None or b.score is None:
        return [("ranked by", safe_rich(UNRANKED))]
    return [
        ("ranked by", safe_rich(f"train score on {BOARD_DATA}")),
        ("leaderboard train", _f(b.score)),
        ("leaderboard held out", _f(b.test_score)),
    ]


def per_problem(
    out: Console, best: list[Ranked], as_json: bool, reader: ArchiveReader
) -> list[list]:
    """`archive best` with neither flag: JSON lines (with each program's `files` map), or
    the table's rows."""
    if as_json:
        for r in best:
            d = {**public_dict(r.program), "files": files_json(reader, r.program)}
            print(json.dumps({**d, **board_fields(r)}))
        return []
    for r in best:
        warn_unranked(r)
    return [
        [
            safe_rich(r.program.problem),
            safe_rich(r.program.program_id),
            _f(r.board.score) if r.board and r.board.score is not None else "unranked",
            _f(r.board.test_score) if r.board and r.board.score is not None else "-",
            _f(r.program.score),
            safe_rich(r.program.model or ""),
        ]
        for r in best
    ]


PER_PROBLEM_COLUMNS = [
    ("problem", 7),
    ("program", None),
    ("train", None),
    ("held out", None),
    ("own run's train", None),
    ("model", 8),
]
PER_PROBLEM_TITLE = f"best program per problem, ranked by train score on {BOARD_DATA}"


def _f(v) -> str:
    return "-" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
