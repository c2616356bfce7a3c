"""The run page's figures as Plotly JSON (data + layout), drawn by the plotly.js that ships
inside the plotly package and is served locally.

Built from plain dicts rather than plotly's Python figure classes: a figure over 10,000
points is then one list comprehension, and the page can extend the same traces live.
Point labels are program ids and statuses only, never candidate text.
"""

from __future__ import annotations

import datetime as dt
import re
import statistics
from collections import Counter, defaultdict

from evolve.archive import LlmCall, ProgramRow, ProgramStatus, RunStatus
from evolve.archive.rows import CALL_CATEGORIES

STATUS_COLORS: dict[str, str] = {  # by status (a ProgramStatus is its string)
    ProgramStatus.OK: "#2a9d8f",
    ProgramStatus.PENDING: "#adb5bd",
    ProgramStatus.INVALID_EDIT: "#e9c46a",
    ProgramStatus.SYNTAX_ERROR: "#f4a261",
    ProgramStatus.RUNTIME_ERROR: "#e76f51",
    ProgramStatus.TIMEOUT: "#9b5de5",
    ProgramStatus.INVALID: "#d62828",
    ProgramStatus.DUPLICATE: "#8d99ae",
    ProgramStatus.REJECTED: "#6c757d",
    ProgramStatus.SANDBOX_ERROR: "#000000",
}

# Past this many points a scatter is drawn with WebGL (SVG slows down); below, SVG is
# quicker to first draw (no GL context to start, which is slow without a GPU).
GL_OVER = 5000

# A run's status, for its badge.
RUN_COLORS: dict[str, str] = {
    RunStatus.RUNNING: "#198754",
    RunStatus.FINISHED: "#1d3557",
    RunStatus.STOPPED: "#6c757d",
    RunStatus.INTERRUPTED: "#e76f51",
    RunStatus.FAILED: "#d62828",
}

_LAYOUT = {
    "margin": {"l": 55, "r": 15, "t": 35, "b": 45},
    "height": 340,
    "legend": {"orientation": "h", "y": -0.2},
    "paper_bgcolor": "rgba(0,0,0,0)",
    "plot_bgcolor": "#fafafa",
}


def _layout(title: str, x: str, y: str, **extra) -> dict:
    return {
        **_LAYOUT,
        "title": {"text": title, "font": {"size": 14}},
        "xaxis": {"title": {"text": x}},
        "yaxis": {"title": {"text": y}},
        **extra,
    }


def score_figure(progs: list[ProgramRow]) -> dict:
    """Every candidate over iterations coloured by status (failures at the floor of the
    axis), the best-so-far line, and held-out scores of the bests."""
    ok = [p for p in progs if p.status == ProgramStatus.OK and p.score is not None]
    low, high = score_range(progs)
    traces: list[dict] = []
    by_status: dict[str, list[ProgramRow]] = defaultdict(list)
    for p in progs:
        by_status[p.status].append(p)
    for status, ps in sorted(by_status.items(), key=lambda kv: kv[0] != ProgramStatus.OK):
        traces.append(
            {
                "type": "scattergl" if len(progs) > GL_OVER else "scatter",
                "mode": "markers",
                "name": status,
                "x": [p.iteration for p in ps],
                "y": [low if p.score is None else max(p.score, low) for p in ps],
                "customdata": [p.program_id for p in ps],
                "text": ["-" if p.score is None else f"{p.score:.6g}" for p in ps],
                "marker": {
                    "size": 6 if status == ProgramStatus.OK else 5,
                    "color": STATUS_COLORS.get(status, "#444"),
                    "opacity": 0.75,
                    "symbol": [_symbol(status, p.score, low) for p in ps],
                },
                "hovertemplate": "%{customdata}<br>iteration %{x}<br>score %{text}<extra>"
                + status
                + "</extra>",
            }
        )
    xs, ys = best_so_far(progs)
    traces.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": "best so far",
            "x": xs,
            "y": ys,
            "line": {"shape": "hv", "color": "#e63946", "width": 2},
        }
    )
    tested = [p for p in ok if p.test_score is not None]
    traces.append(
        {
            "type": "scatter",
            "mode": "markers",
            "name": "held-out (test)",
            "x": [p.iteration for p in tested],
            "y": [max(p.test_score, low) for p in tested if p.test_score is not None],
            "customdata": [p.program_id for p in tested],
            "text": [f"{p.test_score:.6g}" for p in tested],
            "marker": {"symbol": "diamond", "size": 9, "color": "#1d3557"},
            "hovertemplate": "%{customdata}<br>held-out %{text}<extra></extra>",
        }
    )
    layout = _layout("Score per candidate", "iteration", "score", legend=_SIDE_LEGEND)
    layout["yaxis"]["range"] = [low, high]
    return {"data": traces, "layout": layout}


