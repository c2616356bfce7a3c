"""`evolve archive export` and `evolve archive report`: the archive as tables (pandas)
and as one self-contained HTML file, both read through the read-only ArchiveReader."""

from __future__ import annotations

import sys
from pathlib import Path

from evolve.archive import ArchiveReader
from evolve.cli.common import UsageError, runs_dir
from evolve.cli.safe_text import safe_text


def _run_id(reader: ArchiveReader, text: str) -> str:
    ids = [r.run_id for r in reader.runs()]
    if text in ids:
        return text
    matches = [i for i in ids if text and i.startswith(text)]  # "" is no prefix of a run
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise UsageError(f"{text}: no such run in {reader.path}")
    raise UsageError(
        f"{text}: ambiguous, it begins more than one run id ({', '.join(matches[:5])})"
    )


def cmd_export(args) -> int:
    from evolve.export.tables import write_tables

    reader = ArchiveReader(runs_dir(args))  # ArchiveError: one line, exit 2
    run_id = _run_id(reader, args.run_id) if args.run_id is not None else None
    if args.problem is not None and args.problem not in reader.problems():
        raise UsageError(f"--problem {args.problem}: no runs of it in {reader.path}")
    paths = write_tables(reader, Path(args.out), args.format, run_id=run_id, problem=args.problem)
    for path, rows in paths:
        print(safe_text(f"{path}: {rows} rows"))
    return 0


def cmd_report(args) -> int:
    from evolve.export.report import write_report

    reader = ArchiveReader(runs_dir(args))
    run_id = _run_id(reader, args.run_id)
    out = Path(args.out)
    size = write_report(reader, run_id, out)
    print(safe_text(f"{out}: {size:,} bytes, opens offline in any browser"), file=sys.stdout)
    return 0
