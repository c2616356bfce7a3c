"""Run a candidate through the problem's cascade in a sandbox.

Native problems: cheap stages screen candidates before the expensive one; a
candidate that misses a stage's threshold is `rejected` and, like every
failure, gets no score, so it can never outrank a program that really ran.
OpenEvolve-format problems get OpenEvolve's own cascade, run by the harness in
one sandbox process (evaluators/openevolve_run.py): stage metrics merge, and a
program under a threshold keeps the score it has so far. A candidate over the
problem's size cap is `invalid` before any sandbox sees it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from evaluators.sandbox import INVALID, OK, EvalRequest, EvalResult, Limits, Sandbox
from evolve.data import data_dir_for, ensure
from evolve.problem import Problem

REJECTED = "rejected"


def too_large(problem: Problem, code: str) -> str | None:
    """Why `code` is over the problem's size cap, or None when it is not.

    A huge candidate costs a sandbox run and an archive row, and as a parent a prompt
    that no model's window holds; the cap keeps every candidate bounded."""
    size = len(code.encode("utf-8", "surrogatepass"))
    if size <= problem.max_code_bytes:
        return None
    setting = (
        "max_code_length in config.yaml"
        if problem.fmt == "openevolve"
        else "[evaluation] max_code_kb"
    )
    return f"code is {size:,} bytes; this problem allows at most {problem.max_code_bytes:,} ({setting})"


@dataclass
class Outcome:
    status: str
    score: float | None
    scores: dict[str, float] = field(default_factory=dict)  # per stage
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    eval_s: float = 0.0


def openevolve_thresholds(problem: Problem) -> tuple[float, ...] | None:
    """The thresholds of an OpenEvolve cascade (None: cascade_evaluation is off)."""
    if not problem.cascade_evaluation:
        return None
    return tuple(s.threshold for s in problem.cascade if s.threshold is not None)


class CandidateEvaluator:
    """Builds each request for one problem's candidates and runs them in the sandbox.

    `data_seed`: the run's private seed for generated workloads (evolve/data_seed.py), which
    every request carries to the trusted evaluator; None evaluates on the public data."""

    def __init__(
        self,
        problem: Problem,
        sandbox: Sandbox,
        data_dir: str | None = None,
        data_seed: int | None = None,
    ):
        self.problem = problem
        self.sandbox = sandbox
        self.data_seed = data_seed
        root = Path(data_dir).resolve() if data_dir else data_dir_for(problem.root)
        if problem.data:
            ensure(list(problem.data), root)  # trusted side fetches; the sandbox gets no network
        self.data_dir = str(root) if root.is_dir() else None  # a problem may have no data/
        timeout_s = problem.timeout_s
        if problem.fmt == "openevolve":  # each stage has the timeout; the import one more
            timeout_s *= len(problem.cascade) + 1
        self.limits = Limits(timeout_s=timeout_s, memory_mb=problem.memory_mb)

    def request(self, code: str, split: str, function: str | None = None) -> EvalRequest:
        req = EvalRequest(
            problem_dir=str(self.problem.root),
            program_code=code,
            program_name=self.problem.entry,
            split=split,
            fmt=self.problem.fmt,
            stage=function,
            limits=self.limits,
            data_dir=self.data_dir,
            includes=tuple(str(p) for p in self.problem.include),
            hidden=self.hidden(split),
            env=dict(self.problem.env),
            data_seed=self.data_seed,
        )
        if self.problem.fmt != "openevolve":
            return req
        return replace(
            req,
            cascade=openevolve_thresholds(self.problem),
            retries=self.problem.eval_retries,
            stage_timeout_s=self.problem.timeout_s,
            # OpenEvolve's names: our code_length is its complexity
            feature_dims=tuple(
                "complexity" if d == "code_length" else d for d in self.problem.feature_dims
            ),
        )

    def hidden(self, split: str) -> tuple[str, ...]:
        """The data files that [[data]] `splits` keep from this split (held-out data in train)."""
        if self.data_dir is None:
            return ()
        return tuple(
            str(Path(self.data_dir, f.path))
            for f in self.problem.data
            if f.splits and split not in f.splits
        )

    def run_split(self, code: str, split: str) -> EvalResult:
        """One split, no cascade (held-out re-scoring, `evolve eval --split`)."""
        return self.sandbox.evaluate(self.request(code, split))

    def run_stage(self, code: str, stage: str) -> EvalResult:
        """One cascade stage alone (`evolve eval --stage`): a split of a native problem,
        a function of an OpenEvolve evaluator."""
        if self.problem.fmt == "openevolve":
            return self.sandbox.evaluate(self.request(code, self.problem.train_split, stage))
        return self.run_split(code, stage)

    def evaluate(self, code: str) -> Outcome:
        reason = too_large(self.problem, code)
        if reason is not None:
            return Outcome(status=INVALID, score=None, artifacts={"error": reason})
        if self.problem.fmt == "openevolve":  # the harness runs OpenEvolve's cascade
            res = self.sandbox.evaluate(self.request(code, self.problem.train_split))
            return Outcome(
                res.status, res.score, res.stages, res.metrics, res.artifacts, res.wall_s
            )
        t0 = time.monotonic()
        out = Outcome(status=OK, score=None)
        for i, stage in enumerate(self.problem.cascade):
            name = stage.function or stage.split
            res = self.sandbox.evaluate(self.request(code, stage.split, stage.function))
            out.metrics.update(res.metrics)
            out.artifacts.update(res.artifacts)
            if res.status != OK or res.score is None:
                out.status = res.status if res.status != OK else "sandbox_error"
                out.artifacts.setdefault("stage", name)
                out.score = None
                break
            out.scores[name] = res.score
            last = i == len(self.problem.cascade) - 1
            if not last and stage.threshold is not None and res.score < stage.threshold:
                out.status = REJECTED
                out.artifacts["cascade"] = (
                    f"stage '{name}' scored {res.score:.6g}, below its threshold {stage.threshold:.6g}; "
                    "later stages were not run"
                )
                break
            out.score = res.score if last else None
        out.eval_s = time.monotonic() - t0
        return out
