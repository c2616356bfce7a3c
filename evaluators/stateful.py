"""A GEPA script's candidates scored in long-lived workers, so its evaluator keeps its state.

In GEPA the script runs once, in one process, and optimize_anything calls its evaluator on
every candidate: what the evaluator keeps at module level (a cache, a counter, a model loaded
on first use, a history) lives on. Here each worker (evaluators/inside/gepa_serve.py) is one
sandboxed process that imports the script once and scores candidate after candidate, under
the confinement and memory limit of any evaluation; the time limit applies to each call.

What differs from GEPA, and when the state is lost:
- `--parallel N` runs N workers, each with its own state (GEPA's single process shares one);
  a candidate goes to whichever worker is free.
- A call that runs past its time limit, or that crashes, exits or runs its worker out of
  memory, fails that candidate alone: its worker is ended and a fresh one, importing the
  script anew, scores the next candidate. The failure's error says so, and `say` hears it.
- Nothing of a worker is stored: a resumed run, `evolve eval`, `evolve check` each start
  fresh workers.
- On Ray a worker lives in an actor per slot, on its node (evaluators/ray/stateful.py, which
  wraps one of these per actor around the node's own sandbox; backends.keep_state picks).
  A backend that cannot serve at all scores each candidate in a fresh import; `say` hears
  it once.
The capture of the script's call (evolve/problem/gepa_capture.py) and every other format go
to the backend unchanged.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import cast

from evaluators import tree
from evaluators.harness_result import ProcRun, to_result
from evaluators.inside.gepa_score import CAPTURE, STATE_ENV
from evaluators.sandbox import EvalRequest, EvalResult, Sandbox, Status
from evaluators.serving import Server
from evaluators.two_phase import program_files, sandbox_failed
from evaluators.worker_channel import Lost, Worker

WHO = "the GEPA script's evaluator"
WORKER_FILE = "gepa_worker.txt"  # the serve launch's placeholder program: the calls carry them
LOST_STATE = (
    "the worker is replaced: a fresh one, importing the script again, scores the next "
    "candidate, and the module state the script's evaluator kept (caches, counters) is lost"
)


def worker_request(req: EvalRequest) -> EvalRequest:
    """What a worker is started with: the request but its candidate and its opt_state, which
    each call carries."""
    env = {k: v for k, v in req.env.items() if k != STATE_ENV}
    return replace(req, program_code="", program_name=WORKER_FILE, env=env, data_seed=None)


class StatefulSandbox:
    """A Sandbox that scores GEPA candidates in at most `parallel` workers of `inner`."""

    def __init__(
        self, inner: Sandbox, parallel: int, say: Callable[[str], None] | None = None
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self._say = say or (lambda line: print(line, file=sys.stderr))
        self._server = cast(Server, inner) if callable(getattr(inner, "serve", None)) else None
        self._parallel = max(1, parallel)
        self._slots = threading.BoundedSemaphore(self._parallel)
        self._lock = threading.Lock()
        self._idle: dict[str, list[Worker]] = {}
        self._live: set[Worker] = set()
        self._started = 0
        self._lost = 0
        self._closed = False
        if self._server is None:
            self._say(
                f"evolve: --sandbox {inner.name} cannot keep a GEPA script's worker: each "
                "candidate is scored in a fresh import of the script (no module state persists)"
            )

    def evaluate(self, request: EvalRequest) -> EvalResult:
        if self._server is None or request.fmt != "gepa" or request.program_code == CAPTURE:
            return self.inner.evaluate(request)
        with self._slots:
            t0 = time.monotonic()
            try:
                result = self._evaluate(self._server, request)
            except Exception as e:
                result = sandbox_failed(self.name, e)
            result.eval_s = time.monotonic() - t0
        return result

    def _evaluate(self, server: Server, request: EvalRequest) -> EvalResult:
        try:
            files = program_files(request)
        except tree.TreeError as e:  # the candidate's tree breaks a rule: nothing was sent
            return EvalResult(Status.INVALID, artifacts={"error": f"program tree: {e}"})
        start = worker_request(request)
        key = json.dumps(start.to_json(), sort_keys=True)
        worker = self._take(server, key, start)
        ask = {"files": files, "entry": request.program_name, "known": request.env.get(STATE_ENV)}
        reply = worker.call(ask, request.limits.timeout_s)
        if isinstance(reply, dict):
            with self._lock:
                self._idle.setdefault(key, []).append(worker)
            run = ProcRun(reply, 0, False, "", "", 0)
            result, _ = to_result(run, request.limits, WHO, check_score=True)
            result.artifacts["private.gepa_worker"] = (
                f"call {worker.calls} of worker {worker.number}"
            )
            return result
        return self._lose(worker, reply, request)

    def _take(self, server: Server, key: str, start: EvalRequest) -> Worker:
        """An idle worker for these settings, or a new one (an idle one of other settings
        ended to make room: `parallel` workers at most, as the slots allow)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the sandbox is closed")
            idle = self._idle.get(key)
            if idle:
                return idle.pop()
            others = [w for ws in self._idle.values() for w in ws]
            stale = others[0] if others and len(self._live) >= self._parallel else None
            if stale is not None:
                self._forget(stale)
            self._started += 1
            worker = Worker(server, start, self._started)
            self._live.add(worker)
        if stale is not None:
            stale.close()
        return worker

    def _forget(self, worker: Worker) -> None:
        """Drop it from the pool (the lock held)."""
        self._live.discard(worker)
        for ws in self._idle.values():
            if worker in ws:
                ws.remove(worker)

    def _lose(self, worker: Worker, why: Lost, request: EvalRequest) -> EvalResult:
        """The failure of a call that got no reply; the worker ended, its state gone."""
        run = worker.close()
        with self._lock:
            self._forget(worker)
            self._lost += 1
            closed = self._closed
        if why is Lost.TIMEOUT:
            limit = request.limits.timeout_s
            error = (
                f"{WHO}: wall-clock timeout of {limit:g} s exceeded; all its processes were killed"
            )
            result = EvalResult(Status.TIMEOUT, artifacts={"error": error})
        elif why is Lost.GARBLED:
            error = f"{WHO}'s worker sent a reply that cannot be read"
            result = EvalResult(Status.RUNTIME_ERROR, artifacts={"error": error})
        elif run is None:  # the backend failed to run it at all
            error = f"{self.name} sandbox failed: {worker.error!r}"
            result = EvalResult(Status.SANDBOX_ERROR, artifacts={"error": error})
        else:
            if run.out_of_memory:  # the kernel's word (it killed the worker), not the harness's
                run = replace(run, data=None, returncode=-signal.SIGKILL)
            result, _ = to_result(run, request.limits, WHO, check_score=True)
        if closed:
            return result
        result.artifacts["error"] = f"{result.artifacts.get('error', why)}; {LOST_STATE}"
        self._say(
            f"evolve: GEPA worker {worker.number} lost on call {worker.calls} ({why}): "
            "the next candidate is scored in a fresh worker, the script's module state lost"
        )
        return result

    def close(self) -> None:
        """End every worker (calls in flight fail), then the backend."""
        with self._lock:
            self._closed = True
            workers = list(self._live)
        for w in workers:
            w.stop()
        for w in workers:
            w.close()
        self.inner.close()
