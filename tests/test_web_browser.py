"""The web view in a real headless Chromium (Debian's `chromium`, driven by Playwright,
which never downloads a browser of its own): the path a user clicks, hostile text staying
inert, and a run in progress updating without a reload. Screenshots go to
tests/artifacts/web/."""

from __future__ import annotations

import shutil
from urllib.parse import quote

import pytest
from playwright.sync_api import Page, expect, sync_playwright

from evolve.archive import Archive, LlmCall, ProgramRow
from evolve.testing.cli_helpers import BINPACK, ROOT
from evolve.testing.web_support import HOSTILE_RUN, SCRIPT, SEARCH_RUN, UiServer

ARTIFACTS = ROOT / "tests" / "artifacts" / "web"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    assert CHROMIUM, "Debian's chromium package is needed: apt-get install chromium"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
    p = ctx.new_page()
    errors: list[str] = []
    p.on("pageerror", lambda e: errors.append(str(e)))
    # a request cut short by leaving the page (ERR_ABORTED) is not a failure of the page
    p.on(
        "requestfailed",
        lambda r: None if "ABORTED" in (r.failure or "") else errors.append(f"failed {r.url}"),
    )
    p.errors = errors  # type: ignore[attr-defined]
    yield p
    ctx.close()


def test_runs_list_to_best_program_to_diff_to_lineage_and_back_to_the_seed(page: Page, web_archive):
    run_id = web_archive.run_id
    with UiServer(web_archive.runs_dir) as ui:
        page.goto(ui.url + "/")
        expect(page.locator("#runs")).to_contain_text("binpack")
        expect(page.locator(f'tr[data-run="{run_id}"]')).to_contain_text("finished")
        page.screenshot(path=ARTIFACTS / "runs_list.png", full_page=True)

        page.get_by_role("link", name=run_id, exact=True).click()
        expect(page).to_have_url(f"{ui.url}/runs/{quote(run_id, safe='')}")
        expect(page.locator("#run-title")).to_have_text(run_id)
        expect(page.locator("#chart-score .main-svg").first).to_be_visible()  # plotly drew it
        expect(page.locator("#grids .main-svg").first).to_be_visible()
        page.screenshot(path=ARTIFACTS / "run_page.png", full_page=True)

        page.locator("#best-link").click()
        expect(page.locator("#program-title")).to_contain_text(f"{run_id}:")
        best_id = page.locator("#program-title").get_attribute("data-program")
        assert best_id is not None
        expect(page.locator("#code-view")).to_contain_text("def priority")
        page.locator("#diff-link").click()
        expect(page).to_have_url(f"{ui.url}/programs/{quote(best_id, safe='')}#diff")
        expect(page.locator("#diff-view")).to_contain_text("@@")
        page.screenshot(path=ARTIFACTS / "program_page.png", full_page=True)

        page.locator("#lineage-link").click()
        expect(page.locator("#lineage-of")).to_have_text(best_id)
        nodes = page.locator("#lineage li.node")
        assert nodes.count() >= 2
        expect(nodes.first).to_contain_text("seed")
        expect(nodes.last).to_contain_text(best_id)
        page.screenshot(path=ARTIFACTS / "lineage_page.png", full_page=True)

        page.locator("#lineage li.node.seed a.pid").click()
        expect(page.locator("#program-title")).to_contain_text(f"{run_id}:0")
        expect(page.locator("main")).to_contain_text("The seed of run")
        assert page.errors == []  # type: ignore[attr-defined]


def test_hostile_text_is_inert_in_the_browser(page: Page, web_archive):
    with UiServer(web_archive.runs_dir) as ui:
        for path in (
            "/",
            f"/runs/{HOSTILE_RUN}",
            f"/programs/{quote(web_archive.hostile['seed'], safe='')}",
            f"/programs/{quote(web_archive.hostile['child'], safe='')}",
            f"/programs/{quote(web_archive.hostile['child'], safe='')}/lineage",
        ):
            page.goto(ui.url + path)
            page.wait_for_load_state("load")
            assert page.evaluate("window.__pwned") is None, path
            assert page.locator("main img").count() == 0, path
        # the text itself is shown, as text
        page.goto(ui.url + f"/programs/{quote(web_archive.hostile['child'], safe='')}")
        expect(page.locator("#code-view")).to_contain_text("<script>window.__pwned = 1</script>")
        expect(page.locator("#artifacts + details pre")).to_contain_text("<img src=x onerror=")
        expect(page.locator("#reply")).to_contain_text("</textarea><script>")
        page.screenshot(path=ARTIFACTS / "hostile_program.png", full_page=True)
        assert page.errors == []  # type: ignore[attr-defined]


