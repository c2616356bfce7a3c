"""What each page and API answer holds, gathered from the ArchiveReader.

Pages and the JSON API share these functions, so `/runs/X` and `/api/runs/X` cannot
disagree. Unknown ids raise NotFound; the app turns it into a 404 page or JSON.
"""

from __future__ import annotations

from dataclasses import asdict

from evolve.agent import command_view, transcript
from evolve.archive import (
    BOARD_CAPTION,
    ArchiveReader,
    CallOutcome,
    ProgramRow,
    ProgramStatus,
    Ranked,
    RunSummary,
)
from evolve.archive.rows import public_dict
from evolve.archive.summaries import BenchSummary
from evolve.benchmark.record import from_rows
from evolve.benchmark.table import ProblemSummary
from evolve.edits import unified_diff
from evolve.program_files import FALLBACK_ENTRY, entry_name, file_diffs, files_of, has_files
from evolve.web import charts
from evolve.web.baselines import Baselines
from evolve.web.render import finite


class NotFound(LookupError):
    """An id the archive does not hold: a 404, never a traceback."""


def run_json(r: RunSummary) -> dict:
    d = asdict(r)
    d.pop("config")
    d["valid_pct"] = r.valid_pct
    d["progress"] = r.progress
    d["duration_s"] = r.duration_s
    d["tokens"] = r.prompt_tokens + r.completion_tokens
    return finite(d)


def program_json(p: ProgramRow, code: bool = False) -> dict:
    return finite(public_dict(p, code=code))


def get_run(reader: ArchiveReader, run_id: str) -> RunSummary:
    run = reader.run(run_id)
    if run is None:
        raise NotFound(f"no run {run_id!r} in this archive")
    return run


def get_program(reader: ArchiveReader, program_id: str) -> ProgramRow:
    p = reader.program(program_id)
    if p is None:
        raise NotFound(f"no program {program_id!r} in this archive")
    return p


def feature_dims(progs: list[ProgramRow]) -> list[str]:
    """The MAP-Elites dimensions, in cell order: the keys a program's features were stored
    under (the controller writes them in the problem's dimension order)."""
    for p in progs:
        if p.features:
            return list(p.features)
    return []


def run_figures(reader: ArchiveReader, run: RunSummary, progs: list[ProgramRow]) -> dict:
    calls = reader.llm_calls(run.run_id)
    rejected = sum(c.outcome == CallOutcome.REJECTED_DUPLICATE for c in calls)
    return finite(
        {
            "score": charts.score_figure(progs),
            "grids": charts.grid_figures(progs, feature_dims(progs)),
            "usage": charts.usage_figure(calls),
            "status": charts.status_figure(progs, rejected),
            "latency": charts.latency_figure(calls),
            "calls": charts.calls_figure(calls),
        }
    )


def run_search(reader: ArchiveReader, run: RunSummary) -> dict:
    """What the search did in a run: the status breakdown with rejected proposals and
    repairs, the LLM calls by purpose, outcome and model (with the bandit's reward proxy),
    the meta-notes and the search decisions. Notes are model text: shown as text."""
    counts = reader.call_counts(run.run_id)
    with_status = reader.status_counts(run.run_id)
    return finite(
        {
            "statuses": with_status,
            "rejected": counts.rejected,
            "repairs": counts.repairs,
            "repairs_ok": counts.repairs_ok,
            "calls": {
                "answered": counts.answered,
                "failed": counts.failed,
                "rejected": counts.rejected,
                "by_purpose": counts.by_purpose,
                "by_outcome": counts.by_outcome,
                "by_model": [
                    {**asdict(m), "reward": m.reward} for m in reader.model_use(run.run_id)
                ],
            },
            "notes": [asdict(n) for n in reader.meta_notes(run.run_id)],
            "decisions": [asdict(d) for d in reader.decisions(run.run_id)],
        }
    )


def run_tables(progs: list[ProgramRow]) -> dict:
    """The run page's two tables: its best programs and its latest candidates."""
    ok = sorted(
        (p for p in progs if p.status == ProgramStatus.OK and p.score is not None),
        key=lambda p: (-(p.score or 0.0), p.iteration),
    )
    return {"best": ok[:25], "recent": list(reversed(progs[-50:])), "count": len(progs)}


