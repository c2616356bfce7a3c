"""The Python API (evolve/pipeline/api.py): the docs' sweep over models (docs/reference/python-api.md), run against the scripted
OpenAI-compatible server through the real controller and local sandbox (on the toy problem,
whose candidates take milliseconds); settings named as the flags, with their defaults in one
place; evaluate and check as the commands print them."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

import evolve
from evolve.cli.parser import build_parser
from evolve.pipeline.config import RunConfig
from evolve.settings.flags import FIELD_OF, Settings
from evolve.testing.cli_helpers import BINPACK, ROOT
from evolve.testing.cli_helpers import env as cli_env
from evolve.testing.cli_helpers import evolve as evolve_cli
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem

MODELS = ["qwen2.5-coder:1.5b", "qwen2.5-coder:7b", "llama3.2:3b"]


def readme_sweep() -> str:
    """The first Python block of the Python API page (docs/reference/python-api.md)."""
    text = (ROOT / "docs" / "reference" / "python-api.md").read_text()
    return re.search(r"```python\n(.*?)```", text, re.S).group(1)


def edit(k: int) -> Reply:
    """The toy problem's k-th answer: a new f, closer to f(3) == 10 as k grows to 7."""
    body = f"def f(x):\n    return x + {k}\n"
    return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


def _runs(runs_dir) -> list[dict]:
    db = sqlite3.connect(runs_dir / "archive.db")
    db.row_factory = sqlite3.Row
    rows = [dict(r) for r in db.execute("SELECT * FROM runs ORDER BY created_at")]
    db.close()
    return rows


def test_the_readme_sweep_over_models_runs_as_written(tmp_path, monkeypatch, capsys):
    code = readme_sweep()
    settings_line = re.search(r"^settings = dict\(.*\)$", code, re.M)
    assert settings_line, "the snippet keeps its settings on one line"
    assert code.count("\n") <= 12 and code.count('"problems/binpack"') == 1  # about ten lines
    runs, toy = tmp_path / "runs", toy_problem(tmp_path / "toy")
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "EVOLVE_RUNS_DIR"):
        monkeypatch.delenv(var, raising=False)
    with ScriptedLLM.from_list([edit(k) for k in range(1, 40)]) as srv:
        ours = (
            f"settings = dict(api_base={srv.base_url!r}, iterations=2, sandbox='local', "
            f"runs_dir={str(runs)!r}, llm_backoff=0.05)"
        )
        code = code.replace(settings_line.group(0), ours).replace(
            '"problems/binpack"', repr(str(toy))
        )
        exec(compile(code, "python-api.md", "exec"), {})
        asked = {r["model"] for r in srv.requests}
        out = capsys.readouterr()
        assert out.err == ""  # the API prints nothing; the snippet's own lines are all there is
        lines = out.out.splitlines()
        assert [line.split(":")[0] for line in lines[:2]] == ["qwen2.5-coder", "qwen2.5-coder"]
        assert len(lines) == 4 and lines[3].startswith("winner: ")
        assert asked == set(MODELS)
        rows = _runs(runs)
        assert [json.loads(r["config_json"])["models"][0][0] for r in rows] == MODELS
        assert all(r["status"] == "finished" and r["iterations_target"] == 2 for r in rows)
        for model, row, line in zip(MODELS, rows, lines, strict=False):
            assert line.startswith(f"{model}: finished, best ") and row["run_id"] in line

        # evolve.resume continues one of them, exactly as `evolve resume` would
        first = rows[0]["run_id"]
        summary = evolve.resume(first, runs_dir=runs, iterations=3)
    assert (summary.run_id, summary.status, summary.iterations_done) == (first, "finished", 3)
    assert capsys.readouterr().err == ""


