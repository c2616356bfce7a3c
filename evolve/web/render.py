"""Text for HTML: code and diffs highlighted by Pygments, numbers and times for people.

Pygments' HtmlFormatter escapes every character of its input, so candidate code with
`</textarea><script>` in it comes out as text; the templates autoescape the rest. Control
and invisible format characters (a bidi override reorders a line as shown: "Trojan
Source") are shown as their escapes, `\\u202e`, in code, diffs, every `{{ value }}`
(`shown`, the templates' finalize) and the charts' text (`shown_data`).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import DiffLexer, PythonLexer

from evolve.inert import visible

_CODE = HtmlFormatter(linenos="table", cssclass="hl", wrapcode=True)
_DIFF = HtmlFormatter(cssclass="hl", wrapcode=True)


def code_html(code: str | None) -> Markup:
    # the formatter escapes its input: what it returns is safe to mark so
    return Markup(highlight(visible(code or ""), PythonLexer(), _CODE))  # noqa: S704


def diff_html(diff: str | None) -> Markup:
    return Markup(highlight(visible(diff or ""), DiffLexer(), _DIFF))  # noqa: S704


def shown(v: Any) -> Any:
    """A template value as shown: text with its invisible characters escaped (Markup stays
    Markup: escaping them adds no HTML), anything else as it is."""
    if isinstance(v, Markup):
        return Markup(visible(str(v)))  # noqa: S704
    return visible(v) if isinstance(v, str) else v


def shown_data(v: Any) -> Any:
    """A chart's data with every string `shown` (hover text, names, labels), recursively."""
    if isinstance(v, str):
        return visible(v)
    if isinstance(v, dict):
        return {shown_data(k): shown_data(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [shown_data(x) for x in v]
    return v


def pygments_css() -> str:
    return _CODE.get_style_defs(".hl")


def finite(v: Any) -> Any:
    """`v` with NaN and infinities as None, recursively: JSON has no such numbers."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): finite(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [finite(x) for x in v]
    return v


def num(v: Any, digits: int = 6) -> str:
    if v is None:
        return "–"
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    if isinstance(v, float) and not math.isfinite(v):
        return str(v)
    return f"{v:.{digits}g}"


def pct(v: float | None) -> str:
    return "–" if v is None else f"{v:.0f}%"


def usd(v: float | None) -> str:
    return "–" if v is None else f"${v:.4f}" if v < 1 else f"${v:.2f}"


def when(ts: float | None) -> str:
    if not ts:
        return "–"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def duration(s: float | None) -> str:
    if s is None:
        return "–"
    s = int(s)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s // 3600}h {s % 3600 // 60:02d}m"


def delta(child: float | None, parent: float | None) -> str:
    if child is None or parent is None:
        return ""
    d = child - parent
    return f"{d:+.4g}"


FILTERS = {"num": num, "pct": pct, "usd": usd, "when": when, "duration": duration}
