"""Pictures of a run: the score curve, the lineage of the best, statuses and LLM usage.

Each is drawn once as a matplotlib Figure (the Agg backend needs no display) and then
either saved as PNG next to the archive (runs/<run_id>/, so a person can open them
without any server) or turned into inline SVG for the one-file HTML report
(evolve/export/report.py): both outputs share one drawing.
"""

from __future__ import annotations

import io
import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from evolve.archive import ArchiveReader, LlmCall, ProgramRow, ProgramStatus  # noqa: E402
from evolve.web.charts import STATUS_COLORS, best_so_far, score_range  # noqa: E402

# Above this many points a scatter is embedded in SVG as one bitmap, not one node a point.
_RASTER_OVER = 2000
_SVG_META = {"Creator": None, "Date": None, "Format": None, "Type": None}


def write_run_pictures(reader: ArchiveReader, run_id: str) -> list[Path]:
    """The score curve and the lineage of a run as PNG files in runs/<run_id>/."""
    progs = reader.programs(run_id)
    ok = valid(progs)
    if not ok:
        return []
    out_dir = reader.runs_dir / run_id.replace("/", "_")
    out_dir.mkdir(parents=True, exist_ok=True)
    failed = len(progs) - len(ok)
    score = score_figure(progs, f"{run_id}: {len(ok)} valid, {failed} failed or rejected")
    best = max(ok, key=lambda p: p.score or 0.0)
    lineage = lineage_figure(
        progs,
        reader.lineage(best.program_id),
        f"{run_id}: parent -> child edges among valid programs",
    )
    return [
        save_png(score, out_dir / "score_curve.png"),
        save_png(lineage, out_dir / "lineage.png"),
    ]


def valid(progs: Sequence[ProgramRow]) -> list[ProgramRow]:
    return [p for p in progs if p.status == ProgramStatus.OK and p.score is not None]


def save_png(fig: Figure, path: Path) -> Path:
    fig.savefig(path)
    return path


def svg(fig: Figure, prefix: str) -> str:
    """The figure as an <svg> element for an HTML page: text kept as text (small and
    searchable); no XML prolog, DOCTYPE, metadata or namespace URLs (HTML needs none, and
    the report names no outside resource); ids prefixed so figures can share a page."""
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": prefix}):
        fig.savefig(buf, format="svg", metadata=_SVG_META)
    text = buf.getvalue().decode("utf-8")
    text = text[text.index("<svg") :]
    head, _, body = text.partition(">")
    head = re.sub(r'\s+xmlns(:\w+)?="[^"]*"', "", head)
    body = re.sub(r"<metadata>.*?</metadata>\s*", "", body, flags=re.S)
    return re.sub(r'(\bid="|href="#|url\(#)', rf"\g<1>{prefix}-", f"{head}>{body}")


def _axes(title: str | None, x: str, y: str) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(8, 4.5), dpi=110)
    ax = fig.add_subplot()
    if title:
        ax.set_title(_plain(title))
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.grid(alpha=0.3)
    return fig, ax


def _y(v: float | None) -> float:
    """A score to plot (typed: `valid` programs have one; a missing one plots nothing)."""
    return math.nan if v is None else v


def _plain(text: str) -> str:
    """`text` as matplotlib should print it: a `$` starts no math formula."""
    return text.replace("$", r"\$")


