"""A problem folder's reference programs (its `baselines/*.py`, and its seed) scored on the
splits a run uses: train through the cascade, as a run scores, and the held-out split.

Scoring runs the problem's own evaluator on its own reference programs, in the sandbox,
never anything from an archive. Each result is cached under ~/.cache/evolve/baselines by a
hash of the problem folder's files, the program and the data seed (a benchmark's runs draw
their workloads under a private one: their baselines must score on the same workloads), so
a leaderboard or a benchmark gets them at once after the first time, and an edited
evaluator or baseline is scored again.
The web view's leaderboards (evolve/web/baselines.py) and `evolve bench`'s normalisation
(evolve/benchmark/normalise.py) both read them from here, so they agree.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from evolve.cache import cache_dir as evolve_cache
from evolve.problem.program_input import program_digest

_SKIP_DIRS = {"__pycache__", ".git", "baselines"}


@dataclass
class BaselineScore:
    name: str  # file name in baselines/ (the seed: its own file name)
    status: str  # pending | ok | <a failure status> | error
    score: float | None = None
    test_score: float | None = None
    train_split: str = "train"
    test_split: str | None = None
    detail: str = ""


def cache_dir() -> Path:
    return evolve_cache() / "baselines"


def folder_hash(root: Path) -> str:
    """Hash of every file of the problem folder but its baselines (names and contents)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not (_SKIP_DIRS & set(rel.parts)):
            h.update(str(rel).encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


def baseline_files(root: Path) -> list[Path]:
    """The folder's `baselines/*.py`, and for a program of several files its baseline
    folders (`baselines/NAME/`, laid out like the seed's tree), sorted by name."""
    folder = root / "baselines"
    if not folder.is_dir():
        return []
    return sorted(
        p
        for p in folder.iterdir()
        if (p.is_file() and p.suffix == ".py")
        or (p.is_dir() and not p.is_symlink() and not p.name.startswith((".", "_")))
    )


def cache_file(
    key: str, program: Path, role: str = "baseline", data_seed: int | None = None
) -> Path:
    """Where the score of `program` for the folder hashed as `key` is kept; the seed's own
    role keeps it apart from a baseline with the same bytes (best fit as seed and baseline)."""
    salt = b"" if role == "baseline" else role.encode() + b"\0"
    if data_seed is not None:
        salt += f"data_seed={data_seed}".encode() + b"\0"
    h = hashlib.sha256(salt + key.encode() + program_digest(program)).hexdigest()[:32]
    return cache_dir() / f"{h}.json"


def read_cached(path: Path) -> BaselineScore | None:
    try:
        return BaselineScore(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def write_cached(path: Path, result: BaselineScore) -> None:
    """Atomically (a reader never sees half a file); NaN and infinities stored as null."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps({k: _finite(v) for k, v in asdict(result).items()}))
    tmp.replace(path)


def score_program(
    root: Path, program: Path, sandbox_name: str, data_seed: int | None = None
) -> BaselineScore:
    """Train (through the cascade, as a run scores) and held-out scores of one program (a file,
    or a folder for a program of several files);
    a failure is a row with its status and first line, never an exception."""
    from evaluators.backends import make_sandbox
    from evolve.archive import ProgramStatus
    from evolve.pipeline.evaluation import CandidateEvaluator
    from evolve.problem.load import load_problem
    from evolve.problem.program_input import program_code

    try:
        problem = load_problem(root)
        code = program_code(problem, program)
        # the folder's own programs, one sandbox each: which backend was picked is no line
        # worth printing once per program (a benchmark scores a seed and every baseline)
        sandbox = make_sandbox(
            sandbox_name, 1, problem_dir=str(root), tools=problem.tools, say=lambda _: None
        )
    except Exception as e:  # a broken folder: shown on its row, never raised
        return BaselineScore(program.name, "error", detail=_first_line(e))
    try:
        ev = CandidateEvaluator(problem, sandbox, data_seed=data_seed)
        train = ev.evaluate(code)
        test_split = problem.test_split
        test = (
            ev.run_split(code, test_split)
            if test_split and train.status == ProgramStatus.OK
            else None
        )
        return BaselineScore(
            program.name,
            train.status,
            train.score,
            test.score if test is not None and test.status == ProgramStatus.OK else None,
            problem.train_split,
            test_split,
        )
    except Exception as e:
        return BaselineScore(program.name, "error", detail=_first_line(e))
    finally:
        sandbox.close()


def scored(
    root: Path,
    program: Path,
    sandbox_name: str,
    role: str = "baseline",
    data_seed: int | None = None,
) -> BaselineScore:
    """The cached score of `program` (on the workloads of `data_seed`; None: the public
    ones), scoring (and caching) it now if there is none."""
    path = cache_file(folder_hash(root), program, role, data_seed)
    cached = read_cached(path)
    if cached is not None:
        return cached
    result = score_program(root, program, sandbox_name, data_seed)
    write_cached(path, result)
    return result


def _first_line(e: Exception) -> str:
    return (str(e).splitlines() or [type(e).__name__])[0][:300]


def _finite(v):
    return v if not isinstance(v, float) or math.isfinite(v) else None
