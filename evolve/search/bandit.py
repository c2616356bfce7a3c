"""Which model and temperature a call uses.

Models: UCB1 over each model's reward per call (1 for a child better than its parent,
0.3 for a valid child that behaves unlike every earlier program, 0 otherwise), with the
--model weights as a prior worth PRIOR_CALLS pseudo-calls, so a user's weights decide
until evidence says otherwise. Temperatures: drawn per call from the configured set; a
resample after a clone goes hotter.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

PRIOR_CALLS = 2.0
EXPLORE = 0.5  # UCB's exploration weight; rewards are in [0, 1]
IMPROVED, NOVEL = 1.0, 0.3
RESAMPLE_STEP, MAX_TEMPERATURE = 0.3, 1.5


@dataclass
class Arm:
    name: str
    prior: float  # the weight, scaled to [0, 1]
    calls: int = 0
    reward: float = 0.0

    def mean(self) -> float:
        return (self.reward + PRIOR_CALLS * self.prior) / (self.calls + PRIOR_CALLS)


@dataclass(frozen=True)
class Choice:
    model: str
    temperature: float
    decision: str  # why, for the archive and the run page


@dataclass
class ModelBandit:
    arms: dict[str, Arm]
    temperatures: tuple[float, ...]
    rng: random.Random = field(default_factory=random.Random)

    @classmethod
    def of(
        cls, weights: dict[str, float], temperatures: tuple[float, ...], seed: int
    ) -> ModelBandit:
        top = max(weights.values())
        arms = {m: Arm(m, w / top * 0.5) for m, w in weights.items()}
        return cls(arms, temperatures, random.Random(seed))

    def record(self, model: str, reward: float) -> None:
        arm = self.arms.get(model)
        if arm is not None:
            arm.calls += 1
            arm.reward += reward

    def pick(self, resample: int = 0, forced: str | None = None) -> Choice:
        temperature = self.rng.choice(self.temperatures)
        if resample:
            temperature = min(MAX_TEMPERATURE, temperature + RESAMPLE_STEP * resample)
        if forced is not None:
            return Choice(forced, temperature, f"stagnation burst on {forced}")
        if len(self.arms) == 1:
            return Choice(next(iter(self.arms)), temperature, "the only model")
        total = sum(a.calls for a in self.arms.values()) + PRIOR_CALLS * len(self.arms)
        scored = {
            a.name: a.mean() + EXPLORE * math.sqrt(math.log(total) / (a.calls + PRIOR_CALLS))
            for a in self.arms.values()
        }
        best = max(scored, key=lambda m: (scored[m], self.arms[m].prior))
        arm = self.arms[best]
        return Choice(
            best,
            temperature,
            f"UCB {scored[best]:.3f} (mean reward {arm.mean():.3f} over {arm.calls} calls)",
        )
