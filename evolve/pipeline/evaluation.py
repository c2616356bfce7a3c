"""Run a candidate through the problem's cascade in a sandbox.

Native problems: cheap stages screen candidates before the expensive one; a
candidate that misses a stage's threshold is `rejected` and, like every
failure, gets no score, so it can never outrank a program that really ran.
OpenEvolve-format problems get OpenEvolve's own cascade, run by the harness in
one sandbox process (evaluators/inside/openevolve_run.py): stage metrics merge, and a
program under a threshold keeps the score it has so far. A candidate over the
problem's size cap is `invalid` before any sandbox sees it (evolve/problem/size_cap.py).
Every stage gives the sandbox's own EvalResult; the whole cascade is a CascadeResult, its
status the archive's (a sandbox's outcome, or `rejected`), whose fields the archive stores as
they are, after the run's secrets are redacted from its texts (evolve/pipeline/redaction.py): this is the one
place an evaluation's text enters the run.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from evaluators.backends import keep_state, make_sandbox, ray_options
from evaluators.sandbox import EvalRequest, EvalResult, Limits, Sandbox, Status
from evolve.archive.vocab import ProgramStatus
from evolve.pipeline.gepa_state import OptState
from evolve.pipeline.redaction import Redactor, folder_keys
from evolve.problem.crates import crates_dir
from evolve.problem.data import data_dir_for, ensure
from evolve.problem.load import Problem
from evolve.problem.size_cap import oversized


def openevolve_thresholds(problem: Problem) -> tuple[float, ...] | None:
    """The thresholds of an OpenEvolve cascade (None: cascade_evaluation is off)."""
    if not problem.cascade_evaluation:
        return None
    return tuple(s.threshold for s in problem.cascade if s.threshold is not None)


@dataclass
class CascadeResult:
    """A whole cascade's result: an EvalResult's fields, its status the archive's (a sandbox's
    outcome, or REJECTED: under a stage's threshold, later stages not run)."""

    status: ProgramStatus
    score: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    eval_s: float = 0.0  # wall-clock seconds
    scores: dict[str, float] = field(default_factory=dict)  # score after each cascade stage

    @classmethod
    def of(cls, res: EvalResult) -> CascadeResult:
        """One sandbox evaluation as the cascade's result (its outcome, as is)."""
        return cls(
            ProgramStatus(res.status), res.score, res.metrics, res.artifacts, res.eval_s, res.scores
        )


