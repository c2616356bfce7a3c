"""`evolve archive export`: a run's (or a problem's) programs and LLM calls as two tables.

People analyse runs in notebooks and spreadsheets, so every program is one flat row: its
metrics, test metrics, stage scores and features become `metric.<name>`, ... columns, and
the code and diff come along (the discovered code is what they study). Everything is read
through the read-only ArchiveReader: exporting a run, even a running one, never writes it.
Column names carry no control characters (a metric's name is the candidate's text) in any
format, and a CSV cell a spreadsheet would run as a formula is quoted (evolve/inert.py).
`score` and `test_score` are on the program's own run's data (each run draws its own);
`leaderboard_score` and `leaderboard_test_score` are scored on this archive's leaderboard data
(seed private; evolve/pipeline/leaderboard.py), the same for every run: rank programs of different runs
by those (empty for a program never scored there).
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from evolve.archive import ArchiveReader, BoardScore, RunSummary
from evolve.archive.rows import ProgramRow
from evolve.export.agent_tables import CALL_AGENT_COLS, agent_columns
from evolve.export.atomic import replacing
from evolve.inert import inert_cell, strip_controls
from evolve.program_files import entry_name, files_of


class ExportError(ValueError):
    """A table cannot be written where asked: one line naming the flag or path."""


FORMATS = ("csv", "parquet", "jsonl")

PROGRAM_COLS = (
    "run_id", "problem", "run_status", "program_id", "iteration", "island", "parent_id",
    "second_parent_id", "kind", "edit_kind", "model", "status", "score", "test_score",
    "leaderboard_score", "leaderboard_test_score", "eval_s", "cell", "skip_reason", "created_at", "llm_call_id", "code_hash",
)  # fmt: skip
# The dict fields, flattened one level to `<prefix>.<name>` columns.
FLAT = (("metric", "metrics"), ("test_metric", "test_metrics"), ("stage", "scores"),
        ("feature", "features"))  # fmt: skip
# large: last, so a spreadsheet stays readable. `files`: path -> text of the program's files
# (a tree's, or a one-file program's under its problem's entry name): a map in JSONL and
# parquet, its JSON text in CSV; `code` stays the one text it always was.
TEXT_COLS = ("artifacts", "code", "files", "diff")
CALL_COLS = (
    "call_id", "run_id", "iteration", "island", "model", "edit_format", "prompt", "reply",
    "error", "prompt_tokens", "completion_tokens", "cost_usd", "latency_s", "created_at",
    "purpose", "outcome", "temperature", "decision",  # schema 4: empty for older runs
)  # fmt: skip
# Typed even when empty, so a zero-row parquet file still says what each column holds.
DTYPES = {
    "iteration": "Int64", "island": "Int64", "llm_call_id": "Int64", "call_id": "Int64",
    "agent_turn": "Int64",
    "prompt_tokens": "Int64", "completion_tokens": "Int64", "score": "float64",
    "test_score": "float64", "leaderboard_score": "float64",
    "leaderboard_test_score": "float64", "eval_s": "float64", "cost_usd": "float64", "latency_s": "float64",
    "temperature": "float64",
}  # fmt: skip


def _text(s: str) -> str:
    """A lone surrogate (JSON can carry one from a candidate's output) shown escaped:
    UTF-8 files cannot hold it, and one bad metric name must not sink the export."""
    return s.encode("utf-8", "backslashreplace").decode("utf-8")


def _json(v: Any) -> str:
    return _text(json.dumps(v, ensure_ascii=False, default=str))


def _cell(v: Any) -> Any:
    """A scalar stays itself (a number stays a number); a list or dict becomes JSON text."""
    if isinstance(v, str):
        return _text(v)
    if v is None or isinstance(v, bool | int | float):
        return v
    return _json(v)


BOARD_COLS = ("run_status", "leaderboard_score", "leaderboard_test_score")  # not ProgramRow's


def _program_record(
    p: ProgramRow, run_status: str, board: BoardScore | None, entry: str
) -> dict[str, Any]:
    rec: dict[str, Any] = {c: getattr(p, c) for c in PROGRAM_COLS if c not in BOARD_COLS}
    rec["run_status"] = run_status
    rec["leaderboard_score"] = board.score if board else None
    rec["leaderboard_test_score"] = board.test_score if board else None
    for prefix, attr in FLAT:
        for name, value in getattr(p, attr).items():
            rec[f"{prefix}.{_text(strip_controls(name))}"] = _cell(value)
    rec["artifacts"] = _json(p.artifacts)
    rec["code"], rec["diff"] = p.code, p.diff
    rec["files"] = files_of(p.code, entry) if p.code is not None else None
    return rec


def _frame(records: list[dict[str, Any]], cols: list[str], sort: list[str]) -> pd.DataFrame:
    df = pd.DataFrame.from_records(records, columns=cols)
    df = df.astype({c: t for c, t in DTYPES.items() if c in df.columns})
    at = pd.to_datetime(df["created_at"].astype("float64"), unit="s", utc=True)
    df["created_at"] = at.dt.round("us")  # a float's last bits are noise, not nanoseconds
    return df.sort_values(sort, kind="stable").reset_index(drop=True)


def _summaries(reader: ArchiveReader, run_ids: list[str]) -> list[RunSummary]:
    runs = {r.run_id: r for r in reader.runs()}
    missing = [r for r in run_ids if r not in runs]
    if missing:
        raise ExportError(f"{missing[0]}: no such run in {reader.path}")
    return [runs[r] for r in run_ids]


def programs_frame(reader: ArchiveReader, run_ids: list[str]) -> pd.DataFrame:
    """One row per program of the runs, with its run's status (`interrupted` for a dead
    owner, as `archive runs` says) and its leaderboard scores, sorted by run and iteration."""
    records = []
    for run in _summaries(reader, run_ids):
        boards = reader.board_scores(run.run_id)
        entry = entry_name(run.problem_dir)
        progs = reader.programs(run.run_id, code=True)
        agents, _ = agent_columns(reader, progs)
        records += [
            {
                **_program_record(p, run.status, boards.get(p.program_id), entry),
                **agents.get(p.program_id, {}),
            }
            for p in progs
        ]
    extra = sorted({k for rec in records for k in rec} - set(PROGRAM_COLS) - set(TEXT_COLS))
    return _frame(records, [*PROGRAM_COLS, *extra, *TEXT_COLS], ["run_id", "iteration"])


def llm_calls_frame(reader: ArchiveReader, run_ids: list[str]) -> pd.DataFrame:
    """One row per request to a model; `prompt` is the messages as JSON text; an agent's
    turn says which (`agent_turn`) and its tools (evolve/export/agent_tables.py)."""
    records = []
    for run in _summaries(reader, run_ids):
        _, turns = agent_columns(reader, reader.programs(run.run_id))
        for c in reader.llm_calls(run.run_id, prompts=True):
            rec = {k: getattr(c, k) for k in CALL_COLS}
            rec["prompt"] = _json(c.prompt)
            rec.update(turns.get(c.call_id or -1, dict.fromkeys(CALL_AGENT_COLS)))
            records.append(rec)
    cols = [*CALL_COLS, *CALL_AGENT_COLS]
    return _frame(records, cols, ["run_id", "iteration", "call_id"])


def _arrow_safe(df: pd.DataFrame) -> pd.DataFrame:
    """Parquet holds one type per column: a column mixing kinds of value (a metric that is
    a number in one program and text in another) is written as text, nulls kept."""
    df = df.copy()
    for col in [c for c in df.columns if pd.api.types.is_object_dtype(df[c])]:
        kinds = {type(v) for v in df[col] if not _missing(v)}
        if len(kinds) > 1:
            df[col] = df[col].map(lambda v: None if _missing(v) else str(v)).astype(object)
    return df


def _files_as(df: pd.DataFrame, convert: Callable[[dict], Any]) -> pd.DataFrame:
    """The table with each `files` map converted (a missing one stays missing)."""
    if "files" not in df.columns:
        return df
    df = df.copy()
    df["files"] = df["files"].map(lambda v: None if _missing(v) else convert(v)).astype(object)
    return df


def _parquet(df: pd.DataFrame, f: BinaryIO) -> None:
    """Parquet with `files` as a map<string, string> column (path -> text) in its place."""
    files = df.pop("files") if "files" in df.columns else None
    at = len(df.columns) if files is None else list(df.columns).index("code") + 1
    table = pa.Table.from_pandas(df, preserve_index=False)
    if files is not None:
        items = [None if _missing(v) else list(v.items()) for v in files]
        table = table.add_column(at, "files", pa.array(items, pa.map_(pa.string(), pa.string())))
    pq.write_table(table, f)


def _inert_csv(df: pd.DataFrame) -> pd.DataFrame:
    """The table with every text cell that starts like a formula (`=`, `+`, `-`, `@`,
    tab, CR) quoted, as OWASP advises: the replies, code and errors are candidates' text."""
    df = df.copy()
    texts = pd.api.types.is_object_dtype, pd.api.types.is_string_dtype  # pandas 3: `str`
    for col in [c for c in df.columns if any(is_text(df[c]) for is_text in texts)]:
        df[col] = df[col].map(inert_cell)
    return df


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def _write(df: pd.DataFrame, path: Path, fmt: str) -> None:
    """Write in one rename over the target (evolve/export/atomic.py): an export stopped
    at any moment, even killed, leaves neither a half table nor a temporary file."""
    try:
        with replacing(path) as f:
            if fmt == "csv":
                # CRLF rows (RFC 4180): Python's csv quotes a cell holding a character of the
                # line terminator only, and a bare CR in an unquoted cell would split its row
                text = io.TextIOWrapper(f, encoding="utf-8", newline="")
                df = _files_as(df, _json)
                _inert_csv(df).to_csv(text, index=False, lineterminator="\r\n")
                text.flush()
                text.detach()
            elif fmt == "parquet":
                _parquet(_arrow_safe(df), f)
            else:
                text = df.to_json(
                    orient="records",
                    lines=True,
                    date_format="iso",
                    date_unit="us",
                    force_ascii=False,
                )
                f.write((text if len(df) else "").encode("utf-8"))  # pandas: "\n" for none
    except OSError as e:
        reason = e.strerror or " ".join(str(e).split())
        raise ExportError(f"--out {path}: cannot write it: {reason}") from None


