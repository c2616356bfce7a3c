"""The Python API: what `evolve run`, `resume`, `eval` and `check` do, callable from a script
or a notebook. The command line is a thin layer over these functions.

    import evolve
    summary = evolve.run("problems/binpack", model="gpt-4.1-mini", iterations=20)

Keyword arguments are the flags' names (`--max-calls` is `max_calls`; evolve/settings/
flags.py holds them with their defaults). Bad input raises UsageError in one line, before
anything is written. Nothing here prints but warnings (eval's and check's `warn`, stderr
by default): a front end passes an observer (the controller's RunStats as they change) and
RunHooks (the lines a user is told, Ctrl-C handling).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evaluators.sandbox import EvalResult, Sandbox
from evolve.pipeline.evaluation import CandidateEvaluator, CascadeResult, problem_sandbox
from evolve.pipeline.state import RunHooks, RunObserver
from evolve.problem.check import WHOLE_FILE, CheckReport, check_seed, describe
from evolve.problem.load import Overrides, Problem, ProblemError, load_problem, require_blocks
from evolve.settings.errors import UsageError
from evolve.settings.flags import (
    CHECK,
    EVALUATE,
    RESUME,
    RUN,
    Settings,
    new_run_id,
    runs_dir,
    settings_for,
)

if TYPE_CHECKING:  # run and resume import the controller (and the LLM client) when called:
    from evolve.pipeline.controller import RunOutcome  # `evolve eval` and `check` never need them

__all__ = [
    "CheckReport",
    "Evaluation",
    "RunHooks",
    "Settings",
    "UsageError",
    "check",
    "evaluate",
    "resume",
    "run",
]


def run(
    problem_dir: str | os.PathLike,
    *,
    observer: RunObserver | None = None,
    hooks: RunHooks | None = None,
    **settings: Any,
) -> RunOutcome:
    """Start a run of the problem folder and return when it ends (finished, stopped by a
    limit or Ctrl-C, or failed: `summary.status` and `summary.reason` say which). The run
    lives in the archive under `runs_dir`, so `evolve resume` or evolve.resume continues it."""
    from evolve.archive import Archive
    from evolve.pipeline import env as run_env
    from evolve.pipeline.endpoints import model_line, probe_endpoints
    from evolve.pipeline.launch import prepare, prepare_local
    from evolve.pipeline.parts import parts_for
    from evolve.pipeline.runner import execute, owning
    from evolve.problem import data_seed
    from evolve.problem.crates import crates_dir
    from evolve.problem.data import data_dir_for, ensure
    from evolve.settings.report import ignored_lines

    s = settings_for("evolve.run", RUN, settings)
    hooks = hooks or RunHooks()
    problem = _load(problem_dir, s, blocks=False)  # resolve() checks the blocks
    cfg, prices, prompts = prepare(problem, s)
    # an unset "${VAR}" key: one line, before anything is written
    parts = parts_for(cfg, problem, prices, prompts)
    prepare_local(cfg)
    archive = Archive(runs_dir(s.runs_dir))  # a broken runs dir: one line, before anything else
    try:
        said = probe_endpoints(cfg, parts.llm)  # a wrong URL, key or model: one line, no run
        for line in _config_lines(problem):  # the file read, its unknown keys
            hooks.notice(line)
        if problem.fmt == "openevolve":  # the others' notices say what their files set
            for line in ignored_lines(problem.root, problem.config_file):  # not at resume
                hooks.notice(line)
        if problem.whole_file:
            hooks.notice(f"{problem.seed_file}: no EVOLVE-BLOCK markers: {WHOLE_FILE}")
        hooks.notice(f"evolve: {model_line(s, problem, cfg)}")
        for line in said:
            hooks.notice(f"evolve: {line}")
        ensure(
            list(problem.data), Path(cfg.data_dir) if cfg.data_dir else data_dir_for(problem.root)
        )
        crates_dir(problem.root, problem.tools)  # fetched (or found) now: no run if it fails
        run_id = s.run_id or new_run_id(problem.name)
        with owning(archive, run_id, hooks):
            if archive.get_run(run_id) is not None:
                raise UsageError(
                    f"--run-id {run_id}: a run with this id exists; use `evolve resume {run_id}`"
                )
            seed = data_seed.draw() if s.data_seed is None else s.data_seed
            run_env.keep(archive.runs_dir, run_id, cfg.eval_env)  # values: beside, not in it
            archive.create_run(
                run_id, problem.name, _source(problem), cfg.to_json(), cfg.iterations, seed
            )
            hooks.started(run_id)
            return execute(archive, run_id, cfg, problem, parts, observer, hooks)
    finally:
        archive.close()


def resume(
    run_id: str,
    *,
    observer: RunObserver | None = None,
    hooks: RunHooks | None = None,
    sandbox: Sandbox | None = None,
    **settings: Any,
) -> RunOutcome:
    """Continue a stopped, failed or killed run (`run_id`, or the one run id it begins) exactly
    where the archive left it, with the settings it started with; `iterations` sets a new
    total, `ray_address` a new cluster. `sandbox`: a Sandbox object to evaluate in instead of
    the run's own (a benchmark's that excludes evaluation; the caller closes it)."""
    from evolve.archive import Archive
    from evolve.pipeline import env as run_env
    from evolve.pipeline.config import RunConfig
    from evolve.pipeline.endpoints import probe_endpoints
    from evolve.pipeline.parts import parts_for
    from evolve.pipeline.runner import execute, owning

    s = settings_for("evolve.resume", RESUME, settings)
    if isinstance(sandbox, str):
        raise UsageError("evolve.resume: sandbox: a run keeps the sandbox it started with")
    hooks = hooks or RunHooks()
    where = runs_dir(s.runs_dir)
    if not where.exists() or (where.is_dir() and not (where / "archive.db").exists()):
        raise UsageError(f"{run_id}: no such run ({where} holds no archive.db)")
    archive = Archive(where, create=False)
    try:
        found = archive.resolve_run(run_id)  # the id, or the one run id it begins
        if found is None:
            raise UsageError(f"{run_id}: no such run in {archive.path}")
        with owning(archive, found, hooks):  # refused while another live controller owns it
            run = archive.get_run(found)
            assert run is not None  # runs are never deleted
            cfg = RunConfig.from_json(run["config"])
            cfg = cfg.with_(eval_env=run_env.restore(archive.runs_dir, found, cfg.eval_env))
            given = s.given()
            if "iterations" in given:
                cfg = cfg.with_(iterations=s.iterations)
            if "ray_address" in given:  # the cluster may live elsewhere now
                cfg = cfg.with_(ray_address=s.ray_address)
            try:  # the run's own --env/--timeout/..., a NAME alone read from the environment again
                problem = load_problem(run["problem_dir"], cfg.overrides())
            except ProblemError as e:
                raise UsageError(f"run {found}: {e}") from None
            parts = parts_for(cfg, problem)  # keys are read again, never stored: check them first
            try:  # the endpoint may have moved since; a line, not a refusal: a run's stored
                said = probe_endpoints(cfg, parts.llm)  # replies and tuning need no call at all
            except UsageError as e:
                said = [f"{e} (resuming: what is stored needs no call; a new call retries)"]
            for line in said:
                hooks.notice(f"evolve: {line}")
            archive.take_over(found, cfg.iterations, cfg.to_json())
            hooks.started(found)
            return execute(archive, found, cfg, problem, parts, observer, hooks, sandbox)
    finally:
        archive.close()


@dataclass(frozen=True)
class Evaluation:
    """One program's score, as `evolve eval --json` prints it (the same keys, in order)."""

    status: str
    score: float | None
    metrics: dict
    artifacts: dict
    split: str
    stages: dict  # the score of each cascade stage that ran
    eval_s: float


