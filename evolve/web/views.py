"""What each page and API answer holds, gathered from the ArchiveReader.

Pages and the JSON API share these functions, so `/runs/X` and `/api/runs/X` cannot
disagree. Unknown ids raise NotFound; the app turns it into a 404 page or JSON.
"""

from __future__ import annotations

from dataclasses import asdict

from evolve.archive import ArchiveReader, ProgramRow, RunSummary
from evolve.archive.rows import public_dict
from evolve.edits import unified_diff
from evolve.web import charts
from evolve.web.render import finite


class NotFound(LookupError):
    """An id the archive does not hold: a 404, never a traceback."""


def run_json(r: RunSummary) -> dict:
    d = asdict(r)
    d.pop("config")
    d["valid_pct"] = r.valid_pct
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
    return finite(
        {
            "score": charts.score_figure(progs),
            "grids": charts.grid_figures(progs, feature_dims(progs)),
            "usage": charts.usage_figure(calls),
            "status": charts.status_figure(progs),
            "latency": charts.latency_figure(calls),
        }
    )


def run_tables(progs: list[ProgramRow]) -> dict:
    """The run page's two tables: its best programs and its latest candidates."""
    ok = sorted(
        (p for p in progs if p.status == "ok" and p.score is not None),
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
    return {
        "program": p,
        "parent": parent,
        "diff": diff or "",
        "call": call,
        "run": run,
        "children": reader.children(p.program_id),
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
