"""Text for HTML: code and diffs highlighted by Pygments, numbers and times for people.

Pygments' HtmlFormatter escapes every character of its input, so candidate code with
`</textarea><script>` in it comes out as text; the templates autoescape the rest. Control
and invisible format characters (a bidi override reorders a line as shown: "Trojan
Source") are shown as their escapes, `\\u202e`, in code, diffs, file paths, every `{{ value }}`
(`shown`, the templates' finalize) and the charts' text (`shown_data`).
"""

from __future__ import annotations

import datetime as dt
import math
from typing import Any

from markupsafe import Markup, escape
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import DiffLexer, PythonLexer, TextLexer, get_lexer_for_filename
from pygments.util import ClassNotFound

from evolve.inert import visible
from evolve.program_files import FileDiff

_CODE = HtmlFormatter(linenos="table", cssclass="hl", wrapcode=True)
_DIFF = HtmlFormatter(cssclass="hl", wrapcode=True)


def code_html(code: str | None) -> Markup:
    # the formatter escapes its input: what it returns is safe to mark so
    return Markup(highlight(visible(code or ""), PythonLexer(), _CODE))  # noqa: S704


def diff_html(diff: str | None) -> Markup:
    return Markup(highlight(visible(diff or ""), DiffLexer(), _DIFF))  # noqa: S704


def _lexer(path: str) -> Lexer:
    """The lexer a file's name calls for (plain text for a name Pygments does not know)."""
    try:
        return get_lexer_for_filename(path)
    except ClassNotFound:
        return TextLexer()


def _path(path: str) -> str:
    """A file path (the candidate's text) as HTML: escaped, invisible characters shown."""
    return str(escape(visible(path)))


def files_html(files: dict[str, str], anchor: str = "file") -> Markup:
    """A tree's files: the list of their paths, each a link to the file below it under its
    path, highlighted as its name calls for."""
    items, bodies = [], []
    for i, (path, text) in enumerate(files.items(), 1):
        n = text.count("\n") + (not text.endswith("\n") and bool(text))
        items.append(
            f'<li><a href="#{anchor}-{i}">{_path(path)}</a> <span class="lines">{n} line{"s" if n != 1 else ""}</span></li>'
        )
        code = highlight(visible(text), _lexer(path), _CODE)
        bodies.append(
            f'<h3 class="file-path" id="{anchor}-{i}">{_path(path)}</h3><div class="code file">{code}</div>'
        )
    return Markup(f'<ul class="file-list">{"".join(items)}</ul>{"".join(bodies)}')  # noqa: S704


def file_diffs_html(diffs: list[FileDiff]) -> Markup:
    """The diff of two trees, file by file: each file's path, what became of it, its diff."""
    out = [
        f'<h3 class="file-path">{_path(d.path)} <span class="tag change-{d.change}">{d.change}</span></h3>'
        f'<div class="code diff">{highlight(visible(d.diff), DiffLexer(), _DIFF)}</div>'
        for d in diffs
    ]
    return Markup("".join(out))  # noqa: S704


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
