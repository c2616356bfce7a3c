"""The web view trusts neither the browser's Host nor the candidate's characters: it answers
only the host names it listens on (a page on an attacker's domain that resolves to
127.0.0.1, DNS rebinding, gets a 400, not /api/runs), and every control or invisible
format character a candidate or a model wrote (a bidi override: "Trojan Source") is shown
as its escape on every page, the program page's code view included. CSV cells that a
spreadsheet would read as a formula behind blanks or look-alike characters are quoted."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import unicodedata
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from evolve.archive import Archive, ArchiveReader, LlmCall, ProgramRow
from evolve.export.report import write_report
from evolve.inert import UNSAFE, inert_cell, visible
from evolve.testing.web_support import UiServer
from evolve.web.app import make_app
from evolve.web.server import trusted_hosts

RUN = "bidi-run"
# Trojan Source's "early return": shown raw, the comment seems to end the line
TROJAN = 'access = "user\u202e \u2066// check if admin\u2069 \u2066"\n'
HIDDEN = "zero\u200bwidth\ufeffbom\u2028line\u00adsoft\U000e0041tag"
RAW = ("\u202e", "\u2066", "\u2069", "\u200b", "\ufeff", "\u2028", "\u00ad", "\U000e0041")


def _archive(runs: Path) -> dict[str, str]:
    a = Archive(runs)
    try:
        lease = a.claim(RUN)
        a.create_run(RUN, "binpack", str(runs), {}, 1)
        seed = ProgramRow(f"{RUN}:0", RUN, "binpack", 0, 0, "ok", kind="seed",
                          code=f"def priority(item, bins):\n    {TROJAN}    return bins\n",
                          score=1.0, metrics={f"m{HIDDEN}": 1.0})  # fmt: skip
        a.insert_program(seed)
        call = a.insert_llm_call(LlmCall(
            run_id=RUN, iteration=1, island=0, parent_id=seed.program_id, edit_format="block",
            model=f"model{HIDDEN}", prompt=[{"role": "user", "content": f"prompt {TROJAN}"}],
            reply=f"reply {TROJAN}", prompt_tokens=1, completion_tokens=1, cost_usd=0.0,
            latency_s=0.1,
        ))  # fmt: skip
        child = ProgramRow(f"{RUN}:1", RUN, "binpack", 1, 0, "runtime_error",
                           parent_id=seed.program_id, llm_call_id=call,
                           code=f"def priority(item, bins):\n    {TROJAN}    return []\n",
                           artifacts={"stderr": f"Traceback {HIDDEN}", f"k{HIDDEN}": TROJAN})  # fmt: skip
        a.insert_program(child)
        a.set_run_status(RUN, "finished", f"done {HIDDEN}")
        lease.release()
    finally:
        a.close()
    return {"seed": seed.program_id, "child": child.program_id}


@pytest.fixture(scope="module")
def bidi(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    runs = tmp_path_factory.mktemp("bidi") / "runs"
    return runs, _archive(runs)


def test_the_character_set_covers_every_format_character():
    fmt = [chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"]
    assert fmt and all(UNSAFE.fullmatch(c) for c in fmt)
    assert UNSAFE.fullmatch("\u2028") and UNSAFE.fullmatch("\u2029")
    assert not UNSAFE.search("tab\tnewline\n é ü 漢字 😀 ＝")
    assert visible(TROJAN) == 'access = "user\\u202e \\u2066// check if admin\\u2069 \\u2066"\n'


@pytest.mark.parametrize("page", ["/", "/runs/{run}", "/programs/{seed}", "/programs/{child}",
                                  "/programs/{child}/lineage", "/problems/binpack"])  # fmt: skip
def test_invisible_characters_are_shown_escaped_on_every_page(bidi, page):
    runs, ids = bidi
    html = TestClient(make_app(runs)).get(page.format(run=RUN, **ids)).text
    assert not [c for c in RAW if c in html], page
    if "programs" in page and "lineage" not in page:
        assert "\\u202e" in html and "\\u2066" in html  # shown, not dropped


def test_the_program_page_code_view_shows_the_override(bidi):
    runs, ids = bidi
    html = TestClient(make_app(runs)).get(f"/programs/{ids['child']}").text
    code = html[html.index('id="code"') :]
    assert "\\u202e" in code[: code.index("</table>")]  # in the highlighted code itself
    assert "\\U000e0041" in html and "\\u200b" in html  # artifacts and metric names


def test_the_report_shows_them_escaped_too(bidi, tmp_path):
    runs, _ = bidi
    out = tmp_path / "report.html"
    write_report(ArchiveReader(runs), RUN, out)
    html = out.read_text(encoding="utf-8")
    assert not [c for c in RAW if c in html] and "\\u202e" in html


# ---- Host -------------------------------------------------------------------------------


def test_only_the_names_it_listens_on_are_answered(bidi):
    runs, _ = bidi
    app = make_app(runs, hosts=trusted_hosts("127.0.0.1"))
    for base in ("http://127.0.0.1:8420", "http://localhost:8420", "http://[::1]:8420"):
        assert TestClient(app, base_url=base).get("/api/runs").status_code == 200, base
    for host in ("attacker.example", "attacker.example:8420", "127.0.0.1.attacker.example", ""):
        r = TestClient(app).get("/api/runs", headers={"host": host})
        assert r.status_code == 400 and RUN not in r.text, host
    named = make_app(runs, hosts=trusted_hosts("127.0.0.1", ("evolve.lab",)))
    assert TestClient(named, base_url="http://evolve.lab").get("/api/runs").status_code == 200
    every = trusted_hosts("0.0.0.0")
    assert "localhost" in every and "0.0.0.0" not in every and "attacker.example" not in every


def test_the_real_server_refuses_another_host(bidi):
    runs, _ = bidi
    with UiServer(runs) as ui:
        port = ui.url.rsplit(":", 1)[1]
        ok = urllib.request.urlopen(ui.url + "/api/runs", timeout=10).read().decode()
        assert RUN in ok
        for host in (f"attacker.example:{port}", "rebind.attacker.example"):
            req = urllib.request.Request(ui.url + "/api/runs", headers={"Host": host})
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(req, timeout=10)
            assert e.value.code == 400 and RUN not in e.value.read().decode()
        req = urllib.request.Request(ui.url + "/api/runs", headers={"Host": f"localhost:{port}"})
        assert RUN in urllib.request.urlopen(req, timeout=10).read().decode()


# ---- CSV --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "cell",
    ["=1+1", "+1", "-1+2", "@SUM(A1)", "\t=1", "\r=1", " =1+1", "   =HYPERLINK(\"x\")",
     "\u00a0=1", "\u200b=1", "\ufeff=1", "\u3000=1", "\n=1", "\uff1d1+1", "\uff0b1", "\uff0d1",
     "\uff20SUM(A1)", " \u200b\u00a0\uff1dcmd", "\u2212 1"],
)  # fmt: skip
def test_formula_looking_cells_are_quoted(cell):
    assert inert_cell(cell) == "'" + cell


@pytest.mark.parametrize("cell", ["plain", " plain", "a=b", "1.5", "", "x-1", "\u00a0text"])
def test_other_cells_are_left_alone(cell):
    assert inert_cell(cell) == cell
    assert inert_cell(3.5) == 3.5 and inert_cell(None) is None


NODE = shutil.which("node")


@pytest.mark.skipif(NODE is None, reason="no node to run the page's script")
def test_live_updates_escape_as_the_server_does():
    """live.js puts what it polls into the page with the same escapes as the templates."""
    fmt = "".join(chr(c) for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf")
    text = f"{TROJAN}{HIDDEN}\x1b[31m\r\n\x85 tab\t é 漢字 😀 \ud800 {fmt}"
    js = (
        'const fs = require("fs");'
        'eval(fs.readFileSync(process.argv[1], "utf8") + "\\nglobalThis.evolveLive = evolveLive;");'
        'process.stdout.write(JSON.stringify(evolveLive.visible(JSON.parse(fs.readFileSync(0, "utf8")))));'
    )
    live = Path(__file__).parents[1] / "evolve" / "web" / "static" / "live.js"
    out = subprocess.run([NODE, "-e", js, str(live)], input=json.dumps(text), capture_output=True,
                         text=True, timeout=60)  # fmt: skip
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == visible(text)
