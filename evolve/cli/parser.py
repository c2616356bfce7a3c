"""The flags of every `evolve` command (argparse)."""

from __future__ import annotations

import argparse
import difflib
import math
from collections.abc import Callable
from typing import NoReturn

from evolve import __version__
from evolve.cli.archive import add_parser as add_archive_parser
from evolve.cli.ui import add_parser as add_ui_parser

SANDBOXES = ("auto", "local", "docker", "ray")  # evolve.sandboxes.CHOICES, not imported here
NODE_SANDBOXES = ("auto", "docker", "local")  # what evolve.sandboxes.make_sandbox builds on a node


class Parser(argparse.ArgumentParser):
    """argparse, with a bad flag reported as one line (usage is one `--help` away)."""

    def error(self, message: str) -> NoReturn:
        line = " ".join(message.split())
        if line.startswith("unrecognized arguments:"):
            line += self._did_you_mean(line.split(":", 1)[1].split())
        self.exit(2, f"{self.prog}: error: {line} (see `{self.prog} --help`)\n")

    def _did_you_mean(self, words: list[str]) -> str:
        """The known flag closest to the first unknown one (`--temprature`), if any."""
        flag = next((w.split("=")[0] for w in words if w.startswith("--")), None)
        known = {o for p in _parsers(self) for a in p._actions for o in a.option_strings}
        close = difflib.get_close_matches(flag, sorted(known), n=1, cutoff=0.75) if flag else []
        return f"; did you mean {close[0]}?" if close else ""


def _parsers(p: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """`p` and every subcommand's parser under it."""
    out = [p]
    for action in p._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):
                out += _parsers(sub)
    return out


