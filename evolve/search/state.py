"""The search's own state: which model and temperature the next call gets, which failed
children wait for a repair, and when the run has stagnated.

Like the population it is derived: `Controller.rebuild` replays the archive through it,
so a resumed run continues the same bandit, repair queue and stagnation count (a burst
in progress at a kill is not resumed: the next stagnation starts a new one).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from evolve.archive import ProgramRow, ProgramStatus
from evolve.search.bandit import IMPROVED, NOVEL, Choice, ModelBandit
from evolve.search.tune import KIND as TUNED

# An error the model can read and fix.
REPAIRABLE = (ProgramStatus.SYNTAX_ERROR, ProgramStatus.RUNTIME_ERROR, ProgramStatus.INVALID)


@dataclass(frozen=True)
class SearchSettings:
    models: dict[str, float]  # name -> weight (the bandit's prior)
    temperatures: tuple[float, ...]
    repair_attempts: int
    stagnation: int  # iterations without a new best before a burst; 0: never
    burst_calls: int
    escalation_model: str | None
    seed: int


class SearchState:
    def __init__(self, s: SearchSettings):
        self.s = s
        self.bandit = ModelBandit.of(s.models, s.temperatures, s.seed * 7919 + 1)
        self.repairs: deque[str] = deque()
        self.burst_left = 0
        self.since_best = 0  # finished iterations since the last new best

    # ---- choices -------------------------------------------------------------
    def choose(self, resample: int = 0) -> Choice:
        if self.burst_left > 0:
            self.burst_left -= 1
            model = self.escalation_model()
            return Choice(
                model,
                max(self.s.temperatures),
                f"stagnation burst on {model} ({self.burst_left} calls left)",
            )
        return self.bandit.pick(resample)

    def escalation_model(self) -> str:
        """The burst's model: the one named, else the lowest-weighted (the secondary model of
        an ensemble weighted towards a cheap one), else the only one."""
        if self.s.escalation_model:
            return self.s.escalation_model
        return min(self.s.models, key=lambda m: self.s.models[m])

    def next_repair(self) -> str | None:
        return self.repairs.popleft() if self.repairs else None

    # ---- what happened ---------------------------------------------------------
    def finished(
        self,
        row: ProgramRow,
        parent_score: float | None,
        novel: bool,
        best: bool,
        repair_depth: int,
    ) -> None:
        """A child's outcome: the bandit's reward, a repair to queue, the stagnation count.
        repair_depth: the repairs in a row that led to it (0 for a mutation)."""
        if row.iteration == 0:
            return
        improved = (
            row.status == ProgramStatus.OK
            and row.score is not None
            and parent_score is not None
            and row.score > parent_score
        )
        if row.model:
            self.bandit.record(row.model, IMPROVED if improved else NOVEL if novel else 0.0)
        tuned = row.kind == TUNED  # no call made it: no model to reward, nothing to repair
        if row.status in REPAIRABLE and row.code and not tuned:
            if repair_depth < self.s.repair_attempts:
                self.repairs.append(row.program_id)
        # Stagnation counts what the calls bring; a tuned child only ends it.
        self.since_best = 0 if best else self.since_best + (not tuned)

    def rejected(self, model: str) -> None:
        """A call whose reply repeated a program: a call that gave nothing."""
        self.bandit.record(model, 0.0)

    def stagnant(self) -> bool:
        return (
            bool(self.s.stagnation) and self.since_best >= self.s.stagnation and not self.burst_left
        )

    def start_burst(self) -> None:
        self.burst_left = self.s.burst_calls
        self.since_best = 0
