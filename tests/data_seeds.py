"""Scoring a program on the workloads of a run with a given private data seed, in-process.

Runs draw their generated workloads under a private seed (evolve/data_seed.py), so a test
that compares a run's numbers with a reference fixes the run's seed (`--data-seed`) and
scores the reference on the same workloads here.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

from evaluators import kit
from evolve.edits.blocks import complete_from_seed

RUN_DATA_SEED = 2023  # the runs' private data seed in tests that compare numbers


def scored_at(
    data_seed: int, evaluator: ModuleType, problem: Path, program: Path, tmp: Path, split: str = "train"
) -> dict:
    """`program` (a whole program or a baseline's blocks; for a program of several files, a
    folder) scored on `split` under `data_seed`."""
    if program.is_dir():
        from tests.problem_hostile import run_in_process

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
