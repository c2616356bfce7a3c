"""`evolve archive ...`: look at runs, best programs, lineage and diffs; check a program out.

Best-per-problem is a query over the one database that holds every run,
never a copy kept in sync by hand. Every command reads through the read-only
ArchiveReader: looking at an archive never writes it (nor migrates an older one).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich import box
from rich.cells import cell_len
from rich.console import Console, JustifyMethod
from rich.table import Table
from rich.text import Text

from evolve.agent import transcript
from evolve.answers import problem_best, program_dict
from evolve.archive import ArchiveReader, CallOutcome, ProgramRow, ProgramStatus, Ranked
from evolve.archive.rows import public_dict
from evolve.cli import program_view as view
from evolve.cli.agent_view import print_transcript
from evolve.cli.safe_text import for_stream, safe_rich, safe_syntax, safe_text

Cell = Text | str  # of a table

# Everything shown here may come from a candidate (code, artifacts, metric names, stop
# reasons): on the terminal it goes through safe_rich/safe_text/safe_syntax. --json
# (whose escaping keeps it exact), --code and `diff` to a file or pipe stay byte-exact.


def add_parser(sub) -> None:
    ar = sub.add_parser("archive", help="inspect runs and discovered programs")
    asub = ar.add_subparsers(dest="archive_command", required=True, metavar="WHAT")

    def common(p, json_flag=True):
        p.add_argument(
            "--runs-dir",
            metavar="DIR",
            help="archive location (default ./runs or $EVOLVE_RUNS_DIR)",
        )
        if json_flag:
            p.add_argument("--json", action="store_true", help="machine-readable output")
        return p

    r = common(asub.add_parser("runs", help="list runs"))
    r.add_argument("--wide", action="store_true", help="never wrap: one line per run, however wide")
    b = common(
        asub.add_parser(
            "best",
            help="best program of each problem (a table; --json: one object per line), "
            "or of one problem or run",
        )
    )
    b.add_argument("--problem", help="problem name")
    b.add_argument("--run", help="run id")
    s = common(asub.add_parser("show", help="one program: scores, metrics, artifacts, code"))
    s.add_argument("program_id", metavar="PROGRAM_ID")
    for p in (b, s):
        p.add_argument(
            "--code",
            action="store_true",
            help="print only the code: exact to a file or pipe, control characters shown "
            "escaped on a terminal",
        )
    li = common(asub.add_parser("lineage", help="ancestors of a program back to the seed"))
    li.add_argument("program_id", metavar="PROGRAM_ID")
    d = common(
        asub.add_parser("diff", help="diff of a program against its parent or another program"),
        False,
    )
    d.add_argument("program_id", metavar="PROGRAM_ID")
    d.add_argument(
        "other",
        nargs="?",
        metavar="OTHER_ID",
        help="compare with this program instead of the parent",
    )
    co = common(
        asub.add_parser(
            "checkout",
            help="write a program's files (a tree's at their paths, a one-file program's under"
            " its problem's entry name) into a new or empty folder",
        ),
        False,
    )
    co.add_argument("program_id", metavar="PROGRAM_ID")
    co.add_argument("folder", metavar="DIR", help="the folder to create (or an empty one)")
    pl = common(
        asub.add_parser("plot", help="write the score curve and lineage pictures of a run"), False
    )
    pl.add_argument("run_id", metavar="RUN_ID")
    ex = common(
        asub.add_parser(
            "export",
            help="write a run's or a problem's programs (and LLM calls, as a second table) "
            "as csv, parquet or jsonl",
        ),
        False,
    )
    which = ex.add_mutually_exclusive_group(required=True)
    which.add_argument("run_id", nargs="?", metavar="RUN_ID", help="the run to export")
    which.add_argument("--problem", metavar="NAME", help="every run of this problem instead")
    ex.add_argument("--format", choices=("csv", "parquet", "jsonl"), required=True)
    ex.add_argument(
        "--out",
        metavar="PATH",
        required=True,
        help="the programs table; the LLM calls go beside it as STEM.llm_calls.FORMAT",
    )
    rp = common(
        asub.add_parser(
            "report", help="one self-contained HTML file on a run (opens offline, no server)"
        ),
        False,
    )
    rp.add_argument("run_id", metavar="RUN_ID")
    rp.add_argument("--out", metavar="PATH", required=True, help="the HTML file to write")


def dispatch(args) -> int:
    from evolve.cli.common import UsageError, runs_dir

    if args.archive_command in ("export", "report"):
        from evolve.cli.exports import cmd_export, cmd_report

        return (cmd_export if args.archive_command == "export" else cmd_report)(args)
    reader = ArchiveReader(runs_dir(args))  # ArchiveError: one line, exit 2
    out = Console()
    cmd = args.archive_command
    if cmd == "runs":
        runs = reader.list_runs()
        counts = reader.run_counts()
        for r in runs:
            r.update(counts.get(r["run_id"], {"calls": 0, "rejected": 0, "repairs": 0}))
        return _runs(out, runs, args.json, args.wide)
    if cmd == "best":
        from evolve.cli import best as cross

        run_id = _run_id(reader, args.run, "--run ") if args.run else None
        if run_id:  # within a run: ranked by its own scores
            p = reader.best(problem=args.problem, run_id=run_id)
            if p is None:
                raise UsageError(
                    "no evaluated program matches"
                    + (f" --problem {args.problem}" if args.problem else "")
                    + f" --run {run_id}"
                )
            return _show(out, p, args.json, args.code, reader.proposal(p), reader=reader)
        if args.problem:  # across runs: ranked on the leaderboard data
            top = problem_best(reader, args.problem)
            if top is None:
                raise UsageError(f"no evaluated program matches --problem {args.problem}")
            cross.warn_unranked(top)
            proposal = reader.proposal(top.program)
            return _show(out, top.program, args.json, args.code, proposal, top, reader)
        found = [problem_best(reader, name) for name in reader.problems()]
        return _best_per_problem(
            out, [r for r in found if r is not None], args.json, args.code, reader
        )
    if cmd in ("show", "lineage", "diff"):
        p = _program(reader, args.program_id)
        if cmd == "show":
            return _show(out, p, args.json, args.code, reader.proposal(p), reader=reader)
        if cmd == "lineage":
            chain = reader.lineage(p.program_id)
            if args.json:
                print(json.dumps([public_dict(c, code=False) for c in chain]))
                return 0
            t = Table("program", "iteration", "kind", "status", "score", "test", "model")
            for c in chain:
                t.add_row(
                    safe_rich(c.program_id),
                    str(c.iteration),
                    safe_rich(c.kind),
                    safe_rich(c.status),
                    _f(c.score),
                    _f(c.test_score),
                    safe_rich(c.model or ""),
                )
            out.print(t)
            return 0
        if args.other:
            other: ProgramRow | None = _program(reader, args.other)
        else:
            other = reader.program(p.parent_id) if p.parent_id else None
        if other is None:
            raise UsageError(f"{p.program_id}: nothing to compare with (it has no parent)")
        view.write_diff(reader, other, p)
        return 0
    if cmd == "checkout":
        p = _program(reader, args.program_id)
        written = view.checkout(reader, p, Path(args.folder))
        n = len(written)
        print(safe_text(f"{args.folder}: {n} file{'s' if n != 1 else ''} of {p.program_id}"))
        return 0
    if cmd == "plot":
        from evolve.export.pictures import write_run_pictures

        for f in write_run_pictures(reader, _run_id(reader, args.run_id)):
            print(safe_text(f))
        return 0
    raise UsageError(f"unknown archive command {cmd}")


def _program(reader: ArchiveReader, text: str) -> ProgramRow:
    """The program a person named: exact id, RUN_PREFIX:ITERATION or a unique prefix."""
    from evolve.cli.common import UsageError

    p = reader.resolve_program(text)  # AmbiguousId: exit 2 with a few candidates
    if p is None:
        raise UsageError(f"{text}: no such program (ids look like RUN_ID:ITERATION)")
    return p


def _run_id(reader: ArchiveReader, text: str, flag: str = "") -> str:
    from evolve.cli.common import UsageError

    run_id = reader.resolve_run(text)
    if run_id is None:
        raise UsageError(f"{flag}{text}: no such run")
    return run_id


def _runs(out: Console, runs: list[dict], as_json: bool, wide: bool) -> int:
    if as_json:
        print(json.dumps(runs))
        return 0
    rows: list[list[Cell]] = [
        [
            safe_rich(r["run_id"]),
            safe_rich(r["problem"]),
            safe_rich(r["status"] + (f" ({r['stop_reason']})" if r["stop_reason"] else "")),
            f"{r['iterations_done']}/{r['iterations_target']}",
            _f(r["seed_score"]),
            _f(r["best_score"]),
            f"{r['cost_usd']:.4f}",
        ]
        for r in runs
    ]
    columns = [("run", None), ("problem", 7), ("status", 11)]  # 11: "interrupted"
    columns += [(h, None) for h in ("iters", "seed", "best", "$")]
    if wide:  # answered LLM calls, the replies rejected as repeats, the repair candidates,
        # and whether its workloads come from a private data seed (--json shows the value)
        for row, r in zip(rows, runs, strict=True):
            data = "public" if r.get("data_seed") is None else "private"
            row += [str(r["calls"]), str(r["rejected"]), str(r["repairs"]), data]
        columns += [(h, None) for h in ("calls", "rejected", "repairs", "data")]
    _print_table(out, columns, rows, wide=wide, optional=("seed", "$", "problem"))
    return 0


def _print_table(
    out: Console,
    columns: list[tuple[str, int | None]],
    rows: list[list[Cell]],
    title: str | None = None,
    wide: bool = False,
    optional: tuple[str, ...] = (),
) -> None:
    """A table of one line per row whose ids and numbers are never cut.

    columns: (header, narrowest) where narrowest is the width a column may be cut to
    with an ellipsis when the terminal is short of room, or None for a column shown
    whole (a run id ending in "…" cannot be pasted). `optional`: headers left out, in
    this order, while the table does not fit even so; when it still does not, it is
    printed wider than the terminal. --wide, or output that is not a terminal (a file, a
    pipe): nothing is cut or left out."""
    wide = wide or not out.is_terminal
    for head in optional if not wide else ():
        if _fits(out, columns, rows):
            break
        i = [h for h, _ in columns].index(head)
        columns = columns[:i] + columns[i + 1 :]
        rows = [r[:i] + r[i + 1 :] for r in rows]
    _print_fitted(out, columns, rows, title, wide)


def _fits(out: Console, columns: list[tuple[str, int | None]], rows: list[list[Cell]]) -> bool:
    """Whether the table fits the terminal with its cuttable columns at their narrowest."""
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for head, narrowest in columns:
        t.add_column(head, no_wrap=True, width=narrowest)
    for r in rows:
        t.add_row(*r)
    return Console(width=1_000_000).measure(t).maximum <= out.width


def _print_fitted(
    out: Console,
    columns: list[tuple[str, int | None]],
    rows: list[list[Cell]],
    title: str | None,
    wide: bool,
) -> None:

    def cells(c: Cell) -> int:
        return c.cell_len if isinstance(c, Text) else cell_len(c)

    natural = [max([cell_len(h)] + [cells(r[i]) for r in rows]) for i, (h, _) in enumerate(columns)]
    cut = {i: min(f, natural[i]) for i, (_, f) in enumerate(columns) if f is not None}

    def build(widths: dict[int, int]) -> Table:
        t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
        for i, (head, _) in enumerate(columns):
            if i in widths:
                t.add_column(head, no_wrap=True, overflow="ellipsis", width=widths[i])
            else:
                justify: JustifyMethod = "left" if head in ("run", "program") else "right"
                t.add_column(head, no_wrap=True, min_width=natural[i], justify=justify)
        for r in rows:
            t.add_row(*r)
        return t

    def measure(t: Table) -> int:
        return Console(width=1_000_000).measure(t).maximum

    whole = {i: natural[i] for i in cut}
    full = measure(build(whole))
    widths = whole
    if not wide and full > out.width:
        room = out.width - (full - sum(whole.values()))  # what the cut columns may share
        level = max(natural, default=0)  # the widest any cut column may be: lowered to fit
        while level > 0 and sum(max(f, min(natural[i], level)) for i, f in cut.items()) > room:
            level -= 1
        widths = {i: max(f, min(natural[i], level)) for i, f in cut.items()}
    t = build(widths)
    width = max(out.width, measure(t))
    if width != out.width:
        out = Console(width=width, force_terminal=out.is_terminal, no_color=out.no_color)
    out.print(t)


def _best_per_problem(
    out: Console, best: list[Ranked], as_json: bool, code: bool, reader: ArchiveReader
) -> int:
    """`archive best` without --problem or --run: one program per problem, each ranked on
    its leaderboard data (evolve/cli/best.py)."""
    from evolve.cli import best as cross
    from evolve.cli.common import UsageError

    if not best:
        raise UsageError("no evaluated program in the archive yet")
    if code:
        if len(best) > 1:
            names = ", ".join(r.program.problem for r in best)
            raise UsageError(
                f"--code: the archive holds {len(best)} problems ({names}); name one with --problem"
            )
        return _show(out, best[0].program, False, True)
    rows = cross.per_problem(out, best, as_json, reader)
    if not as_json:
        _print_table(out, cross.PER_PROBLEM_COLUMNS, rows, title=cross.PER_PROBLEM_TITLE)
    return 0


def _show(
    out: Console,
    p: ProgramRow,
    as_json: bool,
    code_only: bool = False,
    proposal: dict | None = None,
    ranked: Ranked | None = None,
    reader: ArchiveReader | None = None,
) -> int:
    """One program; `ranked`: the answer of a cross-run question, with its leaderboard scores.
    --json: `files` (path -> text) beside `code`."""
    from evolve.cli import best as cross

    if as_json:
        if reader is None:
            print(json.dumps(public_dict(p)))
        else:
            print(json.dumps(program_dict(reader, p, ranked, proposal)))
        return 0
    if code_only:
        sys.stdout.write(for_stream(p.code or "", sys.stdout))
        return 0
    t = Table(show_header=False, title=safe_rich(p.program_id))
    for k in ("problem", "run_id", "iteration", "island", "kind", "status", "model", "parent_id"):
        t.add_row(k, safe_rich(_shown(p, k)))
    t.add_row("score (train)", _f(p.score))
    t.add_row("score (held out)", _f(p.test_score))
    for name, value in cross.board_rows(ranked) if ranked is not None else []:
        t.add_row(name, value)
    if p.skip_reason:
        t.add_row("not a parent", safe_rich(p.skip_reason))
    proposal = proposal or {}
    if proposal.get("repair_of"):
        fixed = " and fixed it" if p.status == ProgramStatus.OK else f"; still failing ({p.status})"
        t.add_row("repair of", safe_rich(f"{proposal['repair_of']}: shown its error{fixed}"))
    if proposal.get("call_id") is not None:
        t.add_row("purpose", safe_rich(proposal["purpose"] or "not recorded"))
        t.add_row("temperature", _f(proposal["temperature"]))
        t.add_row("decision", safe_rich(proposal["decision"] or "-"))
    for k, v in sorted(p.metrics.items()):
        t.add_row(safe_rich(k), safe_rich(_f(v)))
    out.print(t)
    for k, v in p.artifacts.items():
        out.print(safe_rich(k, style="bold"))
        out.print(safe_rich(str(v).strip()[-2000:]), highlight=False)
    rejected = proposal.get("rejected_calls") or []
    if rejected:
        out.print(
            safe_rich(
                f"rejected replies of iteration {p.iteration} ({len(rejected)}: each repeated"
                " a program, and the model was asked again)",
                style="bold",
            )
        )
    for c in rejected:
        what = (
            "repeated a program" if c["outcome"] == CallOutcome.REJECTED_DUPLICATE else c["outcome"]
        )
        out.print(
            safe_rich(
                f"call {c['call_id']} to {c['model']}, {c['purpose'] or 'purpose not recorded'},"
                f" temperature {_f(c['temperature'])}: {what}"
                + (f" ({c['decision']})" if c["decision"] else ""),
                style="italic",
            )
        )
        reply = c["reply"] or ""
        more = f"\n... {len(reply) - 2000} more characters (--json has them all)"
        out.print(safe_rich(reply[:2000] + (more if len(reply) > 2000 else "")), highlight=False)
    if reader is not None and (agent := transcript.of_program(reader, p)) is not None:
        print_transcript(out, agent)
    if view.has_files(p.code):
        view.print_files(out, p.code or "")
    elif p.code:
        out.print(safe_syntax(p.code, "python", line_numbers=True))
    return 0


_NO_MODEL = {
    "tune": "none: a tuned child, its parent's code with a number changed, no call",
    "seed": "none: the problem's initial program",
}


def _shown(p: ProgramRow, key: str) -> object:
    """A field of `archive show`; what a missing model or parent means, said in words."""
    value = getattr(p, key)
    if value is None and key == "model":
        return _NO_MODEL.get(p.kind, "none recorded")
    return "none" if value is None else value


def _f(v) -> str:
    return "-" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
