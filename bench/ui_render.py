"""Time to first render of the web view's pages on a big archive, in real Chromium.

    python bench/ui_render.py [--programs 10000] [--runs 20] [--repeat 5]

Makes two archives with bench/make_archive.py: the big one (default 10,000 programs over
20 runs) and a small baseline (20 programs in 1 run), serves each with the real
`evolve ui` (uvicorn, in a subprocess), and for the runs list, a run page, a program page
and a lineage page measures:
  - server time: the median wall time of an HTTP GET of the page (urllib, keep-alive off);
  - browser time, in headless Chromium (Debian's package, driven by Playwright, a fresh
    context each time so nothing is cached): from navigation start to the first contentful
    paint (text, tables and figures on screen), and on pages with charts to the moment the
    last chart is drawn (Plotly loads after the first paint), cold and when the page is
    opened again in the same browser (warm: the library's compiled code is cached).
Each figure is also given as a ratio to the same page on the small archive, measured in
the same run (the machine is shared and noisy). Also writes `evolve archive report` of the
big run and gives its size. Writes bench/results/ui_render.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import quote

from harness import machine, write_result
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

from evolve.archive import ArchiveReader  # noqa: E402
from evolve.testing.web_support import UiServer  # noqa: E402

# The first frame after the DOM is built: a rAF callback runs before that frame is
# painted, and a task queued from it runs after (headless Chromium often reports no
# first-contentful-paint entry, so it is not relied on).
FIRST_FRAME = (
    "document.addEventListener('DOMContentLoaded', () => requestAnimationFrame("
    "() => setTimeout(() => { window.__firstFrame = performance.now(); }, 0)));"
)
CHARTS = "document.querySelector('#chart-score, #chart-lineage')"


def make(runs_dir: Path, runs: int, programs: int) -> None:
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "make_archive.py"),
            str(runs_dir),
            "--runs",
            str(runs),
            "--programs",
            str(programs),
            "--force",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def pages(runs_dir: Path) -> dict[str, str]:
    """The four pages, on the run with the most programs and its best program."""
    reader = ArchiveReader(runs_dir)
    run = max(reader.runs(), key=lambda r: (r.programs, r.run_id))
    best = run.best_program_id or f"{run.run_id}:0"
    return {
        "runs list": "/",
        "run page": f"/runs/{quote(run.run_id, safe='')}",
        "program page": f"/programs/{quote(best, safe='')}",
        "lineage page": f"/programs/{quote(best, safe='')}/lineage",
    }


def server_time(url: str, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        with urllib.request.urlopen(url, timeout=60) as r:
            r.read()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def browser_time(browser, url: str, repeat: int) -> tuple[float, float | None, float | None]:
    """Median seconds from navigation start to the first contentful paint (the page's
    text, tables and figures shown), to every chart drawn (None: a page without), and to
    every chart drawn when the page is opened again in the same browser (warm cache)."""
    paints, charts, warm = [], [], []
    for _ in range(repeat):
        ctx = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = ctx.new_page()
        page.add_init_script(FIRST_FRAME)
        for visit in range(
            3
        ):  # the first visit is cold; Chromium caches compiled code by the third
            page.goto(url, wait_until="load")
            page.wait_for_function("window.__firstFrame !== undefined")
            if visit == 0:
                paints.append(page.evaluate("window.__firstFrame") / 1000)
            if not page.evaluate(f"!!{CHARTS}"):
                break
            page.wait_for_function("document.body.dataset.chartsDrawn", timeout=60_000)
            drawn = float(page.evaluate("document.body.dataset.chartsDrawn")) / 1000
            (charts if visit == 0 else warm).append(drawn)
        ctx.close()
    med = statistics.median
    return med(paints), med(charts) if charts else None, med(warm) if warm else None


def measure(runs_dir: Path, browser, repeat: int, shots: Path | None = None) -> dict[str, tuple]:
    out = {}
    with UiServer(runs_dir) as ui:
        if shots is not None:
            screenshots(browser, ui.url, pages(runs_dir), shots)
        for name, path in pages(runs_dir).items():
            server_time(ui.url + path, 1)  # warm: imports, caches
            out[name] = (
                server_time(ui.url + path, repeat),
                *browser_time(browser, ui.url + path, repeat),
            )
    return out


def screenshots(browser, url: str, paths: dict[str, str], folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    for name, path in paths.items():
        page.goto(url + path, wait_until="load")
        if page.evaluate(f"!!{CHARTS}"):
            page.wait_for_function("document.body.dataset.chartsDrawn", timeout=60_000)
        page.screenshot(path=folder / f"{name.replace(' ', '_')}.png", full_page=True)
    page.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--programs", type=int, default=10_000)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--screenshots", metavar="DIR", help="also save each page of the big archive")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    if chromium is None:
        print("ui_render: error: Debian's chromium is needed (apt-get install chromium)")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        big, small = Path(tmp) / "big", Path(tmp) / "small"
        make(big, args.runs, args.programs)
        make(small, 1, 20)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            base = measure(small, browser, args.repeat)
            shots = Path(args.screenshots) if args.screenshots else None
            full = measure(big, browser, args.repeat, shots)
            browser.close()
        reader = ArchiveReader(big)
        run = max(reader.runs(), key=lambda r: r.programs)
        report = Path(tmp) / "report.html"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "evolve.cli",
                "archive",
                "report",
                run.run_id,
                "--out",
                str(report),
                "--runs-dir",
                str(big),
            ],
            check=True,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        size = report.stat().st_size
    t = Table(
        title=f"{args.programs:,} programs over {args.runs} runs vs 20 programs in 1 run "
        f"(median of {args.repeat}; seconds, and × the small archive)"
    )
    cols = ("page", "server", "×", "first paint", "×", "charts drawn", "×", "warm", "×")
    for col in (*cols, "paint < 1 s"):
        t.add_column(col, justify="left" if col == "page" else "right")

    def cell(v: float | None, b: float | None) -> list[str]:
        return ["–", "–"] if v is None or b is None else [f"{v:.3f}", f"{v / b:.2f}"]

    for name, (srv, paint, chart, warm) in full.items():
        bs, bp, bc, bw = base[name]
        row = [*cell(srv, bs), *cell(paint, bp), *cell(chart, bc), *cell(warm, bw)]
        t.add_row(name, *row, "yes" if paint < 1 else "NO")
    Console(width=150).print(t)
    print(f"report of {run.run_id} ({run.programs} programs): {size:,} bytes")
    keys = ("server_s", "first_paint_s", "charts_drawn_s", "charts_drawn_warm_s")
    report_json = {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "machine": machine(),
        "archive": {"programs": args.programs, "runs": args.runs, "repeat": args.repeat},
        "big": {name: dict(zip(keys, v, strict=True)) for name, v in full.items()},
        "small": {name: dict(zip(keys, v, strict=True)) for name, v in base.items()},
        "report_bytes": size,
    }  # fmt: skip
    write_result("ui_render", report_json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