def evaluate(
    problem_dir: str | os.PathLike,
    program: str | os.PathLike,
    *,
    split: str | None = None,
    stage: str | None = None,
    warn: Callable[[str], None] | None = None,
    **settings: Any,
) -> Evaluation:
    """Score one program file as a run would: the whole cascade on the train split, unless
    `split` names another split (held-out data) or `stage` one stage alone. A program written
    as its EVOLVE-BLOCKs only (a baseline) gets the seed's fixed code around them; a program of
    several files is a folder (or a tree's text), completed from the seed's tree. `warn`
    hears the config file read and its unknown keys (default: stderr)."""
    from evolve.edits.blocks import complete_from_seed
    from evolve.problem.program_input import program_code

    s = settings_for("evolve.evaluate", EVALUATE, settings)
    problem = _load(problem_dir, s, blocks=False)
    for line in _config_lines(problem):
        (warn or _stderr)(line)
    path = Path(program)
    if not path.is_file() and not (problem.files and path.is_dir()):
        raise UsageError(f"{program}: no such program file")
    if split and split not in problem.splits:
        raise UsageError(
            f"--split {split}: not a split of {problem.name} (one of {', '.join(problem.splits)})"
        )
    stages = [st.function or st.split for st in problem.cascade]
    if problem.fmt == "openevolve":
        stages = sorted({"evaluate", *stages})
    if stage and stage not in stages:
        raise UsageError(
            f"--stage {stage}: not a stage of {problem.name} (one of {', '.join(stages)})"
        )
    if stage and split:
        raise UsageError("--stage and --split: give one (a stage names its own split)")
    sandbox = problem_sandbox(problem, s, 1, say=warn or _stderr)
    try:
        ev = CandidateEvaluator(problem, sandbox, data_seed=s.data_seed)
        try:
            if problem.files:  # a program of several files: a folder, or a tree's text
                code = program_code(problem, path)
            else:
                code = complete_from_seed(path.read_text(), problem.seed_code)
        except ValueError as e:
            raise UsageError(str(e) if problem.files else f"{program}: {e}") from None
        r: EvalResult | CascadeResult  # one stage or split, or the whole cascade
        if stage or (split and split != problem.train_split):
            r = ev.run_stage(code, stage) if stage else ev.run_split(code, split or "")
            scores = r.scores or ({stage: r.score} if stage and r.score is not None else {})
        else:
            r = ev.evaluate(code)
            scores = r.scores
        where = split or problem.train_split
        return Evaluation(
            r.status, r.score, r.metrics, r.artifacts, where, scores, round(r.eval_s, 4)
        )
    finally:
        sandbox.close()


