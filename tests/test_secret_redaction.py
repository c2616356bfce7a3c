"""The run's secrets never leave the trusted side (issue 37, breach 3).

An OpenEvolve or ShinkaEvolve evaluator runs the candidate in its own process, beside the
`--env` values it was given. A candidate that prints os.environ, or raises with a token,
must leave no trace of it in the archive (the SQLite files' bytes), `archive show`, the
exports, the report, the web view, `evolve eval`'s output or the next prompt the model gets:
evolve/pipeline/redaction.py redacts it where an evaluation's result enters the run.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import sqlite3
import urllib.request
from pathlib import Path
from urllib.parse import quote, quote_plus

import pytest

from evaluators.sandbox import EvalResult, Status
from evolve.pipeline.redaction import MARK, MIN_CHARS, Redactor
from evolve.testing.cli_helpers import ROOT, archive_json, block, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM
from evolve.testing.web_support import UiServer

TOKEN = "ghp_S3cr3tT0kenValue42"  # passed with --env
PUNCT = 'p@ss/w0rd "quoted"\\ é+x'  # one that every escaping changes
API_KEY = "sk-scripted-0123456789abcdef"  # the run's $OPENAI_API_KEY
SEED = 918273645546372819  # the run's private data seed
OPENEVOLVE = ROOT / "tests" / "fixtures" / "openevolve" / "needs_env"
SHINKA = ROOT / "tests" / "fixtures" / "shinka" / "sine_approx_headless"

# What a hostile candidate does with the environment it shares with its evaluator: every
# common spelling, on stdout and stderr; the API key and the seed are spelled out from pieces
# (the program text must not hold them: it is the model's own reply).
LEAK = f'''
import base64, json, os, sys

def _leak():
    env = dict(os.environ)
    tok = env.get("SECRET_TOKEN", "")
    extra = ["{API_KEY[:9]}" + "{API_KEY[9:]}", "{str(SEED)[:9]}" + "{str(SEED)[9:]}"]
    for s in [tok, *extra]:
        print(s, repr(s), json.dumps(s), s[::-1], s.encode().hex(), s.encode().hex().upper())
        print("x" + base64.b64encode(s.encode()).decode(), file=sys.stderr)
    print(env)
    print(base64.b64encode(json.dumps(env).encode()).decode(), file=sys.stderr)
    print("\\u200b".join(tok), file=sys.stderr)
    return tok
'''
OE_OK = (
    LEAK
    + """
def order(tasks):
    _leak()
    return sorted(range(len(tasks)), key=lambda i: tasks[i][0] / tasks[i][1])
"""
)
OE_RAISES = (
    LEAK
    + """
def order(tasks):
    raise RuntimeError("leaking " + _leak() + " " + repr(dict(os.environ)))
"""
)
SHINKA_OK = (
    LEAK
    + """
def approximate(x: float) -> float:
    _leak()
    return x - x**3 / 6 + x**5 / 120
"""
)
SHINKA_RAISES = (
    LEAK
    + """
def approximate(x: float) -> float:
    raise ValueError("leaking " + _leak() + " " + repr(dict(os.environ)))
