"""The flags of every `evolve` command (argparse)."""

from __future__ import annotations

import argparse

from evolve import __version__
from evolve.cli.archive import add_parser as add_archive_parser

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
    ap = argparse.ArgumentParser(
        prog="evolve", description="Evolve systems policies with an LLM and a sandboxed simulator."
    )
    ap.add_argument("--version", action="version", version=f"evolve {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="start an evolution run on a problem folder")
    run.add_argument("problem_dir", metavar="PROBLEM_DIR")
    run.add_argument(
        "--iterations", type=_positive_int, help="total iterations (default: problem's, else 50)"
    )
    run.add_argument(
        "--model",
        action="append",
        metavar="NAME[:WEIGHT]",
        help="model to sample from; repeat for an ensemble with weights",
    )
    run.add_argument(
        "--api-base", metavar="URL", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)"
    )
    run.add_argument(
        "--parallel", type=_positive_int, default=2, help="evaluations in flight (default 2)"
    )
    run.add_argument(
        "--llm-parallel", type=_positive_int, default=4, help="LLM requests in flight (default 4)"
    )
    run.add_argument("--seed", type=int, default=0, help="seed for parent selection and sampling")
    run.add_argument(
        "--run-id", metavar="ID", help="name of the run (default: problem-date-random)"
    )
    run.add_argument(
        "--budget-usd",
        type=_positive_float,
        metavar="X",
        help="stop once LLM spend reaches X dollars",
    )
    run.add_argument(
        "--time-limit",
        type=_positive_float,
        metavar="SEC",
        help="stop dispatching after SEC seconds",
    )
    run.add_argument(
        "--sandbox",
        choices=SANDBOXES,
        default="auto",
        help="where candidates run (default auto: docker if its engine and image are there, else local)",
    )
    _require_isolation(run)
    run.add_argument(
        "--islands", type=_positive_int, help="number of islands (default: problem's, else 3)"
    )
    run.add_argument(
        "--migration-interval", type=_positive_int, default=20, help="iterations between migrations"
    )
    run.add_argument(
        "--edit-format", choices=["diff", "block", "full"], help="what the model is asked for"
    )
    run.add_argument("--crossover-rate", type=float, default=0.1, help="share of crossover prompts")
    run.add_argument("--temperature", type=float, help="sampling temperature (default 0.8)")
    run.add_argument("--max-tokens", type=_positive_int, help="max tokens per reply (default 4096)")
    run.add_argument(
        "--llm-timeout", type=_positive_float, default=120.0, help="per-request timeout, seconds"
    )
    run.add_argument(
        "--llm-retries", type=_positive_int, default=4, help="retries on 429/5xx/timeouts"
    )
    run.add_argument(
        "--llm-backoff",
        type=_positive_float,
        default=1.0,
        metavar="SEC",
        help="first retry delay; doubles per retry, with jitter (default 1)",
    )
    run.add_argument(
        "--prices",
        metavar="FILE",
        help="JSON/TOML price table: model -> {input, output} $/1M tokens",
    )
    run.add_argument(
        "--runs-dir", metavar="DIR", help="archive location (default ./runs or $EVOLVE_RUNS_DIR)"
    )
    run.add_argument(
        "--no-progress", action="store_true", help="plain log lines instead of the live display"
    )

    res = sub.add_parser("resume", help="continue a stopped or killed run")
    res.add_argument("run_id", metavar="RUN_ID")
    res.add_argument("--iterations", type=_positive_int, help="new total number of iterations")
    res.add_argument("--runs-dir", metavar="DIR")
    res.add_argument("--no-progress", action="store_true")

    ev = sub.add_parser("eval", help="score one program file in the sandbox")
    ev.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ev.add_argument("program", metavar="PROGRAM_FILE")
    ev.add_argument(
        "--split", help="evaluate this split only (default: the cascade up to the train split)"
    )
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument(
        "--sandbox", choices=SANDBOXES, default="auto", help="where the program runs (default auto)"
    )
    _require_isolation(ev)

    ck = sub.add_parser("check", help="validate a problem folder and score its seed program")
    ck.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ck.add_argument(
        "--sandbox", choices=SANDBOXES, default="auto", help="where the seed runs (default auto)"
    )
    _require_isolation(ck)

    sb = sub.add_parser("sandbox", help="manage the Docker sandbox's image")
    sb_sub = sb.add_subparsers(dest="sandbox_command", required=True, metavar="ACTION")
    sbb = sb_sub.add_parser(
        "build", help="build the evaluation image (skipped when it is up to date)"
    )
    sbb.add_argument(
        "--dockerfile",
        action="store_true",
        help="build evaluators/docker/Dockerfile (FROM python:3.11-slim; needs a registry) "
        "instead of the Debian base made with debootstrap",
    )
    sbb.add_argument(
        "--force", action="store_true", help="rebuild even if an image of the tag exists"
    )
    sbb.add_argument(
        "--mirror",
        metavar="URL",
        help="Debian mirror for debootstrap (default "
        "$EVOLVE_DEBIAN_MIRROR, else http://deb.debian.org/debian)",
    )

    data = sub.add_parser(
        "data", help="the workload files a problem declares ([[data]] in problem.toml)"
    )
    data_sub = data.add_subparsers(dest="data_command", required=True, metavar="ACTION")
    fetch = data_sub.add_parser(
        "fetch", help="download them again from their urls, verifying each SHA-256"
    )
    fetch.add_argument("problem_dir", metavar="PROBLEM_DIR")

    new = sub.add_parser("new", help="scaffold a problem folder that passes `evolve check`")
    new.add_argument(
        "name", metavar="NAME", help="folder to create (its last part names the problem)"
    )

    add_archive_parser(sub)
    return ap


def _require_isolation(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--require-isolation",
        action="store_true",
        help="refuse to run if the local sandbox lost any isolation guarantee here (default: warn)",
    )
