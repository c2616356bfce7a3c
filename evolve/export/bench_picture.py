"""`evolve bench`'s picture: the normalised held-out score against LLM calls, the median
over seeds, one line per problem, drawn with matplotlib like a run's pictures (pictures.py).

0 is the seed's held-out score and 100 the best baseline's (evolve/benchmark/normalise.py),
both drawn as guides; a problem with no such scale (binpack: its best baseline is its seed)
has no line, and the legend says why.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from evolve.benchmark.table import ProblemSummary
from evolve.export.pictures import save_png


def bench_figure(summaries: Sequence[ProblemSummary], title: str, calls: int) -> Figure:
    fig = Figure(figsize=(8, 5), dpi=110)
    ax = fig.add_subplot()
    ax.set_title(title.replace("$", r"\$"))
    ax.set_xlabel("LLM calls answered")
    ax.set_ylabel("normalised held-out score\n(median over seeds)")
    ax.grid(alpha=0.3)
    ax.axhline(0, color="#6c757d", lw=0.8, ls="--", label="0: the seed")
    ax.axhline(100, color="#1d3557", lw=0.8, ls="--", label="100: the best baseline")
    last = calls
    for s in summaries:
        name = s.problem.replace("$", r"\$")
        ys = [math.nan if v is None else v for v in s.curve]
        if all(math.isnan(y) for y in ys):
            why = (s.references.no_scale() or "no held-out score").replace("$", r"\$")
            ax.plot([], [], ls="none", label=f"{name}: no line ({why})")
            continue
        last = max(last, len(ys) - 1)
        ax.step(range(len(ys)), ys, where="post", lw=1.8, marker=".", label=name)
    last = max(1, last)
    ax.set_xlim(-0.02 * last, 1.02 * last)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=2, fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def write_bench_curve(
    summaries: Sequence[ProblemSummary], path: Path, title: str, calls: int
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    return save_png(bench_figure(summaries, title, calls), path)
