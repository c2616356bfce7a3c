"""`evolve` command line: run, resume, eval, check, new, sandbox, archive.

Bad input ends with exit code 2 and one line naming the flag, file or field;
nothing is written to the archive before the input has been validated.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from evolve import __version__
from evolve.cli_common import UsageError

SANDBOXES = ("auto", "local", "docker")  # evolve.sandboxes.CHOICES, without importing it here


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {v}")
    return v


def _positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not v > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text}")
    return v


def build_parser() -> argparse.ArgumentParser:
    from evolve import archive_cli

    ap = argparse.ArgumentParser(prog="evolve", description="Evolve systems policies with an LLM and a sandboxed simulator.")
    ap.add_argument("--version", action="version", version=f"evolve {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="start an evolution run on a problem folder")
    run.add_argument("problem_dir", metavar="PROBLEM_DIR")
    run.add_argument("--iterations", type=_positive_int, help="total iterations (default: problem's, else 50)")
    run.add_argument("--model", action="append", metavar="NAME[:WEIGHT]",
                     help="model to sample from; repeat for an ensemble with weights")
    run.add_argument("--api-base", metavar="URL", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)")
    run.add_argument("--parallel", type=_positive_int, default=2, help="evaluations in flight (default 2)")
    run.add_argument("--llm-parallel", type=_positive_int, default=4, help="LLM requests in flight (default 4)")
    run.add_argument("--seed", type=int, default=0, help="seed for parent selection and sampling")
    run.add_argument("--run-id", metavar="ID", help="name of the run (default: problem-date-random)")
    run.add_argument("--budget-usd", type=_positive_float, metavar="X", help="stop once LLM spend reaches X dollars")
    run.add_argument("--time-limit", type=_positive_float, metavar="SEC", help="stop dispatching after SEC seconds")
    run.add_argument("--sandbox", choices=SANDBOXES, default="auto",
                     help="where candidates run (default auto: docker if its engine and image are there, else local)")
    run.add_argument("--islands", type=_positive_int, help="number of islands (default: problem's, else 3)")
    run.add_argument("--migration-interval", type=_positive_int, default=20, help="iterations between migrations")
    run.add_argument("--edit-format", choices=["diff", "block", "full"], help="what the model is asked for")
    run.add_argument("--crossover-rate", type=float, default=0.1, help="share of crossover prompts")
    run.add_argument("--temperature", type=float, help="sampling temperature (default 0.8)")
    run.add_argument("--max-tokens", type=_positive_int, help="max tokens per reply (default 4096)")
    run.add_argument("--llm-timeout", type=_positive_float, default=120.0, help="per-request timeout, seconds")
    run.add_argument("--llm-retries", type=_positive_int, default=4, help="retries on 429/5xx/timeouts")
    run.add_argument("--llm-backoff", type=_positive_float, default=1.0, metavar="SEC",
                     help="first retry delay; doubles per retry, with jitter (default 1)")
    run.add_argument("--prices", metavar="FILE", help="JSON/TOML price table: model -> {input, output} $/1M tokens")
    run.add_argument("--runs-dir", metavar="DIR", help="archive location (default ./runs or $EVOLVE_RUNS_DIR)")
    run.add_argument("--no-progress", action="store_true", help="plain log lines instead of the live display")

    res = sub.add_parser("resume", help="continue a stopped or killed run")
    res.add_argument("run_id", metavar="RUN_ID")
    res.add_argument("--iterations", type=_positive_int, help="new total number of iterations")
    res.add_argument("--runs-dir", metavar="DIR")
    res.add_argument("--no-progress", action="store_true")

    ev = sub.add_parser("eval", help="score one program file in the sandbox")
    ev.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ev.add_argument("program", metavar="PROGRAM_FILE")
    ev.add_argument("--split", help="evaluate this split only (default: the cascade up to the train split)")
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument("--sandbox", choices=SANDBOXES, default="auto", help="where the program runs (default auto)")

    ck = sub.add_parser("check", help="validate a problem folder and score its seed program")
    ck.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ck.add_argument("--sandbox", choices=SANDBOXES, default="auto", help="where the seed runs (default auto)")

    sb = sub.add_parser("sandbox", help="manage the Docker sandbox's image")
    sb_sub = sb.add_subparsers(dest="sandbox_command", required=True, metavar="ACTION")
    sbb = sb_sub.add_parser("build", help="build the evaluation image (skipped when it is up to date)")
    sbb.add_argument("--dockerfile", action="store_true",
                     help="build evaluators/docker/Dockerfile (FROM python:3.11-slim; needs a registry) "
                          "instead of the Debian base made with debootstrap")
    sbb.add_argument("--force", action="store_true", help="rebuild even if an image of the tag exists")
    sbb.add_argument("--mirror", metavar="URL", help="Debian mirror for debootstrap (default "
                     "$EVOLVE_DEBIAN_MIRROR, else http://deb.debian.org/debian)")

    new = sub.add_parser("new", help="scaffold a problem folder that passes `evolve check`")
    new.add_argument("name", metavar="NAME", help="folder to create (its last part names the problem)")

    archive_cli.add_parser(sub)
    return ap


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "run":
            from evolve.run_cli import cmd_run
            return cmd_run(args)
        if args.command == "resume":
            from evolve.run_cli import cmd_resume
            return cmd_resume(args)
        if args.command == "eval":
            return cmd_eval(args)
        if args.command == "check":
            return cmd_check(args)
        if args.command == "sandbox":
            return cmd_sandbox(args)
        if args.command == "new":
            from evolve.scaffold import scaffold
            path = scaffold(args.name)
            print(f"created {path}: fill in the TODOs, then run `evolve check {path}`")
            return 0
        from evolve import archive_cli
        return archive_cli.dispatch(args)
    except (UsageError, ValueError) as e:
        print(f"evolve {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"evolve {args.command}: interrupted", file=sys.stderr)
        return 130


def cmd_sandbox(args) -> int:
    """`evolve sandbox build`: the Docker sandbox's image, built only when its inputs changed."""
    from evaluators.image import ImageError, build
    from evolve.sandboxes import engine

    client, why = engine()
    if client is None:
        raise UsageError(why)
    try:
        tag, built = build(client, dockerfile=args.dockerfile, force=args.force, mirror=args.mirror,
                           log=lambda line: print(line, file=sys.stderr, flush=True))
    except ImageError as e:
        raise UsageError(str(e)) from None
    print(tag if built else f"{tag} (up to date)")
    return 0