def check(
    problem_dir: str | os.PathLike,
    *,
    say: Callable[[str], None] | None = None,
    warn: Callable[[str], None] | None = None,
    **settings: Any,
) -> CheckReport:
    """Validate a problem folder and score its seed program (`report.ok`); `say` is told each
    of the report's lines as soon as it is known (the seed's take a while), `warn` the config
    file's unknown keys (default: stderr)."""
    s = settings_for("evolve.check", CHECK, settings)
    problem = _load(problem_dir, s)
    for line in problem.notices:  # the report says which config it read
        (warn or _stderr)(line)
    say = say or (lambda line: None)
    report = CheckReport(problem)
    for line in describe(problem):
        report.lines.append(line)
        say(line)
    sandbox = problem_sandbox(problem, s, 1, say=warn or _stderr)
    try:
        check_seed(problem, sandbox, report, say)
    finally:
        sandbox.close()
    return report


def _config_lines(problem: Problem) -> list[str]:
    """Which config file an OpenEvolve folder was read with, then its unknown keys."""
    from evolve.problem.config import config_line

    line = config_line(problem)
    return ([f"evolve: {line}"] if line else []) + list(problem.notices)


def _source(problem: Problem) -> str:
    """What `resume` loads the problem from again: its folder, or a GEPA script's file."""
    script = problem.seed_path if problem.fmt == "gepa" else None
    return str(script or problem.root)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _load(problem_dir: str | os.PathLike, s: Settings, blocks: bool = True) -> Problem:
    """The folder's Problem with the evaluation settings over its own (UsageError)."""
    try:
        problem = load_problem(os.fspath(problem_dir), Overrides.from_args(s))
        if blocks:  # a native seed without EVOLVE-BLOCK markers: refused (OpenEvolve: whole file)
            require_blocks(problem)
    except ProblemError as e:
        raise UsageError(str(e)) from None
    return problem
