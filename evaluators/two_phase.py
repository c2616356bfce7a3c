"""The evaluation protocol every process-launching backend shares, written once.

One evaluation is the harness in `run` mode beside the candidate and, for a native
problem with a trusted score(), the harness in `score` mode in a second clean process
that never imports the candidate; the trusted side's artifacts win the merge. A backend
(LocalSandbox, DockerSandbox) supplies only how one harness process is launched: a
`Launch` inside a `session`. Ray ships the whole evaluation to a node, where one of
those two runs it.
"""

from __future__ import annotations

import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import replace
from os.path import abspath

from evaluators import tree
from evaluators.harness_result import MISSING, ProcRun, has_score_fn, to_result
from evaluators.sandbox import EvalRequest, EvalResult, Status

# One harness process: (mode "run" | "score", the JSON payload, the files beside it).
Launch = Callable[[str, dict, dict[str, str]], ProcRun]
# What a session yields: the request as the harness sees its paths, and its launcher.
Session = tuple[EvalRequest, Launch]


def check_name(name: str, is_tree: bool = False) -> str:
    """The candidate's file name, which becomes a path in the sandbox: a plain name only; for
    a tree, its entry's relative path (tree.check_path)."""
    if is_tree:
        try:
            return tree.check_path(name)
        except tree.TreeError as e:
            raise ValueError(f"program_name: {e}") from None
    if not name or name in (".", "..") or "/" in name or "\0" in name or name.endswith(".json"):
        raise ValueError(f"program_name must be a plain file name, got {name!r}")
    return name


def sandbox_failed(name: str, e: Exception) -> EvalResult:
    """The result of an evaluation the sandbox itself could not carry out (never the
    candidate's fault): the error and the trusted side's traceback."""
    return EvalResult(
        Status.SANDBOX_ERROR,
        artifacts={
            "error": f"{name} sandbox failed: {e!r}",
            "traceback": traceback.format_exc()[-8000:],
        },
    )


def program_files(req: EvalRequest) -> dict[str, str]:
    """The files the candidate is written as, path -> text: a one-file program's one file, a
    tree's every file at its relative path. TreeError (the candidate's: its code breaks a
    rule of trees) where a path escapes, a name is reserved, a file repeats, a file is no
    UTF-8 text or the tree has no file at the entry's path."""
    if not tree.is_tree(req.program_code):
        return {check_name(req.program_name): req.program_code}
    entry = check_name(req.program_name, is_tree=True)
    files = tree.decode(req.program_code, entry)  # checks every path
    if entry not in files:
        raise tree.TreeError(f"{entry}: the tree has no file at the problem's entry path")
    for path, text in files.items():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as e:  # a lone surrogate: no file can hold it as UTF-8
            raise tree.TreeError(f"{path}: not UTF-8 text (character {e.start})") from None
    return files


def absolute(req: EvalRequest) -> EvalRequest:
    """The request with its host paths absolute: the harness's cwd is its scratch folder."""
    return replace(
        req,
        problem_dir=abspath(req.problem_dir),
        data_dir=req.data_dir and abspath(req.data_dir),
        includes=tuple(abspath(p) for p in req.includes),
        hidden=tuple(abspath(p) for p in req.hidden),
        crates=req.crates and abspath(req.crates),
    )


def run_then_score(req: EvalRequest, inside: EvalRequest, launch: Launch) -> EvalResult:
    """Run the candidate, then score its outputs on the trusted side when the problem has a
    score(). `req` holds host paths, `inside` the same request as the harness sees it."""
    scored = req.fmt == "native" and has_score_fn(req.problem_dir)
    try:
        files = {**program_files(req), **req.seed_files()}
    except tree.TreeError as e:  # the candidate's tree breaks a rule: nothing was written
        return EvalResult(Status.INVALID, artifacts={"error": f"program tree: {e}"})
    run = launch("run", inside.to_json(), files)
    result, outputs = to_result(run, req.limits, "evaluate()", check_score=not scored)
    if not scored or result.status != Status.OK:
        return result
    if outputs is MISSING:
        result.status = Status.INVALID
        result.artifacts["error"] = "evaluate() returned no 'outputs' for the trusted score()"
        return result
    payload = {
        "problem_dir": inside.problem_dir,
        "split": req.split,
        "outputs": outputs,
        "limits": req.to_json()["limits"],
        "env": req.env,
        "data_seed": req.data_seed,
    }
    run = launch("score", payload, {})
    final, _ = to_result(run, req.limits, "score()", check_score=True, prefix="score_")
    final.artifacts = {**result.artifacts, **final.artifacts}  # the trusted side wins
    return final


class TwoPhaseSandbox(ABC):
    """A Sandbox that runs `run_then_score` in at most `max_parallel` evaluations at once;
    whatever goes wrong on our side becomes a sandbox_error, never an exception."""

    name: str

    def __init__(self, max_parallel: int) -> None:
        self.max_parallel = max(1, max_parallel)
        self._slots = threading.BoundedSemaphore(self.max_parallel)

    @abstractmethod
    def session(self, req: EvalRequest) -> AbstractContextManager[Session]:
        """What one evaluation holds while it runs (a uid, a container), released after."""

    @abstractmethod
    def close(self) -> None: ...

    def evaluate(self, request: EvalRequest) -> EvalResult:
        with self._slots:
            t0 = time.monotonic()  # the evaluation itself, not the wait for a slot
            try:
                req = absolute(request)
                with self.session(req) as (inside, launch):
                    result = run_then_score(req, inside, launch)
            except Exception as e:
                result = sandbox_failed(self.name, e)
            result.eval_s = time.monotonic() - t0
        return result
