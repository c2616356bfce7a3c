"""Scoring a program on the workloads of a run with a given private data seed, in-process.

Runs draw their generated workloads under a private seed (evolve/problem/data_seed.py), so a test
that compares a run's numbers with a reference fixes the run's seed (`--data-seed`) and
scores the reference on the same workloads here.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from types import ModuleType

from evaluators import kit
from evolve.edits.blocks import complete_from_seed

RUN_DATA_SEED = 2023  # the runs' private data seed in tests that compare numbers


def scored_at(
    data_seed: int,
    evaluator: ModuleType,
    problem: Path,
    program: Path,
    tmp: Path,
    split: str = "train",
) -> dict:
    """`program` (a whole program or a baseline's blocks; for a program of several files, a
    folder) scored on `split` under `data_seed`."""
    if program.is_dir():
        from tests.support.problem_hostile import run_in_process

        kit.use_data_seed(data_seed)
        try:
            return run_in_process(problem, evaluator, program, split)
        finally:
            kit.use_data_seed(None)
    whole = tmp / f"scored_at_{program.name}"
    whole.write_text(complete_from_seed(program.read_text(), (problem / "seed.py").read_text()))
    kit.use_data_seed(data_seed)
    try:
        return kit.evaluate_and_score(evaluator, str(whole), split)
    finally:
        kit.use_data_seed(None)


def leaderboard_draw(runs_dir: Path, problem: str, public: int = 1) -> str:
    """What `kit.seed(public)` gives an evaluation on the archive's leaderboard data (a
    kill-and-resume test's marks tell those evaluations from the run's own by it)."""
    db = sqlite3.connect(runs_dir / "archive.db")
    try:
        (seed,) = db.execute(
            "SELECT data_seed FROM leaderboards WHERE problem=?", (problem,)
        ).fetchone()
    finally:
        db.close()
    kit.use_data_seed(int(seed))
    try:
        return str(kit.seed(public))
    finally:
        kit.use_data_seed(None)


def leaderboard_scored(runs_dir: Path, run_id: str) -> set[int]:
    """The iterations of a run whose leaderboard score is recorded: a best's scoring that a
    kill cut short is measured again on resume, which repeats nothing recorded."""
    db = sqlite3.connect(runs_dir / "archive.db")
    try:
        rows = db.execute(
            "SELECT p.iteration FROM leaderboard_scores l JOIN programs p USING (program_id)"
            " WHERE p.run_id=?",
            (run_id,),
        ).fetchall()
    except sqlite3.OperationalError:  # the schema is not there yet
        rows = []
    finally:
        db.close()
    return {r[0] for r in rows}
