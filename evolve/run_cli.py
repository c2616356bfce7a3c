"""`evolve run` and `evolve resume`: wire config, archive, sandbox and LLM together."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from evolve.archive import Archive
from evolve.cli_common import UsageError, new_run_id, runs_dir
from evolve.config import RunConfig
from evolve.controller import Controller, RunSummary
from evolve.data import default_data_dir, ensure
from evolve.evaluation import CandidateEvaluator
from evolve.llm import LLMClient, ModelSpec
from evolve.pricing import PriceTable
from evolve.problem import Problem, ProblemError, load_problem
from evolve.progress import RunProgress
from evolve.sandboxes import make_sandbox


def config_from_args(args, problem: Problem) -> RunConfig:
    """Flags win over the problem folder's defaults, which win over ours."""
    try:
        models = tuple(ModelSpec.parse(m) for m in args.model) if args.model else None
    except ValueError as e:
        raise UsageError(str(e)) from None
    if models is None and problem.llm.models:
        models = tuple(ModelSpec(n, w) for n, w in problem.llm.models)
    kw = dict(problem_dir=str(problem.root), parallel=args.parallel, llm_parallel=args.llm_parallel,
              seed=args.seed, budget_usd=args.budget_usd, time_limit_s=args.time_limit,
              sandbox=args.sandbox, migration_interval=args.migration_interval,
              crossover_rate=args.crossover_rate, llm_timeout_s=args.llm_timeout,
              llm_retries=args.llm_retries, llm_backoff_s=args.llm_backoff, prices_file=args.prices)
    pick = {
        "iterations": (args.iterations, problem.iterations),
        "models": (models, None),
        "api_base": (args.api_base, problem.llm.api_base),
        "num_islands": (args.islands, problem.num_islands),
        "edit_format": (args.edit_format, problem.edit_format),
        "temperature": (args.temperature, problem.llm.temperature),
        "max_tokens": (args.max_tokens, problem.llm.max_tokens),
    }
    for key, (flag, from_problem) in pick.items():
        value = flag if flag is not None else from_problem
        if value is not None:
            kw[key] = value
    if args.prices and not Path(args.prices).is_file():
        raise UsageError(f"--prices {args.prices}: no such file")
    try:
        return RunConfig(**kw)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None


def cmd_run(args) -> int:
    try:
        problem = load_problem(args.problem_dir)
    except ProblemError as e:
        raise UsageError(str(e)) from None
    cfg = config_from_args(args, problem)
    ensure(list(problem.data), Path(cfg.data_dir) if cfg.data_dir else default_data_dir())
    archive = Archive(runs_dir(args))
    run_id = args.run_id or new_run_id(problem.name)
    if archive.get_run(run_id) is not None:
        raise UsageError(f"--run-id {run_id}: a run with this id exists; use `evolve resume {run_id}`")
    archive.create_run(run_id, problem.name, str(problem.root), cfg.to_json(), cfg.iterations)
    print(run_id, flush=True)
    return _execute(archive, run_id, cfg, problem, args.no_progress)


def cmd_resume(args) -> int:
    archive = Archive(runs_dir(args))
    run = archive.get_run(args.run_id)
    if run is None:
        raise UsageError(f"{args.run_id}: no such run in {archive.path}")
    cfg = RunConfig.from_json(run["config"])
    if args.iterations is not None:
        cfg = cfg.with_(iterations=args.iterations)
    try:
        problem = load_problem(run["problem_dir"])
    except ProblemError as e:
        raise UsageError(f"run {args.run_id}: {e}") from None
    archive.set_run_status(args.run_id, "running", None, target=cfg.iterations, config=cfg.to_json())
    print(args.run_id, flush=True)
    return _execute(archive, args.run_id, cfg, problem, args.no_progress)


def _execute(archive: Archive, run_id: str, cfg: RunConfig, problem: Problem, no_progress: bool) -> int:
    try:
        prices = PriceTable.load(cfg.prices_file)
    except ValueError as e:
        raise UsageError(str(e)) from None
    sandbox = make_sandbox(cfg.sandbox, cfg.parallel)
    llm = LLMClient(cfg.llm_config(), prices, seed=cfg.seed)
    progress = RunProgress(enabled=False if no_progress else None)
    ctl = Controller(archive, run_id, cfg, problem, CandidateEvaluator(problem, sandbox, cfg.data_dir),
                     llm, progress)

    async def go() -> RunSummary:
        try:
            return await ctl.run()
        finally:
            await llm.close()

    try:
        summary = asyncio.run(go())
    except KeyboardInterrupt:
        archive.set_run_status(run_id, "stopped", "interrupted")
        print(f"interrupted: `evolve resume {run_id}` continues the run", file=sys.stderr)
        return 130
    finally:
        sandbox.close()
    _report(archive, summary)
    if summary.status == "failed":
        print(f"evolve: error: {summary.reason}", file=sys.stderr)
        return 2
    return 0


def _report(archive: Archive, s: RunSummary) -> None:
    from evolve.plots import write_run_pictures

    seed = "-" if s.seed_score is None else f"{s.seed_score:.6g}"
    best = "-" if s.best_score is None else f"{s.best_score:.6g}"
    reason = f" ({s.reason})" if s.reason else ""
    print(f"run {s.run_id}: {s.status}{reason}; {s.iterations_done} iterations; best {best} (seed {seed})",
          file=sys.stderr)
    try:
        paths = write_run_pictures(archive, s.run_id)
        if paths:
            print("pictures: " + ", ".join(str(p) for p in paths), file=sys.stderr)
    except Exception as e:  # pictures are a convenience; never fail a finished run over them
        print(f"(no pictures: {e})", file=sys.stderr)
