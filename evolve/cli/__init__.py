"""`evolve` command line: run, resume, eval, check, new, sandbox, archive.

Bad input ends with exit code 2 and one line naming the flag, file or field;
nothing is written to the archive before the input has been validated.
The flags live in parser.py, `run`/`resume` in run.py, `archive` in archive.py;
`eval`, `check` and `sandbox` are here.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

from evolve.cli.common import UsageError
from evolve.cli.parser import build_parser
from evolve.cli.safe_text import safe_rich, safe_text


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    _sweep()
    try:
        if args.command == "run":
            from evolve.cli.run import cmd_run

            return cmd_run(args)
        if args.command == "resume":
            from evolve.cli.run import cmd_resume

            return cmd_resume(args)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "check":
            return cmd_check(args)
        if args.command == "sandbox":
            return cmd_sandbox(args)
        if args.command == "data":
            return cmd_data_fetch(args)
        if args.command == "new":
            from evolve.cli.scaffold import scaffold

            path = scaffold(args.name)
            print(safe_text(f"created {path}: fill in the TODOs, then run `evolve check {path}`"))
            return 0
        from evolve.cli.archive import dispatch

        return dispatch(args)
    except (UsageError, ValueError) as e:  # ValueError: ProblemError, ArchiveError, ...
        return _fail(args, str(e))
    except KeyboardInterrupt:
        print(f"evolve {args.command}: interrupted", file=sys.stderr)
        return 130
    except sqlite3.Error as e:  # the archive broke mid-command: a full disk, a lost file
        from evolve.archive import describe_fault
        from evolve.cli.common import runs_dir

        where = runs_dir(args) / "archive.db" if hasattr(args, "runs_dir") else Path("archive")
        return _fail(args, describe_fault(where, e))
    except BrokenPipeError:  # `evolve archive ... | head`: the reader has what it wanted
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (flushed at exit, never closed)
        return 1
    except OSError as e:  # a file the command needed: named, with the system's reason
        return _fail(args, f"{e.filename}: {e.strerror}" if e.filename else str(e))
    except Exception as e:  # a bug: one line unless asked for the traceback
        if os.environ.get("EVOLVE_TRACEBACK"):
            raise
        print(
            safe_text(
                f"evolve {args.command}: internal error: {type(e).__name__}: {e}"
                " (EVOLVE_TRACEBACK=1 shows the traceback)"
            ),
            file=sys.stderr,
        )
        return 1


def _sweep() -> None:
    """Remove what dead evolve processes left in the temp folder (evaluators/leftovers.py);
    never a reason for a command to fail."""
    try:
        from evaluators.leftovers import sweep

        sweep()
    except Exception:
        pass


def _fail(args, message: str) -> int:
    """Bad input or an unusable runs dir: one line on stderr, exit code 2."""
    line = " ".join(message.splitlines()) or "failed"
    print(safe_text(f"evolve {args.command}: error: {line}"), file=sys.stderr)
    return 2


def cmd_data_fetch(args) -> int:
    from evolve.data import data_dir_for, fetch
    from evolve.problem import load_problem

    problem = load_problem(args.problem_dir)
    if not problem.data:
        raise UsageError(f"{problem.root / 'problem.toml'}: declares no [[data]] files")
    for line in fetch(
        list(problem.data), data_dir_for(problem.root)
    ):  # DataError: one line, exit 2
        print(safe_text(line))
    return 0


def cmd_sandbox(args) -> int:
    """`evolve sandbox build`: the Docker sandbox's image, built only when its inputs changed."""
    from evaluators.image import ImageError, build
    from evolve.sandboxes import engine

    client, why = engine()
    if client is None:
        raise UsageError(why)
    try:
        tag, built = build(
            client,
            dockerfile=args.dockerfile,
            force=args.force,
            mirror=args.mirror,
            log=lambda line: print(safe_text(line), file=sys.stderr, flush=True),
        )
    except ImageError as e:
        raise UsageError(str(e)) from None
    print(safe_text(tag if built else f"{tag} (up to date)"))
    return 0


