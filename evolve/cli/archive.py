"""`evolve archive ...`: look at runs, best programs, lineage and diffs.

Best-per-problem is a query over the one database that holds every run,
never a copy kept in sync by hand.
"""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from evolve.archive import Archive, ProgramRow
from evolve.edits import unified_diff


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

    common(asub.add_parser("runs", help="list runs"))
    b = common(asub.add_parser("best", help="best program per problem (across runs) or per run"))
    b.add_argument("--problem", help="problem name")
    b.add_argument("--run", help="run id")
    s = common(asub.add_parser("show", help="one program: scores, metrics, artifacts, code"))
    s.add_argument("program_id", metavar="PROGRAM_ID")
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
    pl = common(
        asub.add_parser("plot", help="write the score curve and lineage pictures of a run"), False
    )
    pl.add_argument("run_id", metavar="RUN_ID")


def _public(p: ProgramRow, code: bool = True) -> dict:
    d = {
        "program_id": p.program_id,
        "run_id": p.run_id,
        "problem": p.problem,
        "iteration": p.iteration,
        "island": p.island,
        "parent_id": p.parent_id,
        "second_parent_id": p.second_parent_id,
        "kind": p.kind,
        "edit_kind": p.edit_kind,
        "model": p.model,
        "status": p.status,
        "score": p.score,
        "test_score": p.test_score,
        "scores": p.scores,
        "metrics": p.metrics,
        "test_metrics": p.test_metrics,
        "artifacts": p.artifacts,
        "cell": p.cell,
        "features": p.features,
        "eval_s": p.eval_s,
    }
    if code:
        d["code"] = p.code
    return d


def dispatch(args) -> int:
    from evolve.cli.common import UsageError, runs_dir

    path = runs_dir(args)
    if not (path / "archive.db").is_file():
        raise UsageError(f"--runs-dir {path}: no archive.db there (no run has been started in it)")
    archive = Archive(path)
    out = Console()
    cmd = args.archive_command
    if cmd == "runs":
        runs = archive.list_runs()
        if args.json:
            print(json.dumps(runs))
            return 0
        t = Table("run", "problem", "status", "iterations", "seed", "best", "$")
        for r in runs:
            t.add_row(
                r["run_id"],
                r["problem"],
                r["status"] + (f" ({r['stop_reason']})" if r["stop_reason"] else ""),
                f"{r['iterations_done']}/{r['iterations_target']}",
                _f(r["seed_score"]),
                _f(r["best_score"]),
                f"{r['cost_usd']:.4f}",
            )
        out.print(t)
        return 0
    if cmd == "best":
        if args.run and archive.get_run(args.run) is None:
            raise UsageError(f"--run {args.run}: no such run")
        p = archive.best(problem=args.problem, run_id=args.run)
        if p is None:
            raise UsageError(
                "no evaluated program matches"
                + (f" --problem {args.problem}" if args.problem else "")
            )
        return _show(out, p, args.json)
    if cmd in ("show", "lineage", "diff"):
        p = archive.get_program(args.program_id)
        if p is None:
            raise UsageError(f"{args.program_id}: no such program (ids look like RUN_ID:ITERATION)")
        if cmd == "show":
            return _show(out, p, args.json)
        if cmd == "lineage":
            chain = archive.lineage(p.program_id)
            if args.json:
                print(json.dumps([_public(c, code=False) for c in chain]))
                return 0
            t = Table("program", "iteration", "kind", "status", "score", "test", "model")
            for c in chain:
                t.add_row(
                    c.program_id,
                    str(c.iteration),
                    c.kind,
                    c.status,
                    _f(c.score),
                    _f(c.test_score),
                    c.model or "",
                )
            out.print(t)
            return 0
        other = (
            archive.get_program(args.other)
            if args.other
            else (archive.get_program(p.parent_id) if p.parent_id else None)
        )
        if other is None:
            raise UsageError(f"{args.other or p.program_id}: nothing to compare with")
        sys.stdout.write(unified_diff(other.code or "", p.code or ""))
        return 0
    if cmd == "plot":
        from evolve.cli.plots import write_run_pictures

        if archive.get_run(args.run_id) is None:
            raise UsageError(f"{args.run_id}: no such run")
        for f in write_run_pictures(archive, args.run_id):
            print(f)
        return 0
    raise UsageError(f"unknown archive command {cmd}")


def _show(out: Console, p: ProgramRow, as_json: bool) -> int:
    if as_json:
        print(json.dumps(_public(p)))
        return 0
    t = Table(show_header=False, title=p.program_id)
    for k in ("problem", "run_id", "iteration", "island", "kind", "status", "model", "parent_id"):
        t.add_row(k, str(getattr(p, k)))
    t.add_row("score (train)", _f(p.score))
    t.add_row("score (held out)", _f(p.test_score))
    for k, v in sorted(p.metrics.items()):
        t.add_row(k, _f(v))
    out.print(t)
    for k, v in p.artifacts.items():
        out.print(k, style="bold", markup=False)
        out.print(v.strip()[-2000:], highlight=False, markup=False)
    if p.code:
        out.print(Syntax(p.code, "python", line_numbers=True))
    return 0


def _f(v) -> str:
    return "-" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))
