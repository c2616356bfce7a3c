"""The Python API's reads of the archive: what a script or notebook wants after a run,
without shelling out to `evolve archive ... --json`. Plain data (dicts of str, numbers,
None, lists and dicts), the same keys the commands' --json prints; nothing printed.

    import evolve
    best = evolve.best(problem="binpack")  # ranked on the archive's leaderboard data
    print(best["score"], best["leaderboard_test_score"], best["files"])
"""

from __future__ import annotations

import os

from evolve.answers import problem_best, program_dict
from evolve.archive import ArchiveError, ArchiveReader
from evolve.settings.errors import UsageError
from evolve.settings.flags import runs_dir as _runs_dir


def runs(*, runs_dir: str | os.PathLike | None = None) -> list[dict]:
    """Every run, oldest first: run_id, problem, status, stop_reason, iterations_done and
    _target, seed_score, best_score, cost_usd, created_at, updated_at, data_seed, calls,
    rejected, repairs (`evolve archive runs --json`)."""
    reader = _reader(runs_dir)
    counts = reader.run_counts()
    listed = reader.list_runs()
    for r in listed:
        r.update(counts.get(r["run_id"], {"calls": 0, "rejected": 0, "repairs": 0}))
    return listed


def best(
    *, problem: str | None = None, run: str | None = None, runs_dir: str | os.PathLike | None = None
) -> dict | None:
    """The best program of a run (`run`: its id or a unique prefix; ranked by the run's own
    scores, `problem` narrowing nothing more) or of a problem across its runs (ranked on the
    leaderboard data: `leaderboard_score`, `leaderboard_test_score`, `ranked_by`); None when
    none was evaluated. The dict is `program`'s."""
    if problem is None and run is None:
        raise UsageError("evolve.best: give problem=NAME or run=RUN_ID")
    reader = _reader(runs_dir)
    if run is not None:
        run_id = _resolved(reader.resolve_run, run, "run")
        p = reader.best(problem=problem, run_id=run_id)
        return program_dict(reader, p) if p is not None else None
    top = problem_best(reader, problem or "")
    return program_dict(reader, top.program, top) if top is not None else None


def program(program_id: str, *, runs_dir: str | os.PathLike | None = None) -> dict:
    """One program by its id (RUN_ID:ITERATION, or a unique prefix as the commands take):
    its row (program_id, run_id, problem, iteration, island, kind, status, score,
    test_score, metrics, test_metrics, artifacts, model, parent_id, code, diff, ...), its
    `files` (path -> text) and `proposal` (how the model was asked, where it was)."""
    reader = _reader(runs_dir)
    p = _resolved(reader.resolve_program, program_id, "program")
    return program_dict(reader, p)


def _reader(runs_dir: str | os.PathLike | None) -> ArchiveReader:
    try:
        return ArchiveReader(_runs_dir(os.fspath(runs_dir) if runs_dir is not None else None))
    except ArchiveError as e:
        raise UsageError(str(e)) from None


def _resolved(resolve, text: str, what: str):
    try:
        found = resolve(text)
    except ArchiveError as e:  # an ambiguous prefix: the candidates, in one line
        raise UsageError(str(e)) from None
    if found is None:
        raise UsageError(f"{text}: no such {what}")
    return found