def test_a_bad_setting_is_one_line_naming_it_before_anything_is_written(tmp_path):
    runs = tmp_path / "runs"
    cases = [
        (dict(max_call=3), "evolve.run: unknown setting 'max_call' (did you mean 'max_calls'?)"),
        (dict(parallel=0), "evolve.run: parallel: expected an integer >= 1, got 0"),
        (dict(temperature=3), "evolve.run: temperature: expected a number <= 2, got 3"),
        (dict(model="gpt:x"), "evolve.run: model[0]: gpt:x: weight 'x' must be a positive number"),
        (dict(sandbox="k8s"), "evolve.run: sandbox: expected one of 'auto', 'local', 'docker'"),
    ]
    for kw, message in cases:
        with pytest.raises(evolve.UsageError) as e:
            evolve.run(BINPACK, runs_dir=runs, api_base="http://127.0.0.1:9/v1", **kw)
        assert str(e.value).startswith(message) and "\n" not in str(e.value)
    with pytest.raises(evolve.UsageError, match="evolve.evaluate: unknown setting 'iterations'"):
        evolve.evaluate(BINPACK, BINPACK / "seed.py", iterations=3)
    with pytest.raises(evolve.UsageError, match="^evolve.check: unknown setting 'sandbx'"):
        evolve.check(BINPACK, sandbx="local")
    assert not runs.exists()


def test_every_run_flag_is_a_setting_whose_default_is_written_once():
    run = next(
        a for a in build_parser()._actions if getattr(a, "choices", None) and "run" in a.choices
    ).choices["run"]
    flags = {a.dest for a in run._actions} - {"help", "problem_dir", "no_progress"}
    assert flags == set(Settings.model_fields)
    defaults = {f.name: f.default for f in RunConfig.__dataclass_fields__.values()}
    for name, field in Settings.model_fields.items():
        stored = FIELD_OF.get(name, name)
        if stored in defaults and name != "model":
            assert defaults[stored] == field.default, name
    assert "(default 2)" in run.format_help()  # --parallel's help shows Settings' default


