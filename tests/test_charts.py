"""The score chart keeps the progress readable whatever the outliers, and the cost axis starts
at $0: the run page's Plotly figures (evolve/web/charts.py) and the pictures (PNG, report)."""

from __future__ import annotations

from evolve.archive import LlmCall, ProgramRow
from evolve.export import pictures
from evolve.web import charts


def _programs() -> list[ProgramRow]:
    """Progress from -1.05 to -0.63, one candidate at -47.65 and one that failed."""
    scores = [-1.05, -1.0, -0.98, -0.9, -0.85, -0.8, -0.7, -0.63]
    rows = [ProgramRow(f"r:{i}", "r", "p", i, 0, "ok", score=s) for i, s in enumerate(scores)]
    rows.append(ProgramRow("r:8", "r", "p", 8, 0, "ok", score=-47.65))
    rows.append(ProgramRow("r:9", "r", "p", 9, 0, "runtime_error"))
    return rows


def test_an_outlier_is_drawn_at_the_bottom_edge_not_allowed_to_flatten_the_curve():
    progs = _programs()
    low, high = charts.score_range(progs)
    assert -1.6 < low < -1.05 and -0.63 < high < -0.5  # -47.65 would make it -50
    fig = charts.score_figure(progs)
    assert fig["layout"]["yaxis"]["range"] == [low, high]
    ok = next(t for t in fig["data"] if t["name"] == "ok")
    i = ok["customdata"].index("r:8")
    assert ok["y"][i] == low and ok["marker"]["symbol"][i] == "triangle-down"
    assert ok["text"][i] == "-47.65"  # its real score, on hover
    failed = next(t for t in fig["data"] if t["name"] == "runtime_error")
    assert failed["y"] == [low]
    assert fig["layout"]["legend"]["orientation"] == "v"  # beside the plot, never over a card


def test_the_picture_uses_the_same_range():
    fig = pictures.score_figure(_programs())
    assert fig.axes[0].get_ylim() == charts.score_range(_programs())


def test_the_cost_axis_starts_at_zero_when_nothing_was_spent():
    call = LlmCall(run_id="r", iteration=1, island=0, edit_format="block", model="local",
                   prompt=[], reply="x", prompt_tokens=10, completion_tokens=5, cost_usd=0.0,
                   latency_s=0.1, created_at=1000.0)  # fmt: skip
    usage = charts.usage_figure([call])
    assert usage["layout"]["yaxis2"]["range"] == [0, 1]
    figure = pictures.usage_figure([call], start=990.0)
    assert figure.axes[1].get_ylim() == (0.0, 1.0)
