"""The one interface every sandbox backend (local, docker, ray) implements.

Requests and results are plain dataclasses; a request crosses process and
container boundaries as JSON (and a Ray task's pickle). The controller never
imports candidate code. backends.make_sandbox builds a backend by name (local,
docker, ray); two_phase.py holds the run-then-score protocol local and docker share.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Protocol


class Status(StrEnum):
    """What a sandbox reports of one candidate program: an EvalResult's status. Here, at the
    protocol, so the backends and the loop share one vocabulary; the harness inside a sandbox
    writes the same strings and the host reads them back (harness_result.py) as members. The
    archive's programs.status (evolve/archive/vocab.py's ProgramStatus) holds these strings
    and the loop's own (pending, invalid_edit, duplicate, rejected)."""

    OK = "ok"
    INVALID = "invalid"  # ran, but the evaluator rejected its outputs (shapes, feasibility)
    SYNTAX_ERROR = "syntax_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    SANDBOX_ERROR = "sandbox_error"  # our fault, not the candidate's (harness crashed, no result)


# Metrics and artifacts named with this prefix are stored but never shown to the model
# (ShinkaEvolve's `private` metrics: evaluators/inside/shinka_run.py writes the same prefix).
PRIVATE_PREFIX = "private."
STATUS_FD_ENV = "EVOLVE_STATUS_FD"  # the harness's channel for "the evaluator loaded" (run mode)
# The run's data seed travels beside the program in its own file, not in REQ.json: the harness
# reads it only after the candidate's worker is forked, so the worker never holds it.
DATA_SEED_FILE = "DATA_SEED"
# The local sandbox passes it instead as a descriptor (never a file), named by this variable.
SEED_FD_ENV = "EVOLVE_DATA_SEED_FD"
BENCHMARK_MOUNT = "/benchmark"  # where EvalRequest.benchmark is shown
# "1" where /tmp and /dev/shm are the evaluation's own (bubblewrap's tmpfs, the container's):
# a Landlocked candidate may write there (never in the fallback, where they are the host's).
PRIVATE_TMP_ENV = "EVOLVE_PRIVATE_TMP"


@dataclass(frozen=True)
class Limits:
    """Hard limits for one evaluation; every backend enforces all of them."""

    timeout_s: float = 60.0
    memory_mb: int = 2048
    max_procs: int = 64
    max_file_mb: int = 64
    max_output_kb: int = 64  # kept of stdout and of stderr each (the tail)

    def address_space_bytes(self) -> int:
        """RLIMIT_AS where no memory cgroup enforces memory_mb (the fallback): twice the
        limit plus AS_HEADROOM_MB. An address-space limit counts what a runtime reserves
        but never touches (glibc's per-thread malloc arenas, thread stacks, the heaps JAX,
        XLA, PyTorch and the JVM map up front), so memory_mb itself would kill them at
        start-up; a cgroup counts only the memory used and needs no headroom."""
        return (2 * self.memory_mb + AS_HEADROOM_MB) * 2**20


AS_HEADROOM_MB = 1024


@dataclass(frozen=True)
class EvalRequest:
    """Evaluate one candidate program on one split (and one cascade stage)."""

    problem_dir: str  # absolute path of the problem folder (read-only to the candidate)
    program_code: str  # candidate source text
    program_name: str  # file name the candidate is written as, e.g. "seed.py"
    split: str  # "train", "test", ... (native); passed through for openevolve
    fmt: str = "native"  # "native" | "openevolve" | "shinka" | "levi" | "skydiscover"
    stage: str | None = None  # openevolve: "evaluate_stage1".. or None for evaluate()
    limits: Limits = field(default_factory=Limits)
    data_dir: str | None = None  # exported as EVOLVE_DATA_DIR inside the sandbox
    includes: tuple[str, ...] = ()  # files shared with other problems (problem.toml `include`)
    hidden: tuple[str, ...] = ()  # data files of other splits: invisible in this evaluation
    env: dict[str, str] = field(default_factory=dict)  # extra variables the evaluator needs
    # the run's private seed for generated workloads (kit.seed), None: the problem's public
    # data; read by the harness and score() only, never by the candidate
    data_seed: int | None = None
    # OpenEvolve format: the cascade's thresholds (None: evaluate() alone, cascade off), how
    # often a raising evaluate() is tried again, each stage's own timeout, and the metrics
    # that are feature dimensions (never averaged into the score)
    cascade: tuple[float, ...] | None = None
    retries: int = 0
    stage_timeout_s: float | None = None
    feature_dims: tuple[str, ...] = ()
    # OpenEvolve 0.4.1's evaluator.evaluator_args: keyword arguments of evaluate() (plain
    # JSON values), checked against its signature as OpenEvolve checks them
    evaluator_args: dict = field(default_factory=dict)
    tools: tuple[str, ...] = ()  # programs the evaluator runs (cargo, g++): offered read-only
    # the crates the problem's Cargo.toml files declare, fetched on the trusted side
    # (evolve/problem/crates.py): offered read-only, named in $EVOLVE_CRATES_DIR
    crates: str | None = None
    # a folder of the problem (relative) shown read-only at /benchmark: a SkyDiscover
    # folder's evaluator/, where its scripts expect it (evaluators/inside/skydiscover_run.py)
    benchmark: str | None = None

    def to_json(self) -> dict:
        """REQ.json: everything but the data seed, which `seed_files` carries."""
        out = asdict(self)
        del out["data_seed"]
        return out

    def benchmark_dir(self) -> str | None:
        """The host folder to show at BENCHMARK_MOUNT (None: none): `benchmark` inside the
        problem folder, never a folder outside it."""
        if not self.benchmark:
            return None
        root = os.path.realpath(self.problem_dir)
        path = os.path.realpath(os.path.join(root, self.benchmark))
        return path if path.startswith(root + os.sep) and os.path.isdir(path) else None

    def seed_files(self) -> dict[str, str]:
        """The file that carries the data seed beside the program (none on public data, nor
        for an OpenEvolve evaluator, whose candidate shares its process and which has no
        kit.seed to use it)."""
        if self.data_seed is None or self.fmt != "native":
            return {}
        return {DATA_SEED_FILE: str(self.data_seed)}


@dataclass
class EvalResult:
    """What the trusted side learned about one evaluation in a sandbox (one cascade stage; a
    whole cascade's is evolve/pipeline/evaluation.py's CascadeResult, the same fields). The
    archive stores these fields under the same names (a ProgramRow's status, score, scores,
    metrics, artifacts, eval_s).

    `score` is None unless status is OK: failed candidates never compete.
    """

    status: Status
    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    eval_s: float = 0.0  # wall-clock seconds
    scores: dict[str, float] = field(default_factory=dict)  # score after each cascade stage


class Sandbox(Protocol):
    """A backend that runs candidates. `evaluate` is blocking and thread-safe;
    the asyncio controller calls it through a thread pool."""

    name: str

    def evaluate(self, request: EvalRequest) -> EvalResult: ...

    def close(self) -> None: ...