def test_run_help_teaches_in_groups_with_examples_and_fits_80_columns(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    run = next(
        a for a in build_parser()._actions if getattr(a, "choices", None) and "run" in a.choices
    ).choices["run"]
    assert all(a.help for a in run._actions), [a.dest for a in run._actions if not a.help]
    groups = [g.title for g in run._action_groups if g._group_actions]
    assert groups[-6:] == [
        "model",
        "budget (the run stops at the first reached)",
        "search",
        "evaluation",
        "sandbox",
        "output",
    ]
    text = run.format_help()
    assert text.count("  evolve run problems/binpack") == 3  # the examples
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "else the local model that comes with the install" in " ".join(text.split())


def test_evaluate_and_check_return_what_the_commands_print(tmp_path):
    toy = toy_problem(tmp_path / "toy")
    program = tmp_path / "better.py"
    program.write_text("# EVOLVE-BLOCK-START\ndef f(x):\n    return x + 5\n# EVOLVE-BLOCK-END\n")
    api = evolve.evaluate(toy, program, sandbox="local")
    cli = evolve_cli("eval", toy, program, "--sandbox", "local", "--json")
    assert cli.returncode == 0, cli.stderr
    shown = json.loads(cli.stdout)
    assert list(shown) == list(api.__dict__) and api.score == -2.0 and api.stages == {"train": -2.0}
    assert {**shown, "eval_s": 0} == {**api.__dict__, "eval_s": 0}
    report = evolve.check(toy, sandbox="local")
    cli = evolve_cli("check", toy, "--sandbox", "local")
    assert report.ok and cli.returncode == 0, cli.stderr
    strip = re.compile(r"\d+\.\d\d s")  # the evaluation times differ
    assert [strip.sub("", line) for line in report.lines] == [
        strip.sub("", line) for line in cli.stdout.splitlines()[:-1]
    ]
    assert cli.stdout.splitlines()[-1] == "ok"


def test_check_refuses_a_headline_metric_the_evaluator_never_returns(tmp_path):
    toy = toy_problem(tmp_path / "toy")
    toml = toy / "problem.toml"
    toml.write_text(
        toml.read_text().replace('entry = "seed.py"', 'entry = "seed.py"\nmetric = "valeu"')
    )
    cli = evolve_cli("check", toy, "--sandbox", "local")
    assert cli.returncode != 0
    assert (
        "  error: problem.toml: metric 'valeu' is not a metric the evaluator returns (it returns: value)"
        in cli.stdout
    )
    toml.write_text(toml.read_text().replace('"valeu"', '"value"'))
    assert evolve.check(toy, sandbox="local").ok


def test_import_evolve_loads_neither_the_api_nor_pydantic():
    code = "import sys, evolve; print(sorted(m for m in ('evolve.pipeline.api', 'pydantic') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert out.stdout.strip() == "[]", out.stderr
    assert callable(evolve.run) and "run" in dir(evolve)


def test_ctrl_c_stops_a_script_s_run_cleanly_and_resume_continues_it(tmp_path):
    """With no hooks asyncio's own SIGINT handling stops the run: evolve.run returns a summary
    saying so, the run is left `stopped`, and evolve.resume continues it. The script starts as
    an interactive Python does, with SIGINT's default handler: started from a background job
    of a script it would inherit SIGINT ignored, and the library leaves a process's signal
    dispositions as it finds them (the `evolve` command takes them itself: test_resume.py)."""
    toy, runs = toy_problem(tmp_path / "toy"), tmp_path / "runs"
    lock, n = threading.Lock(), [0]

    def slow(request: dict) -> Reply:
        with lock:
            n[0] += 1
            reply = edit(n[0])
        reply.delay_s = 2.0  # in flight when the signal comes
        return reply

    with ScriptedLLM(slow) as srv:
        script = (
            "import signal\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "import evolve\n"
            f"s = evolve.run({str(toy)!r}, model='scripted', api_base={srv.base_url!r}, "
            f"iterations=50, sandbox='local', runs_dir={str(runs)!r}, run_id='lib')\n"
            "print(s.status, s.reason, s.iterations_done < 50, flush=True)\n"
        )
        proc = subprocess.Popen(
            [sys.executable, "-c", script],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=cli_env(),
        )
        deadline = time.monotonic() + 120
        while not srv.requests and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        assert (proc.returncode, out.strip()) == (0, "stopped interrupted True"), err
        assert err == ""
        assert [r["status"] for r in _runs(runs)] == ["stopped"]
        summary = evolve.resume("lib", runs_dir=runs, iterations=1)
    assert (summary.status, summary.iterations_done) == ("finished", 1)


def test_the_archive_reads_return_what_the_commands_print_and_print_nothing(search_archive, capfd):
    runs, ids = search_archive.runs_dir, search_archive.ids

    def cli_json(*args: str):
        r = evolve_cli("archive", *args, "--json", "--runs-dir", runs)
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)

    listed, shown = cli_json("runs"), cli_json("show", ids["improved"])
    best_of_run = cli_json("best", "--run", listed[0]["run_id"])
    capfd.readouterr()
    assert evolve.runs(runs_dir=runs) == listed
    assert evolve.program(ids["improved"], runs_dir=runs) == shown
    assert evolve.best(run=listed[0]["run_id"][:8], runs_dir=runs) == best_of_run
    top = evolve.best(problem=listed[0]["problem"], runs_dir=runs)
    assert top is not None and top["ranked_by"] and json.loads(json.dumps(top)) == top
    assert evolve.best(problem="no-such-problem", runs_dir=runs) is None
    assert capfd.readouterr() == ("", "")  # nothing printed, not even a warning
    with pytest.raises(evolve.UsageError, match="^nope:9: no such program$"):
        evolve.program("nope:9", runs_dir=runs)
    with pytest.raises(evolve.UsageError, match="give problem=NAME or run=RUN_ID"):
        evolve.best(runs_dir=runs)


def test_evaluate_prints_nothing_when_told_to_warn_nowhere(tmp_path, capfd):
    toy = toy_problem(tmp_path / "toy")
    capfd.readouterr()
    got = evolve.evaluate(toy, toy / "seed.py", warn=lambda line: None)
    assert got.status == "ok" and capfd.readouterr() == ("", "")  # the sandbox line went to warn