def test_the_search_section_and_rejected_replies_stay_text(page: Page, search_archive):
    failed = quote(search_archive.ids["failed"], safe="")
    with UiServer(search_archive.runs_dir) as ui:
        page.goto(ui.url + f"/runs/{SEARCH_RUN}")
        expect(page.locator("#chart-calls .main-svg").first).to_be_visible()  # plotly drew it
        expect(page.locator("#meta-notes")).to_contain_text("<script>window.__pwned = 1</script>")
        expect(page.locator("#decisions")).to_contain_text("island 0 restarted from")
        expect(page.locator('#status-breakdown [data-k="rejected"]')).to_contain_text("1")
        expect(page.locator("#models")).to_contain_text("model-b")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main img").count() == 0
        page.screenshot(path=ARTIFACTS / "run_search.png", full_page=True)

        page.goto(ui.url + f"/programs/{failed}")
        reply = page.locator("#rejected-calls pre.rejected-reply")
        expect(reply).to_be_hidden()  # collapsed until asked for
        page.locator("#rejected-calls summary").first.click()
        expect(reply).to_contain_text("the same program again </textarea><script>")
        expect(page.locator("#call-search")).to_contain_text("resample")
        assert page.evaluate("window.__pwned") is None
        assert page.locator("main img").count() == 0
        page.screenshot(path=ARTIFACTS / "rejected_replies.png", full_page=True)
        assert page.errors == []  # type: ignore[attr-defined]


def test_a_run_in_progress_updates_without_a_reload(page: Page, tmp_path):
    runs = tmp_path / "runs"
    a = Archive(runs)
    lease = a.claim("live-run")  # this process is the run's controller: it shows as running
    try:
        a.create_run("live-run", "binpack", str(BINPACK), {}, 10)
        code = "def priority(item, bins):\n    return -bins\n"
        seed = ProgramRow(
            "live-run:0", "live-run", "binpack", 0, 0, "ok", kind="seed", code=code, score=-5.0
        )
        with UiServer(runs) as ui:
            page.goto(ui.url + "/runs/live-run")  # before the seed is scored: every card follows
            expect(page.locator("#run-figures")).to_contain_text("running")
            expect(page.locator('[data-k="seed_score"]')).to_have_text("–")
            a.insert_program(seed)
            expect(page.locator("#program-count")).to_have_text("1", timeout=20_000)
            expect(page.locator('[data-k="seed_score"]')).to_have_text("-5", timeout=20_000)
            page.evaluate("window.__same_page = true")
            for i in (1, 2, 3):
                a.insert_program(
                    ProgramRow(
                        f"live-run:{i}",
                        "live-run",
                        "binpack",
                        i,
                        0,
                        "ok",
                        parent_id=f"live-run:{i - 1}",
                        code=code + f"# v{i}\n",
                        score=-5.0 + i,
                    )
                )
            expect(page.locator("#program-count")).to_have_text("4", timeout=20_000)
            row = page.locator('#recent-table tr[data-iteration="3"]')
            expect(row).to_contain_text("#3")
            expect(row.locator("a")).to_have_attribute("href", "/programs/live-run%3A3")
            expect(page.locator('[data-k="best_score"]')).to_contain_text("-2")
            a.set_test_result("live-run:3", -2.5, {})
            expect(page.locator('[data-k="best_test_score"]')).to_have_text("-2.5", timeout=20_000)
            # a meta-note written meanwhile shows up too, as text
            expect(page.locator("#meta-notes")).to_contain_text("None written")
            meta = a.insert_llm_call(LlmCall(
                run_id="live-run", iteration=3, island=0, edit_format="meta", model="m", prompt=[],
                reply="notes", prompt_tokens=1, completion_tokens=1, cost_usd=0.0, latency_s=0.1,
                purpose="meta",
            ))  # fmt: skip
            a.add_meta_note("live-run", 3, meta, f"try smaller bins {SCRIPT}")
            expect(page.locator("#meta-notes")).to_contain_text(
                "try smaller bins </textarea><script>", timeout=20_000
            )
            expect(page.locator('[data-k="llm_calls"]')).to_have_text("1", timeout=20_000)
            assert page.evaluate("window.__pwned") is None
            assert page.evaluate("window.__same_page") is True  # updated in place, no reload
            page.screenshot(path=ARTIFACTS / "live_run.png", full_page=True)
            # the runs list follows too
            page.goto(ui.url + "/")
            a.insert_program(
                ProgramRow(
                    "live-run:4",
                    "live-run",
                    "binpack",
                    4,
                    0,
                    "ok",
                    parent_id="live-run:3",
                    code=code + "# v4\n",
                    score=0.5,
                )
            )
            expect(page.locator('tr[data-run="live-run"] [data-k="iterations"]')).to_have_text(
                "4 / 10", timeout=20_000
            )
    finally:
        lease.release()
        a.close()