def cmd_eval(args) -> int:
    from evolve.edits.blocks import complete_from_seed
    from evolve.evaluation import CandidateEvaluator
    from evolve.problem import load_problem
    from evolve.sandboxes import make_sandbox

    problem = load_problem(args.problem_dir)
    path = Path(args.program)
    if not path.is_file():
        raise UsageError(f"{args.program}: no such program file")
    if args.split and args.split not in problem.splits:
        raise UsageError(
            f"--split {args.split}: not a split of {problem.name} (one of {', '.join(problem.splits)})"
        )
    sandbox = make_sandbox(args.sandbox, 1, require_isolation=args.require_isolation)
    try:
        ev = CandidateEvaluator(problem, sandbox)
        try:  # a baseline written as its EVOLVE-BLOCKs only gets the seed's fixed code
            code = complete_from_seed(path.read_text(), problem.seed_code)
        except ValueError as e:
            raise UsageError(f"{args.program}: {e}") from None
        if args.split:
            r = ev.run_split(code, args.split)
            out = {
                "status": r.status,
                "score": r.score,
                "metrics": r.metrics,
                "artifacts": r.artifacts,
                "split": args.split,
                "eval_s": round(r.wall_s, 4),
            }
        else:
            o = ev.evaluate(code)
            out = {
                "status": o.status,
                "score": o.score,
                "metrics": o.metrics,
                "artifacts": o.artifacts,
                "split": problem.train_split,
                "stages": o.scores,
                "eval_s": round(o.eval_s, 4),
            }
    finally:
        sandbox.close()
    if args.json:
        print(json.dumps(out))
    else:
        _print_eval(out)
    return 0 if out["status"] == "ok" else 1


def _print_eval(out: dict) -> None:
    """Everything here but the numbers came from the candidate or the evaluator: shown
    through safe_rich/safe_text, never as rich markup or raw escape sequences."""
    from rich.console import Console
    from rich.table import Table

    t = Table(title=safe_rich(f"{out['split']}: {out['status']}"), show_header=False)
    t.add_row("score", "-" if out["score"] is None else f"{out['score']:.6g}")
    for k, v in sorted(out["metrics"].items()):
        t.add_row(safe_rich(k), safe_rich(f"{v:.6g}" if isinstance(v, float) else v))
    t.add_row("eval time", f"{out['eval_s']:.3f} s")
    Console().print(t)
    for k, v in out["artifacts"].items():
        print(safe_text(f"--- {k}\n{str(v).strip()}"))


def cmd_check(args) -> int:
    from evolve.evaluation import CandidateEvaluator
    from evolve.problem import ProblemError, load_problem, require_blocks
    from evolve.sandboxes import make_sandbox

    try:
        problem = load_problem(args.problem_dir)
        require_blocks(problem)  # a seed without EVOLVE-BLOCK markers fails every candidate
    except ProblemError as e:
        raise UsageError(str(e)) from None
    print(safe_text(f"{problem.name} ({problem.fmt}): {problem.description}"))
    print(
        safe_text(
            f"  entry {problem.entry}, splits {', '.join(problem.splits)}, held-out {problem.test_split or '-'}"
        )
    )
    print(safe_text(f"  cascade: {' -> '.join(s.function or s.split for s in problem.cascade)}"))
    sandbox = make_sandbox(args.sandbox, 1, require_isolation=args.require_isolation)
    failed = False
    try:
        ev = CandidateEvaluator(problem, sandbox)
        o = ev.evaluate(problem.seed_code)
        failed |= o.status != "ok"
        print(
            safe_text(
                f"  seed on {problem.train_split}: {o.status}, score {o.score}, {o.eval_s:.2f} s, metrics {o.metrics}"
            )
        )
        if o.status != "ok":
            for k, v in o.artifacts.items():
                print(safe_text(f"    {k}: {str(v).strip()[-600:]}"))
        if problem.test_split and o.status == "ok":
            r = ev.run_split(problem.seed_code, problem.test_split)
            failed |= r.status != "ok"
            print(
                safe_text(
                    f"  seed on {problem.test_split} (held out): {r.status}, score {r.score}, {r.wall_s:.2f} s"
                )
            )
    finally:
        sandbox.close()
    if failed:
        raise UsageError(
            f"{problem.root / problem.entry}: the seed program does not evaluate cleanly"
        )
    print("ok")
    return 0