# beside the plot, not under it: a long legend (nine statuses) never runs into what follows
_SIDE_LEGEND = {"orientation": "v", "x": 1.02, "y": 1, "yanchor": "top", "font": {"size": 10}}


def _symbol(status: str, score: float | None, low: float) -> str:
    """A failure's cross; an outlier drawn at the bottom edge points down, off the axis."""
    if status != ProgramStatus.OK:
        return "x"
    return "triangle-down" if score is not None and score < low else "circle"


def score_range(progs: list[ProgramRow]) -> tuple[float, float]:
    """The score axis: every best so far and the bulk of the valid scores. A score far
    below the rest (one candidate at -47 among scores near -1) would flatten the progress
    into a line: it is drawn at the bottom edge instead, as are candidates with no score."""
    scores = sorted(p.score for p in progs if p.status == ProgramStatus.OK and p.score is not None)
    if not scores:
        return (-1.0, 1.0)
    low = scores[0]
    if len(scores) >= 4:
        q1, _, q3 = statistics.quantiles(scores, n=4)
        low = max(low, q1 - 1.5 * (q3 - q1))  # Tukey's fence for an outlier
    low = min([low, *best_so_far(progs)[1][:1]])  # the first best (the seed's) stays in view
    pad = (scores[-1] - low) * 0.06 or abs(low) * 0.06 or 1.0
    return (low - pad, scores[-1] + pad)


def best_so_far(progs: list[ProgramRow]) -> tuple[list[int], list[float]]:
    best: float | None = None
    xs, ys = [], []
    for p in sorted(progs, key=lambda p: p.iteration):
        if (
            p.status == ProgramStatus.OK
            and p.score is not None
            and (best is None or p.score > best)
        ):
            best = p.score
        if best is not None:
            xs.append(p.iteration)
            ys.append(best)
    return xs, ys


def grid_figures(progs: list[ProgramRow], dims: list[str]) -> list[dict]:
    """One heat map per island: the best score in each MAP-Elites cell of the first two
    feature dimensions (cells are stored as `i-j-...`)."""
    cells: dict[int, dict[tuple[int, int], float]] = defaultdict(dict)
    size = [1, 1]
    for p in progs:
        if p.status != ProgramStatus.OK or p.score is None or not p.cell:
            continue
        idx = [int(x) for x in re.split(r"[-,]", p.cell) if x.strip().isdigit()]
        if not idx:
            continue
        i, j = idx[0], idx[1] if len(idx) > 1 else 0
        size = [max(size[0], i + 1), max(size[1], j + 1)]
        cur = cells[p.island].get((i, j))
        if cur is None or p.score > cur:
            cells[p.island][(i, j)] = p.score
    xname = dims[0] if dims else "feature 1"
    yname = dims[1] if len(dims) > 1 else "feature 2"
    figs = []
    for island in sorted(cells):
        z = [[cells[island].get((i, j)) for i in range(size[0])] for j in range(size[1])]
        figs.append(
            {
                "data": [
                    {
                        "type": "heatmap",
                        "z": z,
                        "colorscale": "Viridis",
                        "hovertemplate": f"{xname} bin %{{x}}<br>{yname} bin %{{y}}"
                        "<br>best %{z}<extra></extra>",
                    }
                ],
                "layout": _layout(
                    f"Island {island}: {len(cells[island])} cells", xname, yname, height=280
                ),
            }
        )
    return figs


