"""The runs of a benchmark: each problem once per seed, each run a normal `evolve run`
process with the same budget of LLM calls, measured from the archive when it ends.

Runs go one after another (the seeds must not compete for the machine, or the wall times
mean nothing), as child processes of the `evolve` entry point: a run is exactly what a user
would start by hand, and its log is kept beside the benchmark's picture. With `--model
local` the bench starts the model's server once; each run joins it (evolve/llm/local_server.py
reuses a live server of the same model and window) and the bench stops it at the end.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from evolve.archive import Archive, ArchiveReader
from evolve.benchmark.measure import RunResult, measure
from evolve.benchmark.normalise import References, references
from evolve.benchmark.record import record
from evolve.benchmark.table import ProblemSummary, summarise


class BenchError(ValueError):
    """Bad input, or a run that refused its input: one line, exit code 2."""


@dataclass(frozen=True)
class BenchProblem:
    name: str  # problem.toml's name: the runs' and the table's
    folder: str


@dataclass(frozen=True)
class BenchSpec:
    bench_id: str
    problems: tuple[BenchProblem, ...]
    model: str
    calls: int  # answered LLM calls per run
    seeds: int  # runs per problem: seeds 0 .. seeds-1
    runs_dir: Path
    api_base: str | None = None
    sandbox: str = "auto"
    run_args: tuple[str, ...] = ()  # more `evolve run` flags, as given
    max_calls_flag: bool = True  # `evolve run` takes --max-calls (else: --iterations N)
    # every run's private data seed: the runs, their seed and the baselines score on the same
    # workloads, so normalised scores compare like with like (None: the public data)
    data_seed: int | None = None

    def reference_sandbox(self) -> str:
        """Where the seed and the baselines are scored: here, when the runs go to Ray (their
        scores do not depend on where they run; a private Ray instance per program would)."""
        return "auto" if self.sandbox == "ray" else self.sandbox

    def run_id(self, problem: str, seed: int) -> str:
        return f"{self.bench_id}-{problem}-s{seed}"

    def log_dir(self) -> Path:
        """Where the benchmark's files go: the curve and each run's log."""
        return self.runs_dir / "bench" / self.bench_id


@dataclass(frozen=True)
class Launched:
    exit_code: int
    wall_s: float
    last_line: str  # of the run's output: its error, when it failed


# What a benchmark reports as it goes: ("references", problem, References) once per problem,
# then ("run", problem, RunResult) as each run ends.
Event = Callable[[str, BenchProblem, object], None]


def run_argv(spec: BenchSpec, problem: BenchProblem, seed: int) -> list[str]:
    """`evolve run`'s arguments for one run of the benchmark."""
    budget = (
        ["--max-calls", str(spec.calls), "--iterations", str(spec.calls * 4)]
        if spec.max_calls_flag
        else ["--iterations", str(spec.calls)]
    )
    argv = [
        "run",
        problem.folder,
        "--model",
        spec.model,
        "--seed",
        str(seed),
        *budget,
        "--run-id",
        spec.run_id(problem.name, seed),
        "--runs-dir",
        str(spec.runs_dir),
        "--sandbox",
        spec.sandbox,
        "--no-progress",
    ]
    if spec.api_base:
        argv += ["--api-base", spec.api_base]
    if spec.data_seed is not None:
        argv += ["--data-seed", str(spec.data_seed)]
    return argv + list(spec.run_args)


def launch(argv: Sequence[str], log: Path) -> Launched:
    """`evolve ARGV` in a child process, its output into `log`; Ctrl-C (or SIGTERM turned
    into it) stops the child as `kill` would, leaving its run resumable."""
    log.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    start = time.monotonic()
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "evolve.cli", *argv],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
        )
        try:
            code = proc.wait()
        except BaseException:
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise
    wall = time.monotonic() - start
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return Launched(code, wall, lines[-1].strip() if lines else "")


@contextlib.contextmanager
def shared_local_server(model: str, log: Callable[[str], None]) -> Iterator[None]:
    """The local model's server for the whole benchmark (nothing for a remote model): each
    run joins it instead of loading the model again, and it stops when the bench ends."""
    from evolve.llm.profiles import is_local, profile_for_models

    if not is_local(model):
        yield
        return
    from evolve.llm.local_model import start_server
    from evolve.llm.local_weights import LocalModelError

    try:  # the window `evolve run` asks for, so the runs find this very server
        server = start_server(model, profile_for_models([model]).context_window or 4096, log)
    except LocalModelError as e:
        raise BenchError(str(e)) from None
    try:
        yield
    finally:
        server.stop()


def check_new(spec: BenchSpec) -> None:
    """Refuse a benchmark id in use (its rows or its runs' ids), before anything runs."""
    archive = Archive(spec.runs_dir)  # ArchiveError: a broken runs dir, one line
    try:
        if archive.bench_exists(spec.bench_id):
            raise BenchError(f"--bench-id {spec.bench_id}: a benchmark with this id exists")
        for p in spec.problems:
            for seed in range(spec.seeds):
                if archive.get_run(spec.run_id(p.name, seed)) is not None:
                    raise BenchError(
                        f"--bench-id {spec.bench_id}: run {spec.run_id(p.name, seed)} exists"
                    )
    finally:
        archive.close()


def run_bench(
    spec: BenchSpec, on_event: Event | None = None, log: Callable[[str], None] = print
) -> list[ProblemSummary]:
    """Every run of the benchmark, stored in `bench_runs` as it ends; a summary per problem."""
    tell: Event = on_event or (lambda kind, problem, what: None)
    check_new(spec)
    out: list[ProblemSummary] = []
    with shared_local_server(spec.model, log):
        for problem in spec.problems:
            refs = references(problem.folder, spec.reference_sandbox(), spec.data_seed)
            tell("references", problem, refs)
            results = [_one_run(spec, problem, seed, refs, tell) for seed in range(spec.seeds)]
            out.append(summarise(problem.name, problem.folder, refs, results))
    return out


def _one_run(
    spec: BenchSpec, problem: BenchProblem, seed: int, refs: References, tell: Event
) -> RunResult:
    run_id = spec.run_id(problem.name, seed)
    done = launch(run_argv(spec, problem, seed), spec.log_dir() / f"{run_id}.log")
    if done.exit_code == 130:
        raise KeyboardInterrupt
    error = done.last_line if done.exit_code != 0 else None
    result = measure(
        ArchiveReader(spec.runs_dir), run_id, seed, refs, done.exit_code, done.wall_s, error
    )
    if result.status == "missing":  # refused before it started: the same for every run
        raise BenchError(f"run {run_id} did not start: {done.last_line}")
    archive = Archive(spec.runs_dir)
    try:
        archive.add_bench_run(
            spec.bench_id,
            problem.name,
            seed,
            run_id,
            spec.model,
            spec.calls,
            record(result, problem.folder, refs),
        )
    finally:
        archive.close()
    tell("run", problem, result)
    return result