def write_tables(
    reader: ArchiveReader,
    out: Path,
    fmt: str,
    run_id: str | None = None,
    problem: str | None = None,
) -> list[tuple[Path, int]]:
    """Programs to `out`, LLM calls to `<stem>.llm_calls.<fmt>` beside it; the runs are
    `run_id`, or every run of `problem`, or every run. Returns each path and its rows."""
    if fmt not in FORMATS:
        raise ExportError(f"--format {fmt}: expected one of {', '.join(FORMATS)}")
    out = Path(out)
    try:  # as `report` does: `--out results/run.parquet` makes results/
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ExportError(f"--out {out}: cannot create {out.parent} ({e.strerror or e})") from None
    calls_path = out.with_name(f"{out.stem}.llm_calls.{fmt}")
    archive_files = {reader.path.resolve(), *(Path(f"{reader.path.resolve()}-{s}")
                                              for s in ("wal", "shm", "journal"))}  # fmt: skip
    for path in (out, calls_path):
        if path.resolve() in archive_files:
            raise ExportError(f"--out {out}: that would overwrite the archive {reader.path}")
    if run_id is not None:
        run_ids = [run_id]
    else:
        run_ids = [r.run_id for r in reader.runs(problem)]
    programs, calls = programs_frame(reader, run_ids), llm_calls_frame(reader, run_ids)
    _write(programs, out, fmt)
    _write(calls, calls_path, fmt)
    return [(out, len(programs)), (calls_path, len(calls))]