def usage_figure(calls: list[LlmCall]) -> dict:
    """Cumulative tokens (left axis) and dollars (right axis) over the run's wall time."""
    ordered = sorted(calls, key=lambda c: (c.created_at, c.call_id))
    tokens, cost, t, c = [], [], 0, 0.0
    for call in ordered:
        t += call.prompt_tokens + call.completion_tokens
        c += call.cost_usd
        tokens.append(t)
        cost.append(round(c, 6))
    xs = [
        dt.datetime.fromtimestamp(call.created_at).isoformat(timespec="seconds") for call in ordered
    ]
    return {
        "data": [
            {"type": "scatter", "mode": "lines", "name": "tokens", "x": xs, "y": tokens},
            {
                "type": "scatter",
                "mode": "lines",
                "name": "$",
                "x": xs,
                "y": cost,
                "yaxis": "y2",
                "line": {"dash": "dot"},
            },
        ],
        "layout": _layout(
            "Tokens and cost over time (cumulative)",
            "time",
            "tokens",
            yaxis2={
                "title": {"text": "$"},
                "overlaying": "y",
                "side": "right",
                "rangemode": "nonnegative",
                "tickprefix": "$",
                "automargin": True,  # the right-hand labels stay inside the figure
                # nothing spent (a local model): 0 to 1, never an axis around 0
                **({} if any(cost) else {"range": [0, 1]}),
            },
        ),
    }


def status_figure(progs: list[ProgramRow], rejected: int = 0) -> dict:
    """Candidates by status; beside them (hatched: not statuses) the proposals rejected as
    repeats of a program (never candidates) and the candidates made by repairs."""
    counts = Counter(p.status for p in progs if p.iteration > 0)
    names = sorted(counts, key=lambda s: -counts[s])
    repairs = sum(p.kind == "repair" for p in progs)
    data: list[dict] = [
        {
            "type": "bar",
            "name": "candidates by status",
            "x": names,
            "y": [counts[n] for n in names],
            "marker": {"color": [STATUS_COLORS.get(n, "#444") for n in names]},
        }
    ]
    if rejected or repairs:
        data.append(
            {
                "type": "bar",
                "name": "beside them",
                "x": ["rejected proposals", "repairs"],
                "y": [rejected, repairs],
                "marker": {
                    "color": [CALL_COLORS["rejected duplicate"], CALL_COLORS["repair"]],
                    "pattern": {"shape": "/"},
                },
                "hovertemplate": "%{x}: %{y}<extra></extra>",
            }
        )
    return {
        "data": data,
        "layout": {
            **_layout("Status of candidates", "status", "candidates", showlegend=False),
            "xaxis": {"title": {"text": "status"}, "automargin": True},
        },
    }


# The colour of each kind of LLM call (reader.CALL_CATEGORIES).
CALL_COLORS = {
    "mutation": "#457b9d",
    "crossover": "#9b5de5",
    "repair": "#f4a261",
    "resample": "#00b4d8",
    "meta": "#2a9d8f",
    "agent": "#e76f51",
    "rejected duplicate": "#8d99ae",
    "rejected": "#6c757d",
    "failed attempt": "#d62828",
    "not recorded": "#adb5bd",
    "other": "#444444",
}


