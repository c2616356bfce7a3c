"""`evolve` command line: run, resume, eval, check, new, sandbox, archive, ui, bench, demo.

Bad input ends with exit code 2 and one line naming the flag, file or field;
nothing is written to the archive before the input has been validated.
The flags live in parser.py, `run`/`resume` in run.py, `check` in check.py, `archive` in
archive.py (its export and report in exports.py), `ui` in ui.py, `bench` in bench.py, `demo` in demo.py; `eval` and `sandbox` are here.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

from evolve.cli.common import UsageError
from evolve.cli.parser import build_parser
from evolve.cli.safe_text import safe_rich, safe_text


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    folder = getattr(args, "problem_dir", None)
    path = Path(folder) if folder is not None else None
    script = path is not None and path.suffix == ".py" and path.is_file()  # a GEPA script
    if path is not None and not script and not path.is_dir():  # before the command's imports
        return _fail(args, f"{folder}: no such problem folder")
    _sweep()
    try:
        if (
            args.command in ("run", "resume", "demo")
            and signal.getsignal(signal.SIGINT) == signal.SIG_IGN
        ):
            # inherited (`evolve run ... &` in a script): a Ctrl-C while the command loads
            # stops it; then evolve/cli/stopping.py takes SIGINT and SIGTERM for the run
            signal.signal(signal.SIGINT, signal.default_int_handler)
        if args.command in ("run", "resume", "demo"):
            from evolve.cli.demo import cmd_demo
            from evolve.cli.outlasting import outlasting
            from evolve.cli.run import cmd_resume, cmd_run

            with outlasting():  # a reader that goes away (`| head`) never ends the run
                if args.command == "demo":
                    return cmd_demo(args)
                return cmd_run(args) if args.command == "run" else cmd_resume(args)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "check":
            from evolve.cli.check import cmd_check

            return cmd_check(args)
        if args.command == "sandbox":
            return cmd_sandbox(args)
        if args.command == "ui":
            from evolve.cli.ui import cmd_ui

            return cmd_ui(args)
        if args.command == "bench":
            from evolve.cli.bench import cmd_bench

            return cmd_bench(args)
        if args.command == "data":
            return cmd_data_fetch(args)
        if args.command == "new":
            from evolve.cli.scaffold import scaffold

            path = scaffold(args.name, args.files)
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
    """Remove what dead evolve processes left in the temp folder (evaluators/machine.py);
    never a reason for a command to fail."""
    try:
        from evaluators.machine import sweep

        sweep()
    except Exception:
        pass


def _fail(args, message: str) -> int:
    """Bad input or an unusable runs dir: one line on stderr per error (several only
    where the message lists several, as --strict-config's unknown keys), exit code 2."""
    for line in [line for line in message.splitlines() if line.strip()] or ["failed"]:
        print(safe_text(f"evolve {args.command}: error: {line}"), file=sys.stderr)
    return 2


def cmd_data_fetch(args) -> int:
    from evolve.problem.data import data_dir_for, fetch
    from evolve.problem.load import load_problem

    problem = load_problem(args.problem_dir)
    if not problem.data:
        raise UsageError(f"{problem.root / 'problem.toml'}: declares no [[data]] files")
    for line in fetch(
        list(problem.data), data_dir_for(problem.root)
    ):  # DataError: one line, exit 2
        print(safe_text(line))
    return 0


def cmd_sandbox(args) -> int:
    """`evolve sandbox build [--problem DIR]`: the Docker sandbox's image, and the layer with
    DIR's requirements.txt and tools (cargo, g++) on it, each built only when its inputs
    changed. --force rebuilds the top of what is asked for (the problem's layer with
    --problem, else the image on its base); only --force-base debootstraps the Debian base
    again."""
    from evaluators.docker.image import ImageError, exists
    from evaluators.docker.image_build import build
    from evaluators.docker.image_layers import layer_inputs, layer_tag, problem_image
    from evaluators.machine import engine
    from evolve.problem.load import load_problem

    def log(line: str) -> None:
        print(safe_text(line), file=sys.stderr, flush=True)

    problem = args.problem
    if problem is not None and not os.path.isdir(problem):
        raise UsageError(f"--problem {problem}: not a folder")
    tools: tuple[str, ...] = ()
    if problem is not None and any(
        os.path.isfile(os.path.join(problem, f))
        for f in ("problem.toml", "evaluator.py", "evaluate.py")
    ):  # a problem folder declares its tools (a broken one: one line); a bare folder has none
        tools = load_problem(problem).tools
    client, why = engine()
    if client is None:
        raise UsageError(why)
    try:
        tag, built = build(
            client,
            dockerfile=args.dockerfile,
            force=args.force and problem is None,  # with --problem: its layer alone
            mirror=args.mirror,
            log=log,
            force_base=args.force_base,
        )
        inputs = layer_inputs(problem, tools) if problem is not None else None
        if problem is not None and not inputs:
            log(f"{problem} has no requirements.txt nor tools: its evaluations use {tag} as it is")
        elif inputs:
            layer = layer_tag(client, tag, inputs)
            built = args.force or not exists(client, layer)
            if built:
                problem_image(client, problem, log, tag, True, tools, inputs)
            tag = layer
    except ImageError as e:
        raise UsageError(str(e)) from None
    print(safe_text(tag if built else f"{tag} (up to date)"))
    return 0


def cmd_eval(args) -> int:
    """Score one program as a run would: the whole cascade on the train split, unless
    --split names another split (held-out data) or --stage one stage alone."""
    from dataclasses import asdict

    from evolve.archive import ProgramStatus
    from evolve.cli.common import given
    from evolve.pipeline import api
    from evolve.settings.flags import EVALUATE

    out = asdict(
        api.evaluate(
            args.problem_dir,
            args.program,
            split=args.split,
            stage=args.stage,
            **given(args, EVALUATE),
        )
    )
    if args.json:
        print(json.dumps(out))
    else:
        _print_eval(out)
    return 0 if out["status"] == ProgramStatus.OK else 1


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