def _data_seed(text: str) -> int:
    """An argparse type: a run's private data seed (evolve/data_seed.py)."""
    from evolve.data_seed import check

    try:
        return check(int(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _integer(minimum: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer, at least `minimum`."""
    want = "an integer" if minimum is None else f"an integer >= {minimum}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if minimum is not None and value < minimum:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text}")
        return value

    return parse


def _number(
    low: float | None = None, high: float | None = None, *, above: float | None = None
) -> Callable[[str], float]:
    """An argparse type: a finite number within [low, high], or greater than `above`."""
    if above is not None:
        want = f"a number > {above:g}"
    elif low is not None and high is not None:
        want = f"a number within [{low:g}, {high:g}]"
    else:
        want = "a number"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        ok = math.isfinite(value)
        ok = ok and (above is None or value > above)
        ok = ok and (low is None or value >= low) and (high is None or value <= high)
        if not ok:
            raise argparse.ArgumentTypeError(f"expected {want}, got {text}")
        return value

    return parse


def _model(text: str) -> str:
    """`NAME[:WEIGHT]`: a weight must be a positive number. A name may carry a tag after a
    colon (Ollama's `qwen2.5-coder:7b`): a tag with a digit, or `latest`, is kept in the
    name; anything else after the last colon is read as a mistyped weight."""
    if text.startswith("local:") or text == "local":
        return text
    name, sep, tail = text.rpartition(":")
    if not text or (sep and not name) or (sep and not tail):
        raise argparse.ArgumentTypeError(f"expected NAME or NAME:WEIGHT, got {text!r}")
    if not sep:
        return text
    try:
        weight: float | None = float(tail)
    except ValueError:
        weight = None
    if weight is None and (any(c.isdigit() for c in tail) or tail == "latest"):
        return text  # a model tag
    if weight is None or not (math.isfinite(weight) and weight > 0):
        hint = "" if weight is not None else f" (a name with a colon takes one too: {text}:1)"
        raise argparse.ArgumentTypeError(f"{text}: weight {tail!r} must be a positive number{hint}")
    return text


def _env_entry(text: str) -> str:
    """`NAME` or `NAME=VALUE` (whether NAME is set is checked when the problem loads)."""
    from evolve.settings.environ import check_env_entry

    problem = check_env_entry(text)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return text


def _problem_flags(p: argparse.ArgumentParser) -> None:
    """How the problem's programs are evaluated, over its folder's settings (run, eval
    and check; `run` stores them so `resume` evaluates the same way)."""
    p.add_argument(
        "--env",
        action="append",
        type=_env_entry,
        metavar="NAME[=VALUE]",
        help="environment variable for the evaluator (NAME alone: its value here); repeatable",
    )
    p.add_argument(
        "--initial-program",
        metavar="PATH",
        help="the seed program (default: the folder's entry, or initial_program.py)",
    )
    p.add_argument(
        "--timeout",
        type=_number(above=0),
        metavar="SEC",
        help="wall-clock limit per evaluation (default: the problem's)",
    )
    p.add_argument(
        "--memory-mb",
        type=_integer(1),
        metavar="MB",
        help="memory limit per evaluation (default: the problem's)",
    )


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(
        prog="evolve", description="Evolve systems policies with an LLM and a sandboxed simulator."
    )
    ap.add_argument("--version", action="version", version=f"evolve {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser("run", help="start an evolution run on a problem folder")
    _run_flags(run)

    res = sub.add_parser("resume", help="continue a stopped or killed run")
    res.add_argument("run_id", metavar="RUN_ID")
    res.add_argument("--iterations", type=_integer(0), help="new total number of iterations")
    res.add_argument("--runs-dir", metavar="DIR")
    res.add_argument("--no-progress", action="store_true")
    res.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="a run on --sandbox ray: the cluster's address now (default: the one it started with)",
    )

    ev = sub.add_parser("eval", help="score one program file in the sandbox")
    ev.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ev.add_argument("program", metavar="PROGRAM_FILE")
    ev.add_argument(
        "--split",
        help="evaluate on this split (default, and for the train split: the whole cascade, "
        "as a run does; another split alone, as held-out re-scoring does)",
    )
    ev.add_argument(
        "--stage",
        metavar="NAME",
        help="run one cascade stage alone: a split of a native problem, or a function "
        "(evaluate, evaluate_stage1, ...) of an OpenEvolve evaluator",
    )
    ev.add_argument("--json", action="store_true", help="print one JSON object")
    ev.add_argument(
        "--data-seed",
        type=_data_seed,
        metavar="N",
        help="score on the workloads of a run with this private data seed (`evolve archive "
        "runs --json` shows it; default: the problem's public data)",
    )
    ev.add_argument(
        "--sandbox", choices=SANDBOXES, default="auto", help="where the program runs (default auto)"
    )
    _ray_flags(ev)
    _require_isolation(ev)
    _problem_flags(ev)

    ck = sub.add_parser("check", help="validate a problem folder and score its seed program")
    ck.add_argument("problem_dir", metavar="PROBLEM_DIR")
    ck.add_argument(
        "--sandbox", choices=SANDBOXES, default="auto", help="where the seed runs (default auto)"
    )
    _ray_flags(ck)
    _require_isolation(ck)
    _problem_flags(ck)

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
    sbb.add_argument(
        "--problem",
        metavar="DIR",
        help="also layer DIR/requirements.txt on the image (the host's pip fetches the wheels; "
        "`run`, `eval` and `check` with --sandbox docker do this on first use)",
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
    add_ui_parser(sub, SANDBOXES[:-1], _integer)  # baselines score here: no ray
    from evolve.cli.bench import add_parser as add_bench_parser

    add_bench_parser(sub, _integer, _data_seed)
    return ap


def _run_flags(run: argparse.ArgumentParser) -> None:
    """`evolve run`'s flags. Each defaults to None, "not given": evolve.cli.run merges a given
    flag over the problem's settings, the model's profile and RunConfig's defaults (the
    defaults in the help texts), so a flag given with its default value still wins."""
    run.add_argument("problem_dir", metavar="PROBLEM_DIR")
    _problem_flags(run)
    run.add_argument(
        "--iterations", type=_integer(0), help="total iterations (default: problem's, else 50)"
    )
    run.add_argument(
        "--model",
        action="append",
        type=_model,
        metavar="NAME[:WEIGHT]",
        help="model to sample from; repeat for an ensemble with weights",
    )
    run.add_argument(
        "--api-base", metavar="URL", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL)"
    )
    run.add_argument("--parallel", type=_integer(1), help="evaluations in flight (default 2)")
    run.add_argument(
        "--llm-parallel",
        type=_integer(1),
        help="LLM requests in flight (default: the model's profile, else 4)",
    )
    run.add_argument(
        "--seed", type=_integer(), help="seed for parent selection and sampling (default 0)"
    )
    run.add_argument(
        "--run-id", metavar="ID", help="name of the run (default: problem-date-random)"
    )
    run.add_argument(
        "--data-seed",
        type=_data_seed,
        metavar="N",
        help="the private seed of the generated workloads (default: a fresh secret one per "
        "run, kept in the archive; never shown to the model or the candidates)",
    )
    run.add_argument(
        "--budget-usd",
        type=_number(above=0),
        metavar="X",
        help="stop once LLM spend reaches X dollars",
    )
    run.add_argument(
        "--time-limit",
        type=_number(above=0),
        metavar="SEC",
        help="stop dispatching after SEC seconds",
    )
    run.add_argument(
        "--sandbox",
        choices=SANDBOXES,
        help="where candidates run (default auto: docker if its engine and image are there, "
        "else local; ray: tasks on a Ray cluster)",
    )
    _ray_flags(run, default=None)
    _require_isolation(run, default=None)
    run.add_argument(
        "--islands", type=_integer(1), help="number of islands (default: problem's, else 3)"
    )
    run.add_argument(
        "--migration-interval",
        type=_integer(1),
        help="iterations between migrations (default 20)",
    )
    run.add_argument(
        "--edit-format", choices=["diff", "block", "full"], help="what the model is asked for"
    )
    run.add_argument(
        "--crossover-rate",
        type=_number(0, 1),
        help="share of crossover prompts, within [0, 1] (default 0.1)",
    )
    run.add_argument(
        "--temperature",
        type=_number(0, 2),
        help="sampling temperature, within [0, 2] (default: problem's, else the model's, else 0.8)",
    )
    run.add_argument(
        "--max-tokens",
        type=_integer(1),
        help="max tokens per reply (default: problem's, else the model's, else 4096)",
    )
    run.add_argument(
        "--llm-timeout",
        type=_number(above=0),
        metavar="SEC",
        help="per-request timeout (default: the model's profile, else 120)",
    )
    run.add_argument(
        "--llm-retries", type=_integer(0), help="retries on 429/5xx/timeouts (default 4)"
    )
    run.add_argument(
        "--llm-backoff",
        type=_number(above=0),
        metavar="SEC",
        help="first retry delay; doubles per retry, with jitter (default 1)",
    )
    _search_flags(run)
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


def _temperatures(text: str) -> tuple[float, ...]:
    """An argparse type: comma-separated temperatures, each within [0, 2]."""
    one = _number(0, 2)
    try:
        values = tuple(one(t) for t in text.split(",") if t.strip())
    except argparse.ArgumentTypeError as e:
        raise argparse.ArgumentTypeError(f"expected temperatures like 0.5,0.8,1.1: {e}") from None
    if not values:
        raise argparse.ArgumentTypeError("expected at least one temperature, e.g. 0.5,0.8,1.1")
    return values


def _search_flags(run: argparse.ArgumentParser) -> None:
    """How the search spends its calls (evolve/search/); defaults: problem's, then the
    model's profile, then RunConfig's."""
    run.add_argument(
        "--max-calls",
        type=_integer(1),
        metavar="N",
        help="stop once N LLM calls have been answered (resamples, repairs and meta-notes count)",
    )
    run.add_argument(
        "--max-resamples",
        type=_integer(0),
        metavar="N",
        help="ask again, up to N times, when a reply repeats a program of the run (default 2)",
    )
    run.add_argument(
        "--repair-attempts",
        type=_integer(0),
        metavar="N",
        help="calls to fix a child that failed with a syntax, runtime or output error (default 1)",
    )
    run.add_argument(
        "--temperatures",
        type=_temperatures,
        metavar="T,T,...",
        help="draw each call's temperature from these (default: --temperature alone)",
    )
    run.add_argument(
        "--prompt-style",
        choices=["full", "short", "funsearch"],
        help="full prompts, short ones for small models, or FunSearch's (the two best "
        "versions as _v0, _v1; the model writes _v2) (default: the model's profile)",
    )
    run.add_argument(
        "--meta-interval",
        type=_integer(0),
        metavar="N",
        help="every N calls, one call summarises what worked into notes for later prompts "
        "(0: off; default: the model's profile)",
    )
    run.add_argument(
        "--stagnation",
        type=_integer(0),
        metavar="K",
        help="after K iterations without a new best: a burst on the escalation model and the "
        "worst island restarted from the best (0: off; default: the model's profile)",
    )
    run.add_argument(
        "--burst-calls",
        type=_integer(1),
        metavar="N",
        help="calls of a stagnation burst (default 4)",
    )
    run.add_argument(
        "--escalation-model",
        metavar="NAME",
        help="the model of a stagnation burst, on the run's endpoint (default: the lowest-weighted"
        " --model)",
    )


def _ray_flags(p: argparse.ArgumentParser, default: str | None = "auto") -> None:
    p.add_argument(
        "--ray-address",
        metavar="HOST:PORT",
        help="with --sandbox ray: the cluster's head (`ray start --head` prints it; "
        "default: a private Ray instance on this machine, for this command only)",
    )
    p.add_argument(
        "--ray-node-sandbox",
        choices=NODE_SANDBOXES,
        default=default,
        help="with --sandbox ray: how each node runs a candidate (default auto: docker where "
        "the node has its engine and image, else local)",
    )
    p.add_argument(
        "--allow-unisolated-ray-nodes",
        action="store_true",
        default=False if default else None,
        help="with --sandbox ray: evaluate on nodes whose local sandbox has no namespaces "
        "(no bubblewrap, or EVOLVE_LOCAL_ISOLATION=off), where a candidate reaches the node's "
        "network and Ray cluster (default: refuse)",
    )


def _require_isolation(p: argparse.ArgumentParser, default: bool | None = False) -> None:
    p.add_argument(
        "--require-isolation",
        action="store_true",
        default=default,
        help="refuse to run if the local sandbox lost any isolation guarantee here (default: warn)",
    )