def calls_figure(calls: list[LlmCall]) -> dict:
    """Every LLM call over the run's wall time at the iteration it served, coloured by what
    it was for and what became of it (a rejected reply sits below its iteration's kept one)."""
    by_kind: dict[str, list[LlmCall]] = defaultdict(list)
    for call in calls:
        by_kind[call.category].append(call)
    traces = []
    for kind in CALL_CATEGORIES:
        cs = by_kind.get(kind)
        if not cs:
            continue
        traces.append(
            {
                "type": "scattergl" if len(calls) > GL_OVER else "scatter",
                "mode": "markers",
                "name": kind,
                "x": [
                    dt.datetime.fromtimestamp(c.created_at).isoformat(timespec="seconds")
                    for c in cs
                ],
                "y": [c.iteration for c in cs],
                "text": [
                    f"call {c.call_id}"
                    + (f", T={c.temperature:.2g}" if isinstance(c.temperature, int | float) else "")
                    for c in cs
                ],
                "marker": {
                    "size": 6,
                    "color": CALL_COLORS[kind],
                    "opacity": 0.8,
                    "symbol": "x"
                    if kind in ("rejected duplicate", "rejected", "failed attempt")
                    else "circle",
                },
                "hovertemplate": "%{text}<br>iteration %{y}<br>%{x}<extra>" + kind + "</extra>",
            }
        )
    return {"data": traces, "layout": _layout("LLM calls over time", "time", "iteration")}


def latency_figure(calls: list[LlmCall]) -> dict:
    by_model: dict[str, list[LlmCall]] = defaultdict(list)
    for call in calls:
        by_model[call.model].append(call)
    return {
        "data": [
            {
                "type": "scattergl" if len(calls) > GL_OVER else "scatter",
                "mode": "markers",
                "name": model,
                "x": [c.iteration for c in cs],
                "y": [round(c.latency_s, 3) for c in cs],
                "marker": {"size": 4, "opacity": 0.6},
            }
            for model, cs in sorted(by_model.items())
        ],
        "layout": _layout("LLM latency", "iteration", "seconds"),
    }


def lineage_figure(chain: list[ProgramRow]) -> dict:
    """Score along a lineage, seed first."""
    ordered = list(reversed(chain))
    return {
        "data": [
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": "train",
                "x": [p.iteration for p in ordered],
                "y": [p.score for p in ordered],
                "customdata": [p.program_id for p in ordered],
                "hovertemplate": "%{customdata}<br>score %{y}<extra></extra>",
            },
            {
                "type": "scatter",
                "mode": "markers",
                "name": "held-out",
                "x": [p.iteration for p in ordered if p.test_score is not None],
                "y": [p.test_score for p in ordered if p.test_score is not None],
                "marker": {"symbol": "diamond", "size": 9},
            },
        ],
        "layout": _layout("Score along the lineage", "iteration", "score", height=300),
    }


def _label(text: str) -> str:
    """A name for a legend: Plotly reads `<...>` in it as its own HTML, so none is left."""
    return text.replace("<", "‹").replace(">", "›").replace("&", "+")


def bench_figure(curves: dict[str, list[float | None]]) -> dict:
    """A benchmark's normalised held-out score against LLM calls (median over seeds), one
    line per problem, with the seed (0) and the best program the folder ships (100) as guides."""
    length = max((len(c) for c in curves.values()), default=1)
    guides = [
        {
            "type": "scatter",
            "mode": "lines",
            "name": name,
            "x": [0, max(1, length - 1)],
            "y": [y, y],
            "line": {"dash": "dash", "width": 1, "color": color},
            "hoverinfo": "skip",
        }
        for name, y, color in (
            ("0: the seed", 0, "#6c757d"),
            ("100: best shipped program", 100, "#1d3557"),
        )
    ]
    lines = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "line": {"shape": "hv"},
            "name": _label(problem),
            "x": list(range(len(curve))),
            "y": curve,
            "hovertemplate": "call %{x}: %{y:.1f}<extra>%{fullData.name}</extra>",
        }
        for problem, curve in curves.items()
    ]
    return {
        "data": lines + guides,
        "layout": _layout(
            "Normalised held-out score (median over seeds)",
            "LLM calls answered",
            "normalised held-out score",
        ),
    }
