"""`evolve archive export`: a real archive, the real command, the tables read back by pandas.

The archive is built with the project's own Archive (no mocks), the command is driven
through `evolve.cli.main`, and what comes out is read with pandas as a user would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from evolve.archive import Archive, ArchiveReader, LlmCall, ProgramRow
from evolve.cli import main
from evolve.export.tables import write_tables

T0 = 1_700_000_000.0  # 2023-11-14 22:13:20 UTC
SCRIPT = "</textarea><script>alert(1)</script>"
SEED = 'def pick(bins, item):\n    return "first, fit"  # a comma, quotes\n'
PROMPT = [
    {"role": "system", "content": "You improve bin packing policies."},
    {"role": "user", "content": "Make pick() waste less space."},
]


def _program(a: Archive, run_id: str, problem: str, it: int, **kw) -> str:
    """Insert a pending program, then record its evaluation, as the controller does."""
    pid = f"{run_id}-p{it}"
    finished = {k: kw.pop(k) for k in ("status", "score", "metrics", "scores", "features",
                                       "artifacts", "eval_s") if k in kw}  # fmt: skip
    p = ProgramRow(pid, run_id, problem, it, it % 2, "pending", code=kw.pop("code", SEED),
                   created_at=T0 + it, **kw)  # fmt: skip
    a.insert_program(p)
    for k, v in {"status": "ok", "eval_s": 0.5, **finished}.items():
        setattr(p, k, v)
    a.finish_program(p)
    return pid


def _call(a: Archive, run_id: str, it: int, tokens: int) -> int:
    return a.insert_llm_call(LlmCall(
        run_id=run_id, iteration=it, island=it % 2, edit_format="diff", model="gpt-x",
        prompt=PROMPT, reply=f"reply {it}", prompt_tokens=tokens, completion_tokens=tokens // 10,
        cost_usd=0.01, latency_s=1.5,
    ))  # fmt: skip


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """alpha-1 (finished: seed, mutation, failure, crossover), alpha-2 (finished),
    beta-1 (its row says running; nobody holds its lock)."""
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run("alpha-1", "alpha", "problems/alpha", {"iterations": 3}, 3)
    seed = _program(a, "alpha-1", "alpha", 0, score=1.0,
                    metrics={"waste": 10.0, "note": "baseline"}, scores={"fast": 0.5},
                    features={"complexity": 2})  # fmt: skip
    c1 = _call(a, "alpha-1", 1, 1000)
    p1 = _program(a, "alpha-1", "alpha", 1, parent_id=seed, edit_kind="diff", model="gpt-x",
                  llm_call_id=c1, diff="-old\n+new\n", score=2.5,
                  metrics={"waste": 4.0, "note": 3.0, "hist": [1, 2]},
                  scores={"fast": 0.7, "full": 2.5}, features={"complexity": 3})  # fmt: skip
    c2 = _call(a, "alpha-1", 2, 2000)
    _program(a, "alpha-1", "alpha", 2, parent_id=p1, llm_call_id=c2, model="gpt-x",
             status="failed", score=None, metrics={},
             artifacts={"stderr": f"Traceback ... {SCRIPT}", "exit": 1})  # fmt: skip
    c3 = _call(a, "alpha-1", 3, 3000)
    p3 = _program(a, "alpha-1", "alpha", 3, parent_id=p1, second_parent_id=seed,
                  kind="crossover", llm_call_id=c3, model="gpt-x", code=SEED + "# crossed\n",
                  score=3.0, metrics={"waste": 2.0})  # fmt: skip
    a.set_test_result(p3, 0.9, {"waste": 2.2})
    a.set_run_status("alpha-1", "finished", "iterations done")

    a.create_run("alpha-2", "alpha", "problems/alpha", {}, 1)
    _program(a, "alpha-2", "alpha", 0, score=1.0, metrics={"waste": 10.0})
    _program(a, "alpha-2", "alpha", 1, score=1.5, metrics={"waste": 8.0},
             llm_call_id=_call(a, "alpha-2", 1, 500))  # fmt: skip
    a.set_run_status("alpha-2", "finished", "iterations done")

    a.create_run("beta-1", "beta", "problems/beta", {}, 5)
    _program(a, "beta-1", "beta", 0, score=7.0, metrics={"latency": 1.0})
    a.close()
    return runs


def export(capsys, runs: Path, *args: object) -> tuple[int, str, str]:
    code = main(["archive", "export", *map(str, args), "--runs-dir", str(runs)])
    out = capsys.readouterr()
    return code, out.out, out.err


def read(path: Path, fmt: str) -> pd.DataFrame:
    if fmt == "csv":
        return pd.read_csv(path)
    if fmt == "parquet":
        return pd.read_parquet(path)
    return pd.read_json(path, lines=True)


def utc(col: pd.Series) -> pd.Series:
    return pd.to_datetime(col, utc=True)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_a_run_exports_as_two_tables_that_pandas_reads_back(runs, tmp_path, capsys, fmt):
    out = tmp_path / "out" / f"alpha.{fmt}"
    out.parent.mkdir()
    code, stdout, err = export(capsys, runs, "alpha-1", "--format", fmt, "--out", out)
    assert code == 0, err
    calls_path = out.parent / f"alpha.llm_calls.{fmt}"
    assert stdout.splitlines() == [f"{out}: 4 rows", f"{calls_path}: 3 rows"]
    assert sorted(p.name for p in out.parent.iterdir()) == sorted([out.name, calls_path.name])

    df = read(out, fmt).set_index("iteration")
    assert list(df.index) == [0, 1, 2, 3]
    assert set(df["run_id"]) == {"alpha-1"} and set(df["run_status"]) == {"finished"}
    assert df.loc[1, "metric.waste"] == 4.0 and df.loc[0, "metric.waste"] == 10.0
    # a metric that is text in one program and a number in another survives every format
    assert df.loc[0, "metric.note"] == "baseline" and str(df.loc[1, "metric.note"]) == "3.0"
    assert json.loads(df.loc[1, "metric.hist"]) == [1, 2]  # a list: JSON text
    assert df.loc[1, "stage.full"] == 2.5 and df.loc[1, "feature.complexity"] == 3
    assert df.loc[3, "test_score"] == 0.9 and df.loc[3, "test_metric.waste"] == 2.2
    assert pd.isna(df.loc[1, "test_score"])
    assert df.loc[3, "kind"] == "crossover"
    assert df.loc[3, "second_parent_id"] == "alpha-1-p0" and df.loc[3, "parent_id"] == "alpha-1-p1"
    assert df.loc[0, "code"] == SEED and df.loc[3, "code"].endswith("# crossed\n")
    quote = "'" if fmt == "csv" else ""  # a CSV cell starting like a formula is quoted
    assert df.loc[1, "diff"] == quote + "-old\n+new\n"
    assert df.loc[2, "status"] == "failed" and pd.isna(df.loc[2, "score"])
    assert json.loads(df.loc[2, "artifacts"]) == {"stderr": f"Traceback ... {SCRIPT}", "exit": 1}
    assert df.loc[1, "llm_call_id"] == 1
    assert utc(df["created_at"]).iloc[0] == pd.Timestamp("2023-11-14 22:13:20", tz="UTC")

    calls = read(calls_path, fmt)
    assert list(calls["iteration"]) == [1, 2, 3] and list(calls["call_id"]) == [1, 2, 3]
    assert list(calls["prompt_tokens"]) == [1000, 2000, 3000]
    assert list(calls["completion_tokens"]) == [100, 200, 300]
    assert calls.loc[0, "reply"] == "reply 1" and calls.loc[0, "model"] == "gpt-x"
    assert json.loads(calls.loc[1, "prompt"]) == PROMPT
    assert "Make pick() waste less space." in calls.loc[2, "prompt"]
    assert utc(calls["created_at"]).notna().all()


def test_problem_selects_all_its_runs_and_a_prefix_names_one(runs, tmp_path, capsys):
    out = tmp_path / "alpha.csv"
    code, _, err = export(capsys, runs, "--problem", "alpha", "--format", "csv", "--out", out)
    assert code == 0, err
    df = pd.read_csv(out)
    assert len(df) == 6 and df.groupby("run_id").size().to_dict() == {"alpha-1": 4, "alpha-2": 2}
    assert list(df["run_id"]) == ["alpha-1"] * 4 + ["alpha-2"] * 2  # by run, then iteration
    assert list(df["iteration"]) == [0, 1, 2, 3, 0, 1]
    calls = pd.read_csv(tmp_path / "alpha.llm_calls.csv")
    assert calls["prompt_tokens"].sum() == 6500 and len(calls) == 4

    out = tmp_path / "beta.jsonl"
    code, _, err = export(capsys, runs, "bet", "--format", "jsonl", "--out", out)
    assert code == 0, err
    df = pd.read_json(out, lines=True)
    assert list(df["run_id"]) == ["beta-1"] and df.loc[0, "metric.latency"] == 1.0
    assert df.loc[0, "run_status"] == "interrupted"  # its row says running; its owner is gone
    assert "metric.waste" not in df.columns  # only the selected runs' metrics become columns


def test_a_running_run_exports_while_its_controller_writes(runs, tmp_path, capsys):
    a = Archive(runs)
    lease = a.claim("beta-1")  # a live owner: the run is running, not interrupted
    try:
        _program(a, "beta-1", "beta", 1, score=8.0, metrics={"latency": 0.5})
        out = tmp_path / "beta.parquet"
        code, stdout, err = export(capsys, runs, "beta-1", "--format", "parquet", "--out", out)
        assert code == 0, err
        assert f"{out}: 2 rows" in stdout
        df = pd.read_parquet(out)
        assert list(df["run_status"]) == ["running", "running"]
        assert list(df["metric.latency"]) == [1.0, 0.5]
        _program(a, "beta-1", "beta", 2, score=9.0)  # the writer goes on, unhindered
    finally:
        lease.release()
        a.close()


@pytest.mark.parametrize(
    "args, words",
    [
        (("nope",), "nope: no such run"),
        (("",), ": no such run"),  # not every run
        (("alpha",), "ambiguous"),  # alpha-1 and alpha-2
        (("--problem", "gamma"), "--problem gamma: no runs of it"),
    ],
)
def test_an_unknown_selection_is_one_line_and_exit_2(runs, tmp_path, capsys, args, words):
    code, stdout, err = export(capsys, runs, *args, "--format", "csv", "--out", tmp_path / "x.csv")
    assert code == 2 and stdout == ""
    assert len(err.strip().splitlines()) == 1 and words in err and "Traceback" not in err
    assert not (tmp_path / "x.csv").exists()


def test_a_bad_out_path_is_one_line_and_exit_2(runs, tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "x.csv"
    code, _, err = export(capsys, runs, "alpha-1", "--format", "csv", "--out", missing)
    assert code == 0 and len(pd.read_csv(missing)) > 0  # a missing folder is made
    blocked = tmp_path / "a-file" / "x.csv"
    blocked.parent.write_text("not a folder")
    code, _, err = export(capsys, runs, "alpha-1", "--format", "csv", "--out", blocked)
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"cannot create {blocked.parent}" in err

    folder = tmp_path / "taken.csv"
    folder.mkdir()  # a folder where the file should go: unwritable whoever runs the test
    code, _, err = export(capsys, runs, "alpha-1", "--format", "csv", "--out", folder)
    assert code == 2 and len(err.strip().splitlines()) == 1 and str(folder) in err
    assert list(folder.iterdir()) == [] and not list(tmp_path.glob(".*.tmp"))

    db = runs / "archive.db"
    before = db.read_bytes()
    code, _, err = export(capsys, runs, "alpha-1", "--format", "csv", "--out", db)
    assert code == 2 and "would overwrite the archive" in err and db.read_bytes() == before


def test_an_export_never_changes_the_archive(runs, tmp_path, capsys):
    db = runs / "archive.db"
    before, mtime = db.read_bytes(), db.stat().st_mtime_ns
    for fmt in ("csv", "parquet", "jsonl"):
        for sel in (("alpha-1",), ("--problem", "alpha"), ("beta-1",)):
            code, _, err = export(
                capsys, runs, *sel, "--format", fmt, "--out", tmp_path / f"t.{fmt}"
            )
            assert code == 0, err
    assert db.read_bytes() == before and db.stat().st_mtime_ns == mtime


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_an_empty_selection_writes_empty_tables(runs, tmp_path, fmt):
    out = tmp_path / f"none.{fmt}"
    written = write_tables(ArchiveReader(runs), out, fmt, problem="gamma")
    assert [(p.name, n) for p, n in written] == [(out.name, 0), (f"none.llm_calls.{fmt}", 0)]
    if fmt == "jsonl":
        assert out.read_text() == "" and (tmp_path / "none.llm_calls.jsonl").read_text() == ""
        return
    df, calls = read(out, fmt), read(tmp_path / f"none.llm_calls.{fmt}", fmt)
    assert len(df) == 0 and {"program_id", "score", "code", "artifacts"} <= set(df.columns)
    assert len(calls) == 0 and {"call_id", "prompt", "prompt_tokens"} <= set(calls.columns)


@pytest.mark.parametrize("fmt", ["csv", "parquet", "jsonl"])
def test_llm_calls_carry_purpose_outcome_temperature_and_decision(tmp_path, capsys, fmt):
    runs = tmp_path / "runs"
    a = Archive(runs)
    a.create_run("s-1", "alpha", "problems/alpha", {}, 1)
    seed = _program(a, "s-1", "alpha", 0, score=1.0)
    why = "UCB 0.812 (mean reward 0.300 over 4 calls)"
    kw = {"purpose": "mutation", "temperature": 0.7, "decision": why}
    dup = a.insert_llm_call(LlmCall(
        run_id="s-1", iteration=1, island=0, parent_id=seed, edit_format="diff", model="gpt-x",
        prompt=PROMPT, reply="same", prompt_tokens=10, completion_tokens=1, cost_usd=0.0,
        latency_s=1.0, **kw,
    ))  # fmt: skip
    a.reject_call(dup, "rejected_duplicate")
    kw = {"purpose": "resample", "temperature": 1.0, "decision": why}
    c = a.insert_llm_call(LlmCall(
        run_id="s-1", iteration=1, island=0, parent_id=seed, edit_format="diff", model="gpt-x",
        prompt=PROMPT, reply="new", prompt_tokens=10, completion_tokens=1, cost_usd=0.0,
        latency_s=1.0, **kw,
    ))  # fmt: skip
    _program(a, "s-1", "alpha", 1, parent_id=seed, llm_call_id=c, score=2.0)
    a.close()
    out = tmp_path / f"s.{fmt}"
    code, _, err = export(capsys, runs, "s-1", "--format", fmt, "--out", out)
    assert code == 0, err
    calls = read(tmp_path / f"s.llm_calls.{fmt}", fmt)
    assert list(calls["purpose"]) == ["mutation", "resample"]
    assert calls.loc[0, "outcome"] == "rejected_duplicate" and pd.isna(calls.loc[1, "outcome"])
    assert list(calls["temperature"]) == pytest.approx([0.7, 1.0])
    assert set(calls["decision"]) == {why}