class CandidateEvaluator:
    """Builds each request for one problem's candidates and runs them in the sandbox.

    `data_seed`: the run's private seed for generated workloads (evolve/problem/data_seed.py), which
    every request carries to the trusted evaluator; None evaluates on the public data.
    `keys`: the endpoint keys the run holds, redacted with the evaluator's environment, the
    data seed and the folder's and environment's keys from every result."""

    def __init__(
        self,
        problem: Problem,
        sandbox: Sandbox,
        data_dir: str | None = None,
        data_seed: int | None = None,
        keys: Iterable[str | None] = (),
    ):
        self.problem = problem
        self.sandbox = sandbox
        self.data_seed = data_seed
        llm = problem.llm
        self.redactor = Redactor(
            [
                *problem.env.values(),
                *(() if data_seed is None else (str(data_seed),)),
                *folder_keys([llm.api_key, *(m.api_key for m in llm.models)]),
                *keys,
            ]
        )
        root = Path(data_dir).resolve() if data_dir else data_dir_for(problem.root)
        if problem.data:
            ensure(list(problem.data), root)  # trusted side fetches; the sandbox gets no network
        self.data_dir = str(root) if root.is_dir() else None  # a problem may have no data/
        # so are the crates its Cargo.toml files name (CrateError: one line, nothing evaluated)
        self.crates = crates_dir(problem.root, problem.tools)
        timeout_s = problem.timeout_s
        if problem.fmt == "openevolve":  # each stage has the timeout; the import one more
            timeout_s *= len(problem.cascade) + 1
        self.limits = Limits(timeout_s=timeout_s, memory_mb=problem.memory_mb)
        # a GEPA script's evaluator gets the best evaluations so far (GEPA's opt_state)
        self.opt_state = OptState() if problem.fmt == "gepa" else None

    def under(self, data_seed: int) -> CandidateEvaluator:
        """This evaluator, same sandbox and data, drawing its workloads under `data_seed`
        (the leaderboard's: evolve/pipeline/leaderboard.py), whose texts have that seed redacted too."""
        other = copy.copy(self)
        other.data_seed = data_seed
        other.redactor = Redactor([*self.redactor.secrets, str(data_seed)])
        return other

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
            tools=self.problem.tools,
            crates=self.crates,
            benchmark=self.problem.benchmark,
        )
        if self.opt_state is not None:
            return replace(req, env={**req.env, **self.opt_state.env()})
        if self.problem.fmt != "openevolve":
            return req
        return replace(
            req,
            cascade=openevolve_thresholds(self.problem),
            retries=self.problem.eval_retries,
            stage_timeout_s=self.problem.timeout_s,
            feature_dims=self.problem.openevolve_feature_dims,
            evaluator_args=dict(self.problem.evaluator_args),
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

    def _run(self, req: EvalRequest) -> EvalResult:
        """One sandbox evaluation, its texts redacted before anything else sees them."""
        res = self.redactor.result(self.sandbox.evaluate(req))
        if self.opt_state is not None:
            self.opt_state.record(res, req.program_code)
        return res

    def run_split(self, code: str, split: str) -> EvalResult:
        """One split, no cascade (held-out re-scoring, `evolve eval --split`)."""
        return self._run(self.request(code, split))

    def run_stage(self, code: str, stage: str) -> EvalResult:
        """One cascade stage alone (`evolve eval --stage`): a split of a native problem,
        a function of an OpenEvolve evaluator."""
        if self.problem.fmt == "openevolve":
            return self._run(self.request(code, self.problem.train_split, stage))
        return self.run_split(code, stage)

    def evaluate(self, code: str) -> CascadeResult:
        """The whole cascade; `scores` holds each stage's score, `eval_s` the time it took."""
        refused = oversized(self.problem, code)
        if refused is not None:
            return CascadeResult.of(refused)
        if self.problem.fmt == "openevolve":  # the harness runs OpenEvolve's cascade
            return CascadeResult.of(self._run(self.request(code, self.problem.train_split)))
        t0 = time.monotonic()
        out = CascadeResult(ProgramStatus.OK)
        for i, stage in enumerate(self.problem.cascade):
            name = stage.function or stage.split
            res = self._run(self.request(code, stage.split, stage.function))
            out.metrics.update(res.metrics)
            out.artifacts.update(res.artifacts)
            if res.status != Status.OK or res.score is None:
                out.status = ProgramStatus(
                    res.status if res.status != Status.OK else Status.SANDBOX_ERROR
                )
                out.artifacts.setdefault("stage", name)
                out.score = None
                break
            out.scores[name] = res.score
            last = i == len(self.problem.cascade) - 1
            if not last and stage.threshold is not None and res.score < stage.threshold:
                out.status = ProgramStatus.REJECTED
                out.artifacts["cascade"] = (
                    f"stage '{name}' scored {res.score:.6g}, below its threshold {stage.threshold:.6g}; "
                    "later stages were not run"
                )
                break
            out.score = res.score if last else None
        out.eval_s = time.monotonic() - t0
        return out


class SandboxChoice(Protocol):
    """The settings that pick a sandbox: a run's RunConfig and the API's Settings both hold them."""

    @property
    def sandbox(self) -> str: ...
    @property
    def require_isolation(self) -> bool: ...
    @property
    def ray_address(self) -> str | None: ...
    @property
    def ray_node_sandbox(self) -> str: ...
    @property
    def allow_unisolated_ray_nodes(self) -> bool: ...


def problem_sandbox(
    problem: Problem,
    s: SandboxChoice,
    parallel: int,
    run_id: str | None = None,
    say: Callable[[str], None] | None = None,
) -> Sandbox:
    """The sandbox `s` names, for `problem`'s evaluations (`parallel` at a time); `say`
    hears which backend was picked (default: stderr). A GEPA script's candidates are scored
    in long-lived workers that keep its evaluator's state (evaluators/stateful.py)."""
    box = make_sandbox(
        s.sandbox,
        parallel,
        run_id=run_id,
        say=say,
        require_isolation=s.require_isolation,
        problem_dir=str(problem.root),
        tools=problem.tools,
        ray=ray_options(
            problem,
            s.ray_address,
            s.ray_node_sandbox,
            allow_unisolated=s.allow_unisolated_ray_nodes,
        ),
    )
    return keep_state(box, parallel, say) if problem.fmt == "gepa" else box
