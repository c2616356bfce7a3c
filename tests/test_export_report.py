"""`evolve archive report`: a real archive, the real command, the HTML read back.

The archive is built with the project's own Archive (no mocks) and holds hostile text
where candidates and models can put it (code, model names, metric names, stop reasons,
artifacts); the report must show it as text, run no script and fetch nothing.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from evolve.archive import Archive, LlmCall, ProgramRow
from evolve.cli import main

T0 = 1_700_000_000.0
RUN = "binpack-20240101-abcdef"
HOSTILE = "</textarea><script>alert(1)</script><img src=x onerror=alert(1)>"
SEED = "def pick(bins, item):\n    return 0\n"
BEST = (
    "def pick(bins, item):\n"
    "    # </script><script>alert(2)</script>\n"
    "    return min(range(len(bins)), key=lambda i: bins[i] - item)\n"
)
MODEL = "gpt-x<b onmouseover=alert(3)>"
VOID = {"meta", "br", "img", "hr", "input", "link", "col", "wbr", "source"}


def _program(a: Archive, run_id: str, it: int, **kw) -> str:
    """Insert a pending program, then record its evaluation, as the controller does."""
    pid = f"{run_id}:{it}"
    done = {k: kw.pop(k) for k in ("status", "score", "metrics", "artifacts") if k in kw}
    p = ProgramRow(pid, run_id, "binpack", it, 0, "pending", code=kw.pop("code", SEED),
                   created_at=T0 + 60 * it, **kw)  # fmt: skip
    a.insert_program(p)
    for k, v in {"status": "ok", **done}.items():
        setattr(p, k, v)
    a.finish_program(p)
    return pid


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """RUN: a seed and 10 candidates, the best 3 edits from the seed (seed -> 2 -> 5 -> 9);
    broken-1: a seed that failed and nothing else."""
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run(RUN, "binpack", "problems/binpack", {}, 12)
    seed = _program(a, RUN, 0, kind="seed", score=1.0, metrics={"waste": 10.0})
    parents = {2: seed, 5: f"{RUN}:2", 9: f"{RUN}:5"}
    for it in range(1, 11):
        call = a.insert_llm_call(LlmCall(
            run_id=RUN, iteration=it, island=0, parent_id=seed, edit_format="diff",
            model=MODEL if it % 2 else "gpt-y", prompt=[], reply="reply", prompt_tokens=1000 * it,
            completion_tokens=100, cost_usd=0.02, latency_s=1.0,
        ))  # fmt: skip
        kw: dict = {"parent_id": parents.get(it, seed), "llm_call_id": call, "edit_kind": "diff",
                    "model": MODEL if it % 2 else "gpt-y", "score": 1.0 + it / 20,
                    "metrics": {"waste": 10.0 - it / 2, "<i>bins</i>": it}}  # fmt: skip
        if it in parents:
            kw["score"] = {2: 1.5, 5: 2.0, 9: 3.0}[it]
        if it == 9:
            kw["code"] = BEST
        if it == 3:
            kw.update(status="runtime_error", score=None, code=HOSTILE,
                      artifacts={"stderr": HOSTILE})  # fmt: skip
        if it == 7:
            kw.update(status="invalid_edit", score=None, code=None)
        _program(a, RUN, it, **kw)
    a.set_test_result(f"{RUN}:5", 1.8, {"waste": 5.0})
    a.set_test_result(f"{RUN}:9", 2.7, {"waste": 3.0, "<i>bins</i>": 9})
    a.set_run_status(RUN, "finished", f"iterations done {HOSTILE}")

    a.create_run("broken-1", "binpack", "problems/binpack", {}, 5)
    _program(a, "broken-1", 0, kind="seed", status="runtime_error", score=None,
             artifacts={"stderr": f"ZeroDivisionError {HOSTILE}"})  # fmt: skip
    a.set_run_status("broken-1", "failed", "the seed failed")
    a.close()
    return runs


class Page(HTMLParser):
    """Start tags, resource references, text, and whether every element was closed."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[str] = []
        self.refs: list[str] = []
        self.text: list[str] = []
        self.open: list[str] = []
        self.mismatched: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action")]
        if tag not in VOID:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v or "" for k, v in attrs if k in ("src", "href", "xlink:href", "action")]

    def handle_endtag(self, tag):
        if self.open and self.open[-1] == tag:
            self.open.pop()
        else:
            self.mismatched.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def report(capsys, runs: Path, run: str, out: Path) -> tuple[int, str, str]:
    code = main(["archive", "report", run, "--out", str(out), "--runs-dir", str(runs)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def parse(html: str) -> Page:
    page = Page()
    page.feed(html)
    page.close()
    assert page.open == [] and page.mismatched == [], (page.open, page.mismatched)
    return page


def assert_offline_and_inert(html: str, page: Page) -> None:
    assert "http://" not in html and "https://" not in html and "//cdn" not in html
    assert all(r.startswith(("#", "data:")) for r in page.refs), page.refs
    styles = re.findall(r"url\(\s*['\"]?([^)'\"]*)", html)
    assert all(s.startswith(("#", "data:")) for s in styles), styles
    assert "script" not in page.tags and "iframe" not in page.tags and "img" not in page.tags
    assert "<script" not in html.lower() and "onerror=" not in html.replace("onerror=alert", "")
    assert "<b onmouseover" not in html


def test_a_run_report_is_one_offline_file_with_everything_escaped(runs, tmp_path, capsys):
    out = tmp_path / "share" / "report.html"
    code, stdout, err = report(capsys, runs, "binpack-2024", out)  # a prefix names the run
    assert code == 0, err
    html = out.read_text("utf-8")
    assert stdout.strip() == f"{out}: {len(html.encode()):,} bytes, opens offline in any browser"
    page = parse(html)
    assert_offline_and_inert(html, page)
    text = "".join(page.text)

    assert "<svg" in html and html.count("<svg") >= 3  # score, lineage, status, usage
    assert f"{RUN}:9" in text  # the best
    lineage = [f"{RUN}:{i}" for i in (0, 2, 5, 9)]
    rows = re.findall(r'<td class="pid">([^<]*)</td>', html)
    assert rows == lineage, rows
    # hostile text shows as text, escaped
    assert html.count("# &lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;") == 2  # diff, code
    assert "<script>alert" not in html
    assert MODEL in text and "&lt;b onmouseover" in html  # a model name, escaped
    assert "<i>bins</i>" in text  # a metric name, escaped
    assert f"iterations done {HOSTILE}" in text  # the stop reason, escaped
    # key figures
    for shown in ("finished", "10 / 12", "2.7", "+2 (+200.0%)", "gpt-y", "$0.2000", "binpack"):
        assert shown in text, shown
    assert "Changes from the seed" in text and "Code of the best program" in text
    assert "evolve 0.1.0" in text and str((runs / "archive.db").resolve()) in text


def test_a_run_with_only_a_failed_seed_still_gets_a_report(runs, tmp_path, capsys):
    out = tmp_path / "broken.html"
    code, _, err = report(capsys, runs, "broken-1", out)
    assert code == 0, err
    html = out.read_text("utf-8")
    page = parse(html)
    assert_offline_and_inert(html, page)
    text = " ".join("".join(page.text).split())
    assert "No valid program" in text and "broken-1:0" in text
    assert f"ZeroDivisionError {HOSTILE}" in "".join(page.text)  # why, as text
    assert "Code of the best program" not in text


def test_an_unknown_run_is_one_line_and_exit_2(runs, tmp_path, capsys):
    out = tmp_path / "nothing.html"
    code, stdout, err = report(capsys, runs, "zzz", out)
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and "zzz" in err and "no such run" in err
    assert not out.exists()


def test_the_run_pictures_are_still_pngs(runs, capsys):
    assert main(["archive", "plot", RUN, "--runs-dir", str(runs)]) == 0
    paths = [Path(line) for line in capsys.readouterr().out.splitlines()]
    assert [p.name for p in paths] == ["score_curve.png", "lineage.png"]
    for p in paths:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 1000