"""
)


def spellings(secret: str) -> list[str]:
    """How a leak of `secret` would read: as written, reversed, hex, base64 (whole, or
    any part of 12 characters that depends on the secret alone)."""
    raw = secret.encode()
    b64 = base64.b64encode(raw).decode()
    return [secret, secret[::-1], raw.hex(), raw.hex().upper(), b64[:12], b64[4:16]]


def assert_absent(text: str | bytes, where: str, secrets=(TOKEN, API_KEY, str(SEED))) -> None:
    blob = text if isinstance(text, str) else text.decode("utf-8", "replace")
    for secret in secrets:
        for form in spellings(secret):
            assert form not in blob, f"{form!r} (a spelling of a secret) found in {where}"


# ---- the redactor alone ------------------------------------------------------------------


@pytest.mark.parametrize(
    "leak",
    [
        TOKEN,
        json.dumps({"t": TOKEN}),
        repr(os.environ | {"T": TOKEN}),
        TOKEN[::-1],
        TOKEN.encode().hex(),
        TOKEN.encode().hex().upper(),
        "\u200b".join(TOKEN),
        "\u202e".join(TOKEN),
        f"https://x/?t={TOKEN}&u={quote(PUNCT, safe='')}&v={quote_plus(PUNCT)}",
        json.dumps({"p": PUNCT}),
        repr(PUNCT),
        json.dumps(json.dumps({"p": PUNCT})),
    ]
    + [base64.b64encode(pre + TOKEN.encode() + b"!").decode() for pre in (b"", b"a", b"ab")]
    + [base64.urlsafe_b64encode(b"\xff" * k + TOKEN.encode()).decode() for k in range(3)],
)
def test_every_spelling_of_a_secret_is_redacted(leak):
    out = Redactor([TOKEN, PUNCT]).text(f"before {leak} after")
    assert MARK in out
    for secret_form in spellings(TOKEN) + spellings(PUNCT):
        assert secret_form not in out
    assert "S3cr3t" not in out and "w0rd" not in out
    assert out.startswith("before ") and out.endswith(" after")


def test_a_secret_cut_at_a_texts_edge_is_redacted_but_short_values_are_left_alone():
    r = Redactor([TOKEN, "abc", None, ""])
    assert r.secrets == (TOKEN,)  # under MIN_CHARS characters: not redacted
    assert len("abc") < MIN_CHARS and r.text("abc abc") == "abc abc"
    cut_tail = "[... 99 chars cut ...]\n" + TOKEN[7:] + " rest"
    assert TOKEN[7:] not in r.text(cut_tail)
    assert TOKEN[:12] not in r.text("error: " + TOKEN[:12])
    assert r.text("no secret here") == "no secret here"


def test_metric_and_artifact_names_are_redacted_too():
    res = EvalResult(
        Status.OK,
        1.0,
        metrics={TOKEN: 1.0, "m": 2.0},
        artifacts={f"k{TOKEN}": TOKEN},
        scores={TOKEN: 1.0},
    )
    out = Redactor([TOKEN]).result(res)
    assert_absent(json.dumps([out.metrics, out.artifacts, out.scores]), "the result", [TOKEN])
    assert out.metrics["m"] == 2.0 and out.score == 1.0 and out.status == Status.OK


# ---- a real run, end to end ---------------------------------------------------------------


def _everything_shown(runs: Path, run_id: str, tmp_path: Path) -> dict[str, str]:
    """Each place a run's text is stored or shown, as text: the archive's bytes, `archive
    show` of every program, the exports (jsonl and csv), the report and the web view."""
    shown = {}
    for f in runs.rglob("*"):
        if f.is_file() and f.parent.name == "secrets":  # where resume takes --env values from
            assert f.stat().st_mode & 0o777 == 0o600 and f.parent.stat().st_mode & 0o077 == 0
        elif f.is_file():
            shown[f"file {f.name}"] = f.read_bytes().decode("utf-8", "replace")
    db_ids = _program_ids(runs, run_id)
    for pid in db_ids:
        r = evolve("archive", "show", pid, "--runs-dir", str(runs))
        assert r.returncode == 0, r.stderr
        shown[f"archive show {pid}"] = r.stdout + r.stderr
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"export.{fmt}"
        r = evolve(
            "archive", "export", run_id, "--format", fmt, "--out", str(out), "--runs-dir", str(runs)
        )
        assert r.returncode == 0, r.stderr
        for f in tmp_path.glob(f"export*.{fmt}"):
            shown[f"export {f.name}"] = f.read_text()
    report = tmp_path / "report.html"
    r = evolve("archive", "report", run_id, "--out", str(report), "--runs-dir", str(runs))
    assert r.returncode == 0, r.stderr
    shown["report"] = report.read_text()
    with UiServer(runs) as ui:
        for pid in db_ids:
            for path in (f"/programs/{pid}", f"/api/programs/{pid}"):
                shown[f"web {path}"] = (
                    urllib.request.urlopen(ui.url + path, timeout=30).read().decode()
                )
        shown["web run"] = (
            urllib.request.urlopen(f"{ui.url}/runs/{run_id}", timeout=30).read().decode()
        )
    return shown


def _program_ids(runs: Path, run_id: str) -> list[str]:
    db = sqlite3.connect(runs / "archive.db")
    try:
        return [
            r[0] for r in db.execute("SELECT program_id FROM programs WHERE run_id = ?", (run_id,))
        ]
    finally:
        db.close()


def _leaky_run(folder: Path, replies: list[str], tmp_path: Path) -> tuple[Path, str, list[dict]]:
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(replies) as srv:
        r = evolve(
            *run_args(srv.base_url, runs, "--sandbox", "local", "--parallel", "1", "--llm-parallel", "1",
                      "--islands", "1", "--tune-evals", "0", "--repair-attempts", "1",
                      "--env", f"SECRET_TOKEN={TOKEN}", "--data-seed", str(SEED),
                      problem=folder, iterations=len(replies)),
            *(("--env", "FIXTURE_MODE=fast") if folder.name == "needs_env" else ()),
            timeout=600, extra_env={"OPENAI_API_KEY": API_KEY},
        )  # fmt: skip
        requests = srv.requests
    assert r.returncode == 0, r.stderr[-3000:]
    assert_absent(r.stdout + r.stderr, "evolve run's output")
    return runs, r.stdout.splitlines()[0].strip(), requests


@pytest.mark.parametrize(
    "name, folder, ok, raises",
    [("openevolve", OPENEVOLVE, OE_OK, OE_RAISES), ("shinka", SHINKA, SHINKA_OK, SHINKA_RAISES)],
)
def test_a_candidate_printing_the_environment_leaks_no_secret_anywhere(
    name, folder, ok, raises, tmp_path
):
    folder = Path(shutil.copytree(folder, tmp_path / folder.name))
    replies = [block(ok), block(raises)] + [block(ok + f"\n_VARIANT = {i}\n") for i in range(4)]
    runs, run_id, requests = _leaky_run(folder, replies, tmp_path)
    rows = archive_json(runs, "runs")
    assert [r["status"] for r in rows] == ["finished"]
    statuses = {p: s for p, s in _statuses(runs)}
    failed = "runtime_error" if name == "openevolve" else "invalid"  # ShinkaEvolve's own verdict
    assert "ok" in statuses.values() and failed in statuses.values(), statuses
    # the leaks happened, and were redacted: the marks stand where the secrets were
    shown = _everything_shown(runs, run_id, tmp_path)
    assert any(MARK in text for where, text in shown.items() if where.startswith("archive show"))
    for where, text in shown.items():
        secrets = (
            (TOKEN, API_KEY)
            if where.startswith(("file", "export", "web /api", "web run"))
            else (TOKEN, API_KEY, str(SEED))
        )
        assert_absent(text, where, secrets)
    assert all(req["_authorization"] == f"Bearer {API_KEY}" for req in requests)  # the run's key
    prompts = [json.dumps(req["messages"], ensure_ascii=False) for req in requests]
    assert len(prompts) >= len(replies) and any(MARK in p for p in prompts)
    for i, p in enumerate(prompts):
        assert_absent(p, f"prompt {i}")


def _statuses(runs: Path) -> list[tuple[str, str]]:
    db = sqlite3.connect(runs / "archive.db")
    try:
        return db.execute("SELECT program_id, status FROM programs").fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("program", [OE_OK, OE_RAISES])
def test_evolve_eval_prints_no_secret(program, tmp_path):
    path = tmp_path / "initial_program.py"
    path.write_text(program)
    r = evolve(
        "eval", str(OPENEVOLVE), str(path), "--sandbox", "local", "--env", "FIXTURE_MODE=fast",
        "--env", f"SECRET_TOKEN={TOKEN}", extra_env={"OPENAI_API_KEY": API_KEY},
    )  # fmt: skip
    assert MARK in r.stdout, r.stdout + r.stderr
    assert_absent(r.stdout + r.stderr, "evolve eval's output", (TOKEN, API_KEY))
    j = evolve(
        "eval", str(OPENEVOLVE), str(path), "--json", "--sandbox", "local", "--env", "FIXTURE_MODE=fast",
        "--env", f"SECRET_TOKEN={TOKEN}", "--data-seed", str(SEED),
    )  # fmt: skip
    assert MARK in j.stdout  # the JSON form too
    assert_absent(j.stdout + j.stderr, "evolve eval --json", (TOKEN, str(SEED)))


def test_env_values_are_kept_beside_the_archive_for_resume_only(tmp_path):
    from evolve.pipeline import env as run_env

    entries = ("SECRET_TOKEN=" + TOKEN, "FROM_SHELL", "EMPTY=")
    assert run_env.names(entries) == ("SECRET_TOKEN", "FROM_SHELL", "EMPTY")
    run_env.keep(tmp_path, "r1", entries)
    [kept] = (tmp_path / "secrets").iterdir()
    assert (
        kept.stat().st_mode & 0o777 == 0o600 and (tmp_path / "secrets").stat().st_mode & 0o077 == 0
    )
    stored = run_env.names(entries)
    assert run_env.restore(tmp_path, "r1", stored) == entries
    assert run_env.restore(tmp_path, "other-run", stored) == stored  # another run's: nothing
    kept.write_text("not json")
    assert run_env.restore(tmp_path, "r1", stored) == stored  # unreadable: read from the shell
