"""What the ArchiveReader answers besides rows (rows.py): a run as a list of runs shows
it, what a run's search did (its calls, models, notes and decisions) and `evolve bench`
results. Plain dataclasses, read-only views of the archive."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from evolve.archive.rows import CallOutcome, ProgramStatus, RunStatus


@dataclass
class RunSummary:
    """One run as a list of runs shows it; `status` says `interrupted` for a dead owner."""

    run_id: str
    problem: str
    problem_dir: str
    status: RunStatus
    stop_reason: str | None
    iterations_target: int
    iterations_done: int
    programs: int
    valid: int
    best_score: float | None
    best_program_id: str | None
    best_test_score: float | None  # the held-out score of the best (train) program
    seed_score: float | None
    seed_program_id: str | None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float
    llm_calls: int
    created_at: float
    updated_at: float
    config: dict = field(default_factory=dict)
    data_seed: int | None = None  # the private seed of its workloads (None: public data)
    answered_calls: int = 0

    @property
    def progress(self) -> str:
        """How far the run got against what bounds it: its iterations, or its answered calls
        where --max-calls ends it first (a benchmark's runs: 5 calls, 20 iterations at most)."""
        cap = self.config.get("max_calls")
        if isinstance(cap, int) and cap < self.iterations_target:
            return f"{self.answered_calls} / {cap} calls"
        return f"{self.iterations_done} / {self.iterations_target}"

    @property
    def valid_pct(self) -> float | None:
        judged = self.programs - 1  # the seed is not a candidate
        return None if judged <= 0 else 100.0 * (self.valid - 1) / judged

    @property
    def duration_s(self) -> float:
        """Until now while it runs (its row is written when it starts and ends, not between)."""
        end = time.time() if self.status == RunStatus.RUNNING else self.updated_at
        return max(0.0, end - self.created_at)


@dataclass
class MetaNote:
    """Advice a call wrote after `at_calls` answered calls; later prompts carry it. Written
    by a model: shown as text."""

    at_calls: int
    call_id: int | None
    text: str
    created_at: float


@dataclass
class SearchDecision:
    """A search decision (kind `stagnation`: detail holds model, calls, island, from,
    after); detail is {} when its JSON cannot be read."""

    at_done: int
    kind: str
    detail: dict
    created_at: float


@dataclass
class ModelUse:
    """One model's share of a run: answered calls (failed attempts apart), tokens, and the
    bandit's reward proxy, children better than their parent per proposing call."""

    model: str
    calls: int  # answered
    failed: int  # failed attempts (each retried or given up)
    rejected: int  # answered, the reply repeated a program of the run
    tokens: int  # every attempt's prompt + completion tokens
    cost_usd: float
    proposals: int  # answered calls that proposed a program (meta-notes calls do not)
    improved: int  # its children better than their parent
    share: float | None  # of the run's answered calls

    @property
    def reward(self) -> float | None:
        return None if not self.proposals else self.improved / self.proposals


@dataclass
class CallCounts:
    """A run's LLM calls and what became of them, and the programs made by repairs."""

    answered: int
    failed: int  # failed attempts
    rejected: int  # answered calls whose reply repeated a program (rejected_duplicate)
    repairs: int  # programs made by a call that fixed a failed parent
    repairs_ok: int  # of those, the ones that scored
    by_purpose: dict[str, int]  # answered calls; "not recorded" before schema 4
    by_outcome: dict[str, int]  # every call: used, rejected_duplicate, failed attempt


@dataclass
class AnsweredCall:
    """One answered LLM call of a run and the program its reply became (`status` None: none,
    as for a reply rejected as a clone, or one that was no proposal)."""

    call_id: int
    outcome: CallOutcome | None  # None: used (archives before v4: always None)
    tokens: int
    status: ProgramStatus | None
    code_hash: str | None
    score: float | None
    test_score: float | None
    created_at: float | None  # the program's


@dataclass
class BenchSummary:
    """One `evolve bench` invocation, as the list of benchmarks shows it."""

    bench_id: str
    model: str
    calls: int
    problems: list[str]
    runs: int
    created_at: float


@dataclass
class BenchRun:
    """One run of a benchmark: a row of `bench_runs`, its result decoded."""

    bench_id: str
    problem: str
    seed: int
    run_id: str
    model: str
    calls: int
    result: dict
    created_at: float
