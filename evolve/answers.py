"""A program as plain data, as `evolve archive show/best --json` print it and the Python API
returns it (evolve/reading.py): its row, its files, and for a cross-run answer its scores on
the archive's leaderboard data (evolve/pipeline/leaderboard.py). No display code: the command line's
views (evolve/cli/) and the API share it."""

from __future__ import annotations

from evolve.agent import transcript
from evolve.archive import BOARD_CAPTION, ArchiveReader, ProgramRow, Ranked
from evolve.archive.rows import public_dict
from evolve.program_files import FALLBACK_ENTRY, entry_name, files_of, has_files

RANKED_BY = f"leaderboard_score: {BOARD_CAPTION}"
UNRANKED = "score: its own run's data (unranked: no leaderboard score, not comparable across runs)"


def program_entry(reader: ArchiveReader, p: ProgramRow) -> str:
    """What a one-file program's file is called: its run's problem's entry. A tree names
    its own files, so its problem folder is not read."""
    if has_files(p.code):
        return FALLBACK_ENTRY
    run = reader.run(p.run_id)
    return entry_name(run.problem_dir) if run is not None else FALLBACK_ENTRY


def files_json(reader: ArchiveReader, p: ProgramRow) -> dict[str, str] | None:
    """`files` beside `code`: path -> text (None: the program has no code)."""
    return files_of(p.code, program_entry(reader, p)) if p.code is not None else None


def board_fields(r: Ranked) -> dict:
    """What a program of a cross-run answer has beside its row."""
    b = r.board
    return {
        "leaderboard_status": b.status if b else None,
        "leaderboard_score": b.score if b else None,
        "leaderboard_test_score": b.test_score if b else None,
        "ranked_by": RANKED_BY if b and b.score is not None else UNRANKED,
    }


def problem_best(reader: ArchiveReader, problem: str) -> Ranked | None:
    """The problem's best on the leaderboard data; else, unranked, by its own run's score
    (with its code: a listing's rows have none)."""
    best = reader.board_best(problem)
    if best is None:
        unranked = reader.unranked(problem, 1)
        best = unranked[0] if unranked else None
    whole = reader.program(best.program.program_id) if best is not None else None
    return Ranked(whole, best.board) if best is not None and whole is not None else None


def program_dict(
    reader: ArchiveReader, p: ProgramRow, ranked: Ranked | None = None, proposal: dict | None = None
) -> dict:
    """The program's row, its `files`, its leaderboard fields when `ranked`, and how it was
    proposed (the call, the decision, the rejected replies; read here unless given), and an
    agent's transcript (`agent`) for a program an agent made."""
    how = proposal if proposal is not None else reader.proposal(p)
    agent = transcript.of_program(reader, p)
    return {
        **public_dict(p),
        "files": files_json(reader, p),
        **(board_fields(ranked) if ranked is not None else {}),
        **({"proposal": how} if how else {}),
        **({"agent": agent.to_json()} if agent is not None else {}),
    }