def score_figure(progs: Sequence[ProgramRow], title: str | None = None) -> Figure:
    """Every candidate by iteration coloured by status (those with no score at the floor
    of the axis), the best-so-far train score, and the held-out scores of the bests."""
    ok = valid(progs)
    fig, ax = _axes(title, "iteration", "score (higher is better)")
    low, high = score_range(list(progs))  # an outlier far below: drawn at the bottom edge
    by_status: dict[ProgramStatus, list[ProgramRow]] = {}
    for p in progs:
        by_status.setdefault(p.status, []).append(p)
    many = len(progs) > _RASTER_OVER
    for status in sorted(by_status, key=lambda s: (s != ProgramStatus.OK, s)):
        ps = by_status[status]
        inside = [p for p in ps if p.score is None or p.score >= low]
        outside = [p for p in ps if p.score is not None and p.score < low]
        for group, marker, label in (
            (inside, "o" if status == ProgramStatus.OK else "x", f"{status} ({len(ps)})"),
            (outside, "v", f"{status} below the axis ({len(outside)})"),
        ):
            if not group:
                continue
            ax.scatter(
                [p.iteration for p in group],
                [low if p.score is None else max(p.score, low) for p in group],
                s=14 if status == ProgramStatus.OK else 18,
                marker=marker,
                color=STATUS_COLORS.get(status, "#444444"),
                alpha=0.6,
                label=_plain(label),
                rasterized=many,
                clip_on=False,
            )
    xs, ys = best_so_far(list(progs))
    ax.step(xs, ys, where="post", color="#e63946", lw=1.8, label="best so far (train)")
    tested = [p for p in ok if p.test_score is not None]
    if tested:
        ax.scatter(
            [p.iteration for p in tested],
            [max(_y(p.test_score), low) for p in tested],
            marker="D",
            s=18,
            alpha=0.8,
            color="#1d3557",
            label="held-out score\nof a new best",
        )
    ax.set_ylim(low, high)
    # beside the axes: the curve rises to the top right, failures line the bottom
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def lineage_figure(
    progs: Sequence[ProgramRow], chain: Sequence[ProgramRow], title: str | None = None
) -> Figure:
    """Parent -> child edges among valid programs, and over them `chain`: the lineage of
    the best (ArchiveReader.lineage of its id)."""
    ok = valid(progs)
    by_id = {p.program_id: p for p in ok}
    many = len(ok) > _RASTER_OVER
    fig, ax = _axes(title, "iteration", "score")
    for p in ok:
        parent = by_id.get(p.parent_id or "")
        if parent is not None:
            ax.plot(
                [parent.iteration, p.iteration],
                [_y(parent.score), _y(p.score)],
                color="0.8",
                lw=0.7,
                zorder=1,
                rasterized=many,
            )
    ax.scatter(
        [p.iteration for p in ok],
        [_y(p.score) for p in ok],
        s=10,
        color="C0",
        zorder=2,
        rasterized=many,
    )
    steps = [(c.iteration, score) for c in chain if (score := c.score) is not None]
    if steps:
        ax.plot(
            [it for it, _ in steps],
            [score for _, score in steps],
            "-o",
            color="C3",
            ms=4,
            zorder=3,
            label=f"lineage of the best ({len(steps)} programs)",
        )
        ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    return fig


def status_figure(progs: Sequence[ProgramRow]) -> Figure:
    """How many candidates (the seed excluded) ended in each status, most common on top."""
    counts = Counter(p.status for p in progs if p.iteration > 0)
    names = sorted(counts, key=lambda s: (counts[s], s))
    fig, ax = _axes(None, "candidates", "")
    fig.set_size_inches(6, 0.9 + 0.35 * max(3, len(names)))
    bars = ax.barh(
        [_plain(n) for n in names],
        [counts[n] for n in names],
        color=[STATUS_COLORS.get(n, "#444444") for n in names],
    )
    ax.bar_label(bars, padding=3, fontsize=8)
    ax.margins(x=0.12)
    fig.tight_layout()
    return fig


def usage_figure(calls: Sequence[LlmCall], start: float) -> Figure:
    """Cumulative tokens (left axis) and dollars (right axis) against wall-clock time."""
    ordered = sorted(calls, key=lambda c: (c.created_at, c.call_id))
    span = max((c.created_at - start for c in ordered), default=0.0)
    unit, per = ("hours", 3600.0) if span > 3 * 3600 else ("minutes", 60.0)
    xs = [max(0.0, c.created_at - start) / per for c in ordered]
    tokens, cost, t, usd = [], [], 0, 0.0
    for c in ordered:
        t += c.prompt_tokens + c.completion_tokens
        usd += c.cost_usd
        tokens.append(t)
        cost.append(usd)
    fig, ax = _axes(None, f"{unit} since the run began", "tokens (cumulative)")
    fig.set_size_inches(6, 3.6)
    ax.plot(xs, tokens, color="C0", drawstyle="steps-post", label="tokens")
    ax2 = ax.twinx()
    ax2.plot(xs, cost, color="C1", ls="--", drawstyle="steps-post", label="cost")
    ax2.set_ylabel("cost in USD (cumulative)")
    ax2.set_ylim(0, max(cost, default=0.0) * 1.05 or 1.0)  # from $0; nothing spent: 0 to 1
    ax.legend(
        ax.get_lines() + ax2.get_lines(), ["tokens", "cost (USD)"], loc="upper left", fontsize=8
    )
    fig.tight_layout()
    return fig