def cmd_eval(args) -> int:
    from evolve.evaluation import CandidateEvaluator
    from evolve.problem import load_problem
    from evolve.sandboxes import make_sandbox

    problem = load_problem(args.problem_dir)
    path = Path(args.program)
    if not path.is_file():
        raise UsageError(f"{args.program}: no such program file")
    if args.split and args.split not in problem.splits:
        raise UsageError(f"--split {args.split}: not a split of {problem.name} (one of {', '.join(problem.splits)})")
    sandbox = make_sandbox(args.sandbox, 1)
    try:
        ev = CandidateEvaluator(problem, sandbox)
        code = path.read_text()
        if args.split:
            r = ev.run_split(code, args.split)
            out = {"status": r.status, "score": r.score, "metrics": r.metrics, "artifacts": r.artifacts,
                   "split": args.split, "eval_s": round(r.wall_s, 4)}
        else:
            o = ev.evaluate(code)
            out = {"status": o.status, "score": o.score, "metrics": o.metrics, "artifacts": o.artifacts,
                   "split": problem.train_split, "stages": o.scores, "eval_s": round(o.eval_s, 4)}
    finally:
        sandbox.close()
    if args.json:
        print(json.dumps(out))
    else:
        _print_eval(out)
    return 0 if out["status"] == "ok" else 1


def _print_eval(out: dict) -> None:
    from rich.console import Console
    from rich.table import Table

    t = Table(title=f"{out['split']}: {out['status']}", show_header=False)
    t.add_row("score", "-" if out["score"] is None else f"{out['score']:.6g}")
    for k, v in sorted(out["metrics"].items()):
        t.add_row(k, f"{v:.6g}" if isinstance(v, float) else str(v))
    t.add_row("eval time", f"{out['eval_s']:.3f} s")
    Console().print(t)
    for k, v in out["artifacts"].items():
        print(f"--- {k}\n{v.strip()}")


def cmd_check(args) -> int:
    from evolve.evaluation import CandidateEvaluator
    from evolve.problem import ProblemError, load_problem
    from evolve.sandboxes import make_sandbox

    try:
        problem = load_problem(args.problem_dir)
    except ProblemError as e:
        raise UsageError(str(e)) from None
    print(f"{problem.name} ({problem.fmt}): {problem.description}")
    print(f"  entry {problem.entry}, splits {', '.join(problem.splits)}, held-out {problem.test_split or '-'}")
    print(f"  cascade: {' -> '.join(s.function or s.split for s in problem.cascade)}")
    sandbox = make_sandbox(args.sandbox, 1)
    failed = False
    try:
        ev = CandidateEvaluator(problem, sandbox)
        o = ev.evaluate(problem.seed_code)
        failed |= o.status != "ok"
        print(f"  seed on {problem.train_split}: {o.status}, score {o.score}, {o.eval_s:.2f} s, metrics {o.metrics}")
        if o.status != "ok":
            for k, v in o.artifacts.items():
                print(f"    {k}: {v.strip()[-600:]}")
        if problem.test_split and o.status == "ok":
            r = ev.run_split(problem.seed_code, problem.test_split)
            failed |= r.status != "ok"
            print(f"  seed on {problem.test_split} (held out): {r.status}, score {r.score}, {r.wall_s:.2f} s")
    finally:
        sandbox.close()
    if failed:
        raise UsageError(f"{problem.root / problem.entry}: the seed program does not evaluate cleanly")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
