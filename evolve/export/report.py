"""`evolve archive report`: one self-contained HTML file about a run, for a paper review
or a colleague's inbox.

It opens offline with no server: the CSS is inline, the charts are inline SVG drawn by
the same matplotlib code as the run's PNGs (evolve/export/pictures.py), and a
Content-Security-Policy forbids scripts and any outside fetch. Everything read from the
archive is candidate or model text: Jinja2 autoescapes it, Pygments escapes what it
highlights.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from jinja2 import Environment
from markupsafe import Markup
from matplotlib.figure import Figure

import evolve
from evolve.agent import transcript
from evolve.archive import BOARD_CAPTION, ArchiveReader, LlmCall, ProgramRow, RunSummary
from evolve.edits import unified_diff
from evolve.export import pictures
from evolve.export.atomic import replacing
from evolve.export.report_template import CSS, TEMPLATE
from evolve.program_files import entry_name, file_diffs, files_of, has_files
from evolve.web.render import (
    FILTERS,
    code_html,
    delta,
    diff_html,
    file_diffs_html,
    files_html,
    pygments_css,
    shown,
)

_ENV = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True, finalize=shown)
_ENV.filters.update(FILTERS)
_PAGE = _ENV.from_string(TEMPLATE)
_ARTIFACT_CHARS = 4000  # of each artifact of a failed seed: the error, not a whole log


@dataclass
class Step:
    """A lineage table row: a program and how it moved its parent's train score."""

    p: ProgramRow
    change: str


@dataclass
class Chart:
    title: str
    svg: Markup
    wide: bool = False


def write_report(reader: ArchiveReader, run_id: str, out: Path) -> int:
    """Write the report on `run_id` to `out` and return its size in bytes, in one rename:
    a failure or a kill never leaves half a report at `out`, nor anything beside it."""
    run = reader.run(run_id)
    if run is None:
        raise ValueError(f"{run_id}: no such run in {reader.path}")
    data = render_report(reader, run).encode("utf-8")
    out.parent.mkdir(parents=True, exist_ok=True)
    with replacing(out) as f:  # a kill at any moment leaves nothing beside `out`
        f.write(data)
    return len(data)


def render_report(reader: ArchiveReader, run: RunSummary) -> str:
    progs = reader.programs(run.run_id)
    calls = reader.llm_calls(run.run_id)
    best = reader.program(run.best_program_id) if run.best_program_id else None
    seed = reader.program(run.seed_program_id) if run.seed_program_id else None
    chain = list(reversed(reader.lineage(best.program_id))) if best else []
    steps = [
        Step(p, delta(p.score, prev.score) if prev else "")
        for prev, p in zip([None, *chain], chain, strict=False)
    ]
    entry = entry_name(run.problem_dir)  # a one-file program's name beside a tree
    diff = None
    if best is not None and seed is not None and best.program_id != seed.program_id:
        if has_files(seed.code) or has_files(best.code):  # a tree: file by file
            diff = file_diffs_html(file_diffs(seed.code or "", best.code or "", entry))
        else:
            diff = diff_html(
                unified_diff(
                    seed.code or "",
                    best.code or "",
                    f"seed {seed.program_id}",
                    f"best {best.program_id}",
                )
            )
    code = None
    if best is not None:
        tree = has_files(best.code)
        code = files_html(files_of(best.code, entry)) if tree else code_html(best.code)
    return _PAGE.render(
        run=run,
        best=best,
        board=reader.board_scores(run.run_id).get(best.program_id) if best else None,
        place=reader.ranked_best(best) if best else None,
        board_caption=BOARD_CAPTION,
        seed=seed,
        gain=_gain(best.score if best else None, run.seed_score),
        models=_models(calls, progs),
        agents=transcript.run_counts(reader, run.run_id),
        charts=_charts(run, progs, chain, calls),
        metrics=_metrics(best) if best else [],
        steps=steps,
        diff=diff,
        code=code,
        artifacts=_artifacts(seed) if best is None and seed is not None else [],
        css=Markup(CSS + pygments_css()),  # noqa: S704 (our own stylesheet, no archive text)
        version=evolve.__version__,
        archive=str(reader.path.resolve()),
        started=_stamp(run.created_at),
        written=_stamp(dt.datetime.now().timestamp()),
    )


def _charts(
    run: RunSummary, progs: list[ProgramRow], chain: list[ProgramRow], calls: list[LlmCall]
) -> list[Chart]:
    charts: list[tuple[str, Figure, bool]] = []
    if pictures.valid(progs):
        charts.append(("Score per candidate", pictures.score_figure(progs), True))
        lineage = pictures.lineage_figure(progs, chain)
        charts.append(("Parent to child edges, and the lineage of the best", lineage, True))
    if any(p.iteration > 0 for p in progs):
        charts.append(("Candidates by status", pictures.status_figure(progs), False))
    if calls:
        charts.append(("Tokens and cost", pictures.usage_figure(calls, run.created_at), False))
    # matplotlib escapes the text it writes into SVG (status names are the only archive text)
    return [
        Chart(title, Markup(pictures.svg(fig, f"fig{i}")), wide)  # noqa: S704
        for i, (title, fig, wide) in enumerate(charts)
    ]


def _gain(best: float | None, seed: float | None) -> str:
    """The best's train score over the seed's: absolute, and relative when that means
    something (a seed score of 0 has no percentage)."""
    if best is None or seed is None:
        return "–"
    rel = f" ({100.0 * (best - seed) / abs(seed):+.1f}%)" if seed else ""
    return f"{best - seed:+.4g}{rel}"


def _models(calls: list[LlmCall], progs: list[ProgramRow]) -> list[tuple[str, int]]:
    """Models with how many LLM calls each made (programs' models when no call is kept)."""
    counts = Counter(c.model for c in calls) or Counter(p.model for p in progs if p.model)
    return counts.most_common()


def _metrics(best: ProgramRow) -> list[tuple[str, object, object]]:
    names = list(best.metrics) + [k for k in best.test_metrics if k not in best.metrics]
    return [(str(k), best.metrics.get(k), best.test_metrics.get(k)) for k in names]


def _artifacts(seed: ProgramRow) -> list[tuple[str, str]]:
    return [(str(k), str(v)[:_ARTIFACT_CHARS]) for k, v in seed.artifacts.items()]


def _stamp(ts: float) -> str:
    """A time with its zone: a report travels further than its author's time zone."""
    return dt.datetime.fromtimestamp(ts).astimezone().strftime("%Y-%m-%d %H:%M %Z")
