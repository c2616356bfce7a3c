"""`evolve bench`: each problem K times (seeds 0..K-1) with the same budget of LLM calls, one
table of normalised held-out scores and yields, a curve PNG, and rows in `bench_runs`.

The work is evolve/benchmark/'s; this module checks the input, reports progress on stderr,
prints the table (rich) or one JSON object on stdout, and draws the curve.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from evolve.cli.common import UsageError, new_run_id, runs_dir
from evolve.cli.safe_text import safe_rich, safe_text

if TYPE_CHECKING:  # the parser imports this module: the benchmark loads when it runs
    from evolve.benchmark.measure import RunResult
    from evolve.benchmark.normalise import References
    from evolve.benchmark.runner import BenchProblem, BenchSpec
    from evolve.benchmark.table import ProblemSummary

# `evolve run` flags the bench sets itself: a --run-arg may not set them again.
_OWN_FLAGS = (
    "--model --seed --max-calls --iterations --run-id --runs-dir --api-base --sandbox "
    "--no-progress --data-seed"
).split()
_BENCH_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


def add_parser(sub, integer, data_seed) -> None:
    """`evolve bench`'s flags; `evolve run`'s parser must be in `sub` already (--run-arg is
    checked against its flags). `integer` and `data_seed`: the argparse types of the others."""
    run = sub.choices["run"]
    b = sub.add_parser(
        "bench",
        help="run problems K times with the same budget of LLM calls; normalised held-out table",
        description="Run each PROBLEM_DIR once per seed (0..K-1) as `evolve run` with the same "
        "budget of LLM calls, then print per problem the normalised held-out score (0: the "
        "seed's, 100: the best of its baselines and reference programs) as median and min..max "
        "over seeds, with valid share, duplicates, yields, tokens and wall time; draw its "
        "curve over calls as a PNG and keep the results in the archive (`evolve ui`: /bench).",
    )
    b.add_argument(
        "problem_dirs",
        nargs="+",
        metavar="PROBLEM_DIR",
        help="problem folders, or a suite's name: adrs (the seven problems of the ADRS "
        "leaderboard)",
    )
    b.add_argument("--model", required=True, metavar="NAME", help="the one model every run uses")
    b.add_argument(
        "--calls", required=True, type=integer(1), metavar="N", help="answered LLM calls per run"
    )
    b.add_argument(
        "--seeds",
        required=True,
        type=integer(1),
        metavar="K",
        help="runs per problem: seeds 0..K-1",
    )
    b.add_argument("--api-base", metavar="URL", help="OpenAI-compatible endpoint of the model")
    b.add_argument(
        "--runs-dir", metavar="DIR", help="archive location (default ./runs or $EVOLVE_RUNS_DIR)"
    )
    b.add_argument(
        "--bench-id",
        metavar="ID",
        help="name of the benchmark (default bench-date-random); runs are ID-PROBLEM-sSEED",
    )
    b.add_argument(
        "--sandbox",
        choices=("auto", "local", "docker", "ray"),
        default="auto",
        help="where candidates, the seed and the baselines run (default auto); ray: the "
        "runs' candidates on Ray (a cluster: --run-arg=--ray-address=HOST:PORT), the seed "
        "and the baselines here",
    )
    b.add_argument(
        "--run-arg",
        action="append",
        default=[],
        metavar="--FLAG[=VALUE]",
        help="one more `evolve run` flag for every run, written with `=`: "
        "--run-arg=--temperature=0.5; repeatable",
    )
    b.add_argument(
        "--data-seed",
        type=data_seed,
        metavar="N",
        help="the private seed of every run's generated workloads, under which the seed and "
        "the baselines are scored too (default: a fresh secret one per benchmark)",
    )
    b.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    # `evolve run`'s flags, each with whether it takes a value
    b.set_defaults(run_flags={o: a.nargs != 0 for a in run._actions for o in a.option_strings})


def check_run_args(given: list[str], flags: dict[str, bool]) -> tuple[str, ...]:
    for arg in given:
        name, eq, _ = arg.partition("=")
        if not name.startswith("--") or name not in flags:
            raise UsageError(f"--run-arg {arg}: not a flag of `evolve run`")
        if name in _OWN_FLAGS:
            raise UsageError(f"--run-arg {arg}: evolve bench sets {name} itself")
        if flags[name] and not eq:
            raise UsageError(f"--run-arg {arg}: give its value with `=`: --run-arg={name}=VALUE")
    return tuple(given)


def spec_from_args(args) -> BenchSpec:
    """The benchmark the flags ask for, or UsageError naming the flag or folder."""
    from evolve.benchmark.runner import BenchProblem, BenchSpec
    from evolve.benchmark.suites import SuiteError, expand
    from evolve.llm.profiles import is_local
    from evolve.pipeline.endpoints import check_endpoint
    from evolve.problem import data_seed
    from evolve.problem.load import ProblemError, load_problem

    try:
        folders = expand(args.problem_dirs)
    except SuiteError as e:
        raise UsageError(f"PROBLEM_DIR {e}") from None
    problems: list[BenchProblem] = []
    for folder in folders:
        try:
            problem = load_problem(folder)
        except ProblemError as e:
            raise UsageError(f"PROBLEM_DIR {e}") from None
        if not is_local(args.model):
            check_endpoint(args.api_base, problem)  # a malformed URL: one line, now
        if any(p.name == problem.name for p in problems):
            raise UsageError(f"PROBLEM_DIR {folder}: a second folder of problem {problem.name}")
        problems.append(BenchProblem(problem.name, str(problem.root)))
    if is_local(args.model) and args.api_base:
        raise UsageError(
            f"--model {args.model}: a local model is served by evolve itself; drop --api-base"
        )
    bench_id = args.bench_id or new_run_id("bench")
    if not _BENCH_ID.fullmatch(bench_id):
        raise UsageError(
            f"--bench-id {bench_id}: letters, digits, '.', '_' and '-' only (100 at most)"
        )
    flags: dict[str, bool] = args.run_flags
    return BenchSpec(
        bench_id=bench_id,
        problems=tuple(problems),
        model=args.model,
        calls=args.calls,
        seeds=args.seeds,
        runs_dir=runs_dir(args),
        api_base=args.api_base,
        sandbox=args.sandbox,
        run_args=check_run_args(args.run_arg, flags),
        max_calls_flag="--max-calls" in flags,
        data_seed=data_seed.draw() if args.data_seed is None else args.data_seed,
    )


def cmd_bench(args) -> int:
    from evolve.benchmark.measure import RunResult
    from evolve.benchmark.normalise import References
    from evolve.benchmark.runner import check_new, run_bench
    from evolve.export.bench_picture import write_bench_curve

    spec = spec_from_args(args)
    check_new(spec)  # an id in use, a broken runs dir: one line, before anything is said

    def log(line: str) -> None:
        print(safe_text(line), file=sys.stderr, flush=True)

    log(
        f"evolve bench {spec.bench_id}: {len(spec.problems)} problem(s) x {spec.seeds} seed(s),"
        f" {spec.calls} LLM calls each, model {spec.model}, data seed {spec.data_seed}"
    )

    def progress(kind: str, problem: BenchProblem, what: object) -> None:
        if isinstance(what, References):
            log(f"{problem.name}: {_references_line(what)}")
        elif isinstance(what, RunResult):
            log(f"{problem.name} seed {what.seed}: {_run_line(what)}")

    summaries = run_bench(spec, progress, log)
    curve = write_bench_curve(
        summaries,
        spec.log_dir() / "curve.png",
        f"{spec.bench_id}: {spec.model}, {spec.calls} calls, {spec.seeds} seed(s)",
        spec.calls,
    )
    if args.json:
        print(json.dumps(_finite(bench_json(spec, summaries, curve))))
    else:
        print_table(spec, summaries)
    log(f"curve: {curve}")
    where = "" if args.runs_dir is None else f" --runs-dir {args.runs_dir}"
    log(f"inspect it: evolve ui{where} --open, then /bench/{spec.bench_id}")
    return 0 if all(s.failed == 0 for s in summaries) else 1


def bench_json(spec: BenchSpec, summaries: list[ProblemSummary], curve: Path) -> dict:
    return {
        "bench_id": spec.bench_id,
        "model": spec.model,
        "calls": spec.calls,
        "seeds": spec.seeds,
        "data_seed": spec.data_seed,
        "runs_dir": str(spec.runs_dir),
        "curve_png": str(curve),
        "problems": [s.to_json() for s in summaries],
    }


def _finite(v):
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def _num(v: float | None, fmt: str = "{:.4g}") -> str:
    return "n/a" if v is None else fmt.format(v)


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.0f}%"


def _references_line(r: References) -> str:
    base = (
        f"{r.best_baseline_name} {_num(r.best_baseline_test)}" if r.best_baseline_name else "none"
    )
    why = r.no_scale()
    tail = f" (no normalised scores: {why})" if why else ""
    return f"held-out seed {_num(r.seed_test)}, best shipped program {base}{tail}"


def _run_line(r: RunResult) -> str:
    error = f" ({r.error})" if r.error else ""
    return (
        f"{r.status}{error}, {r.calls} calls, held-out {_num(r.held_out)}, "
        f"normalised {_num(r.normalised, '{:.1f}')}, {r.wall_s:.1f} s"
    )


def print_table(spec: BenchSpec, summaries: list[ProblemSummary]) -> None:
    """The table, never cut or wrapped (numbers are no use folded in two), then one line
    per problem on what its scale is made of."""
    from rich.console import Console
    from rich.table import Table

    t = Table(
        title=safe_rich(
            f"{spec.bench_id}: {spec.model}, {spec.calls} LLM calls x {spec.seeds} seed(s)"
        ),
        title_justify="left",
    )
    for col in COLUMNS:
        t.add_column(col, justify="left" if col == "problem" else "right", no_wrap=True)
    for s in summaries:
        spread = (
            "n/a"
            if s.normalised_min is None
            else f"{s.normalised_min:.1f}..{_num(s.normalised_max, '{:.1f}')}"
        )
        failed = f" ({s.failed} failed)" if s.failed else ""
        t.add_row(
            safe_rich(s.problem + failed),
            _num(s.normalised_median, "{:.1f}"),
            spread,
            _num(s.held_out_median),
            _pct(s.valid_share),
            _num(s.duplicates, "{:g}"),
            _pct(s.new_yield),
            _pct(s.behaviour_yield),
            _num(s.tuned, "{:g}"),
            _num(s.calls, "{:g}"),
            _num(s.tokens, "{:,.0f}"),
            _num(s.evaluations, "{:g}"),
            _num(s.agent_evals, "{:g}"),
            _num(s.wall_s, "{:.1f}s"),
        )
    out = Console()
    need = Console(width=1_000_000).measure(t).maximum
    if need > out.width:
        out = Console(width=need)
    out.print(t)
    for line in LEGEND:
        out.print(safe_rich(line), soft_wrap=True)
    for s in summaries:
        out.print(safe_rich(f"{s.problem}: {_references_line(s.references)}"), soft_wrap=True)


COLUMNS = (
    "problem",
    "normalised",
    "min..max",
    "held-out",
    "valid",
    "dup",
    "new",
    "beh-new",
    "tuned",
    "calls",
    "tokens",
    "evals",
    "agent-evals",
    "wall",
)
LEGEND = (
    "Medians over seeds. normalised: held-out score, 0 = the seed's, 100 = the best of the "
    "folder's baselines and reference programs;"
    " valid: calls giving a valid program; dup: calls repeating a program of the run; new: calls"
    " giving a program not evaluated before in the run; beh-new: calls giving a valid program"
    " whose train score no earlier program of the run has; tuned: programs evaluated with"
    " a number of a model-written program halved or doubled, without a call; calls: answered"
    " LLM calls (an agent's turns among them); evals: candidates evaluated on train;"
    " agent-evals: train evaluations agents ran inside their sessions (not candidates).",
)
