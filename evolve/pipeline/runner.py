"""One run in this process: its lock, the local model's server, the sandbox, the LLM client
and the controller. However it ends (return, error, Ctrl-C) the run's row is left finished,
stopped or failed, never `running`, so `resume` continues it.

A front end takes part through RunHooks (evolve/pipeline/state.py: the command line prints its
lines there and owns Ctrl-C and SIGTERM) and the controller's RunObserver (its live display);
by default no one is told anything, and asyncio's own Ctrl-C handling stops the run cleanly.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from evaluators.sandbox import Sandbox
from evolve.archive import Archive, RunStatus
from evolve.llm import LLMClient
from evolve.llm.local_server import LocalServer
from evolve.pipeline.candidates import program_id
from evolve.pipeline.config import RunConfig
from evolve.pipeline.controller import Controller, RunOutcome
from evolve.pipeline.evaluation import CandidateEvaluator, problem_sandbox
from evolve.pipeline.launch import start_local
from evolve.pipeline.parts import RunParts
from evolve.pipeline.state import RunHooks, RunObserver
from evolve.problem.load import Problem


@contextmanager
def owning(archive: Archive, run_id: str, hooks: RunHooks) -> Iterator[None]:
    """Hold the run's lock for the whole block (RunBusy if a live process has it)."""
    lease = archive.claim(run_id)
    hooks.owning(archive.path, run_id)
    try:
        yield
    finally:
        lease.release()


def settle(archive: Archive, run_id: str, status: RunStatus, reason: str) -> None:
    """Leave the run `status` unless it already ended; best effort (a full disk may refuse:
    the lock is released all the same, so the run shows as interrupted and resumes)."""
    try:
        archive.settle_run(run_id, status, reason)
    except (sqlite3.Error, OSError):
        pass


def execute(
    archive: Archive,
    run_id: str,
    cfg: RunConfig,
    problem: Problem,
    parts: RunParts,
    observer: RunObserver | None,
    hooks: RunHooks,
    sandbox: Sandbox | None = None,
) -> RunOutcome:
    """Run the controller (the run's lock held by the caller) with the parts its settings
    made (evolve.pipeline.parts). `sandbox`: one to evaluate in instead of the run's own (a
    benchmark's); the caller closes it."""
    try:
        server = start_local(cfg)  # None unless the run uses the local model
        if server is not None:
            hooks.on_force(server.stop)
        try:
            summary = _execute_with(
                archive, run_id, cfg, problem, parts, observer, hooks, server, sandbox
            )
        finally:
            if server is not None:
                server.stop()
    except KeyboardInterrupt:
        settle(archive, run_id, RunStatus.STOPPED, "interrupted")
        raise
    except ValueError as e:  # UsageError among them
        settle(archive, run_id, RunStatus.FAILED, str(e))
        raise
    except BaseException as e:
        settle(archive, run_id, RunStatus.FAILED, f"{type(e).__name__}: {e}")
        raise
    settle(archive, run_id, RunStatus.FAILED, "the controller ended without recording an outcome")
    return summary


def _execute_with(
    archive: Archive,
    run_id: str,
    cfg: RunConfig,
    problem: Problem,
    parts: RunParts,
    observer: RunObserver | None,
    hooks: RunHooks,
    server: LocalServer | None,
    given: Sandbox | None,
) -> RunOutcome:
    sandbox = given or problem_sandbox(problem, cfg, cfg.parallel, run_id, hooks.notice)
    hooks.reassert()  # Ray's init installs its own SIGTERM handler
    hooks.on_force(sandbox.close)  # a forced stop kills what is in flight
    llm_cfg = parts.llm
    llm = LLMClient(
        replace(llm_cfg, api_base=server.base_url) if server else llm_cfg,
        parts.prices,
        seed=cfg.seed,
    )
    prompts = parts.prompts  # the profile's window and prompt style
    counter = server.token_counter() if server else None
    if counter is not None:  # the local model's own tokenizer counts exactly
        prompts.count_with(counter)
    evaluator = CandidateEvaluator(
        problem,
        sandbox,
        cfg.data_dir,
        _run_data_seed(archive, run_id),
        keys=[llm_cfg.api_key, *(m.api_key for m in llm_cfg.models)],
    )
    if evaluator.opt_state is not None:  # a GEPA script's: what a resumed run evaluated already
        evaluator.opt_state.restore(archive.programs(run_id, code=True, pending=False))
    ctl = Controller(
        archive,
        run_id,
        cfg,
        problem,
        evaluator,
        llm,
        observer,
        prompts,
    )

    async def go() -> RunOutcome:
        # a stop request (Ctrl-C, SIGTERM) cancels this task: the controller stops cleanly,
        # leaving what is unfinished pending for `resume`
        task = asyncio.current_task()
        assert task is not None  # go() runs as the loop's main task
        try:
            with hooks.running(task):
                return await ctl.run()
        finally:
            await llm.close()

    try:
        return asyncio.run(go())
    except (KeyboardInterrupt, asyncio.CancelledError):  # stopped before the controller began
        settle(archive, run_id, RunStatus.STOPPED, "interrupted")
        return _summary(archive, run_id, RunStatus.STOPPED, "interrupted")
    finally:
        if given is None:
            sandbox.close()


def _run_data_seed(archive: Archive, run_id: str) -> int | None:
    """The run's private data seed, as its creation stored it: a resumed run scores on the same
    workloads (None: a run from before private seeds, on the public data as it began)."""
    run = archive.get_run(run_id)
    return None if run is None else run.get("data_seed")


def _summary(archive: Archive, run_id: str, status: RunStatus, reason: str) -> RunOutcome:
    """What the archive holds of a run the controller did not get to summarise."""
    best = archive.best(run_id)
    seed = archive.program(program_id(run_id, 0))
    return RunOutcome(
        run_id,
        status,
        reason,
        archive.finished_count(run_id),
        best.score if best else None,
        seed.score if seed else None,
    )
