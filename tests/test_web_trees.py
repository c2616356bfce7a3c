"""The web view and the HTML report of programs whose code is a tree: the program page lists
the files, shows each highlighted under its path and diffs to the parent file by file, in a
real headless Chromium (as tests/test_web_browser.py drives it). Paths and texts are the
candidate's: a path that is HTML stays text, a bidi override in a file is shown escaped."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect
from starlette.testclient import TestClient

from evaluators import tree
from evolve.archive import Archive, ArchiveReader, ProgramRow
from evolve.export.report import write_report
from evolve.testing.cli_helpers import BINPACK
from evolve.testing.web_support import UiServer
from evolve.web.app import make_app
from tests.test_web_browser import ARTIFACTS, browser, page  # noqa: F401 (fixtures)

RUN = "tree-run"
EVIL_PATH = "policy/<img src=x onerror=window.__pwned=3>.py"
TROJAN = 'access = "user\u202e \u2066// check if admin\u2069 \u2066"\n'
SEED = {
    "policy/__init__.py": "from policy import admission\n",
    "policy/admission.py": f"def admit(q):\n    {TROJAN}    return q\n",
    EVIL_PATH: "x = '</textarea><script>window.__pwned = 1</script>'\n",
}
CHILD = {
    "policy/__init__.py": SEED["policy/__init__.py"],
    "policy/admission.py": "def admit(q):\n    return q[:8]\n",
    EVIL_PATH: SEED[EVIL_PATH],
    "policy/eviction.py": "def evict(cache):\n    return cache[0]\n",
}


@pytest.fixture(scope="module")
def trees(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("trees") / "runs"
    a = Archive(runs)
    try:
        lease = a.claim(RUN)
        a.create_run(RUN, "binpack", str(BINPACK), {}, 2)
        a.insert_program(ProgramRow(f"{RUN}:0", RUN, "binpack", 0, 0, "ok", kind="seed",
                                    code=tree.encode(SEED), score=1.0))  # fmt: skip
        a.insert_program(ProgramRow(f"{RUN}:1", RUN, "binpack", 1, 0, "ok", code=tree.encode(CHILD),
                                    parent_id=f"{RUN}:0", score=2.0))  # fmt: skip
        a.insert_program(ProgramRow(f"{RUN}:2", RUN, "binpack", 2, 0, "ok", parent_id=f"{RUN}:1",
                                    code="def priority(item, bins):\n    return bins\n"))  # fmt: skip
        a.set_run_status(RUN, "finished", "done")
        lease.release()
    finally:
        a.close()
    return runs


def test_the_program_page_shows_the_tree_and_its_diff_file_by_file(page: Page, trees):  # noqa: F811
    with UiServer(trees) as ui:
        page.goto(ui.url + f"/programs/{quote(f'{RUN}:1', safe='')}")
        files = page.locator("#code-view ul.file-list li")
        expect(files).to_have_count(4)
        expect(files.nth(3)).to_contain_text("policy/eviction.py")
        expect(page.locator("#code")).to_contain_text("(4 files)")
        # each file under its path, highlighted as code (Pygments' spans)
        heads = page.locator("#code-view h3.file-path")
        expect(heads).to_have_count(4)
        expect(heads.nth(2)).to_have_text(EVIL_PATH)  # HTML in a path: text
        expect(page.locator("#code-view .code.file")).to_have_count(4)
        assert page.locator("#code-view .code.file").nth(1).locator("span.k").count() > 0
        files.nth(3).locator("a").click()
        expect(page).to_have_url(page.url.split("#")[0] + "#file-4")
        # the diff to the parent: only the files that changed, each named with its change
        diff = page.locator("#diff-view")
        expect(diff.locator("h3.file-path")).to_have_count(2)
        expect(diff.locator("h3.file-path").nth(0)).to_contain_text("policy/admission.py")
        expect(diff.locator("h3.file-path").nth(0)).to_contain_text("changed")
        expect(diff.locator("h3.file-path").nth(1)).to_contain_text("policy/eviction.py")
        expect(diff.locator("h3.file-path").nth(1)).to_contain_text("added")
        expect(diff).to_contain_text("+    return q[:8]")
        # the bidi override the parent's file held is shown as its escape, never raw
        expect(diff).to_contain_text("\\u202e")
        assert "\u202e" not in page.locator("main").inner_text()
        page.screenshot(path=ARTIFACTS / "tree_program.png", full_page=True)
        for pid in (f"{RUN}:0", f"{RUN}:1", f"{RUN}:2"):
            page.goto(ui.url + f"/programs/{quote(pid, safe='')}")
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None, pid
            assert page.locator("main img").count() == 0, pid
        # a one-file child of a tree: its code as always, its diff file by file
        expect(page.locator("#code-view ul.file-list")).to_have_count(0)
        expect(page.locator("#code-view")).to_contain_text("def priority")
        expect(page.locator("#diff-view")).to_contain_text("seed.py")
        expect(page.locator("#diff-view")).to_contain_text("removed")
        assert page.errors == []  # type: ignore[attr-defined]


def test_the_api_gives_the_files_and_the_report_shows_them(trees, tmp_path):
    c = TestClient(make_app(trees))
    d = c.get(f"/api/programs/{RUN}:1").json()
    assert d["files"] == CHILD and d["code"] == tree.encode(CHILD)
    assert c.get(f"/api/programs/{RUN}:2").json()["files"] == {
        "seed.py": "def priority(item, bins):\n    return bins\n"
    }
    out = tmp_path / "report.html"
    write_report(ArchiveReader(trees), RUN, out)  # the best: the tree child
    html = out.read_text(encoding="utf-8")
    assert "\u202e" not in html and "\\u202e" in html  # the seed's, in the diff: escaped
    assert "<img src=x" not in html and "&lt;img src=x onerror=window.__pwned=3&gt;.py" in html
    assert 'class="file-path">policy/admission.py <span class="tag change-changed">' in html
    assert 'class="file-path">policy/eviction.py <span class="tag change-added">' in html
    assert html.count('<h3 class="file-path" id="file-') == 4  # the best's files