def program_detail(reader: ArchiveReader, program_id: str) -> dict:
    p = get_program(reader, program_id)
    parent = reader.program(p.parent_id) if p.parent_id else None
    diff = p.diff
    if parent is not None and parent.code is not None and p.code is not None:
        diff = unified_diff(parent.code, p.code, parent.program_id, p.program_id)
    call = reader.llm_call(p.llm_call_id) if p.llm_call_id is not None else None
    run = reader.run(p.run_id)
    entry = entry_name(run.problem_dir) if run is not None else FALLBACK_ENTRY  # one file's name
    diffs = None
    if parent is not None and parent.code is not None and p.code is not None:
        if has_files(p.code) or has_files(parent.code):
            diffs = file_diffs(parent.code, p.code, entry)
    return {
        "program": p,
        "parent": parent,
        "files": files_of(p.code, entry) if has_files(p.code) else None,  # a tree's, shown
        "files_map": files_of(p.code, entry) if p.code is not None else None,  # the API's
        "file_diffs": diffs,  # None: one-file programs, `diff` as it always was
        "diff": diff or "",
        "call": call,
        "rejected": reader.rejected_calls(p.run_id, p.iteration) if p.iteration > 0 else [],
        "run": run,
        "children": reader.children(p.program_id),
        "agent": transcript.of_program(reader, p),  # None: not made by an agent's turns
        "command": command_view.of_program(reader, p),  # None: not by --proposer command
    }


def lineage(reader: ArchiveReader, program_id: str) -> list[ProgramRow]:
    get_program(reader, program_id)
    return reader.lineage(program_id)


def lineage_json(chain: list[ProgramRow]) -> list[dict]:
    out = []
    for i, p in enumerate(chain):
        parent = chain[i + 1] if i + 1 < len(chain) else None
        d = program_json(p)
        d["score_change"] = (
            None
            if parent is None or p.score is None or parent.score is None
            else finite(p.score - parent.score)
        )
        out.append(d)
    return out


def leaderboard(reader: ArchiveReader, name: str, scorer: Baselines, limit: int = 50) -> dict:
    """A problem's leaderboard: its programs across runs ranked by their score on the
    archive's leaderboard data, those that have none apart (unranked), and the folder's
    baselines scored under the same leaderboard seed (on the public data, and said so, where
    no run has drawn one yet)."""
    runs = reader.runs(problem=name)
    if not runs:
        raise NotFound(f"no problem {name!r} in this archive")
    seed = reader.leaderboard_seed(name)
    return {
        "name": name,
        "runs": runs,
        "ranked": reader.ranked(name, limit),
        "unranked": reader.unranked(name, limit),
        "baselines": scorer.scores(runs[-1].problem_dir, seed),
        "baselines_data": "leaderboard" if seed is not None else "public",
        "caption": BOARD_CAPTION,
    }


def ranked_json(r: Ranked) -> dict:
    """A program of a leaderboard: its own run's fields, and its leaderboard scores."""
    b = r.board
    return finite(
        {
            **public_dict(r.program, code=False),
            "leaderboard_status": b.status if b else None,
            "leaderboard_score": b.score if b else None,
            "leaderboard_test_score": b.test_score if b else None,
        }
    )


def leaderboard_json(board: dict) -> dict:
    return finite(
        {
            "problem": board["name"],
            "ranked_by": f"leaderboard_score: {board['caption']}",
            "programs": [ranked_json(r) for r in board["ranked"]],
            "unranked": [ranked_json(r) for r in board["unranked"]],
            "baselines": [b.__dict__ for b in board["baselines"]],
            "baselines_data": board["baselines_data"],
        }
    )


def bench(reader: ArchiveReader, bench_id: str) -> tuple[BenchSummary, list[ProblemSummary]]:
    """A benchmark and its summaries per problem, from its stored rows alone."""
    info = next((b for b in reader.benches() if b.bench_id == bench_id), None)
    if info is None:
        raise NotFound(f"no benchmark {bench_id!r} in this archive")
    return info, from_rows(reader.bench_runs(bench_id))


def bench_json(info: BenchSummary, summaries: list[ProblemSummary]) -> dict:
    return finite({**asdict(info), "problems": [s.to_json() for s in summaries]})


def bench_figure(summaries: list[ProblemSummary]) -> dict:
    """The curves by problem; a problem with no scale says so in its legend entry."""
    curves = {
        s.problem if s.references.no_scale() is None else f"{s.problem} (no scale)": s.curve
        for s in summaries
    }
    return finite(charts.bench_figure(curves))
