"""A GEPA script's candidates on Ray, scored in long-lived workers that keep its state.

A Ray task is short-lived and goes wherever there is room, so a worker cannot outlive one.
Instead each `--parallel` slot is one Ray actor (NodeWorkers), placed on some node for the
run: it holds the node's own sandbox, built as a task's would be (node.py), wrapped in a
StatefulSandbox of one worker (evaluators/stateful.py). A slot's candidates all go to its
actor, so they hit the same worker, with what the script's evaluator keeps at module level.

A call that runs past its time limit or crashes its worker fails that candidate alone, as on
the local and Docker backends: the actor answers, its StatefulSandbox starts a fresh worker
for the next. An actor that dies (its node lost, its process killed) or never answers is
the infrastructure's failure: a fresh actor, on whatever node has room, takes the candidate
again, a bounded number of times (RayOptions.retries), then it is a sandbox_error, as for a
task. An actor holds its reservation ([evaluation.resources]) for the whole run, so there
are no more slots than the cluster can hold at the start. The actors end with the run.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from evaluators.inside.gepa_score import CAPTURE
from evaluators.ray.bundle import BundleError
from evaluators.ray.node import (
    NodeOptions,
    NodeReply,
    arrived,
    node_name,
    node_sandbox,
    sandbox_key,
)
from evaluators.ray.sandbox import RaySandbox, guard_s, infra_failed, one_line
from evaluators.sandbox import EvalRequest, EvalResult, Status
from evaluators.stateful import StatefulSandbox

CLOSE_S = 60.0  # how long the actors get to end their workers before they are killed


class NodeWorkers:
    """The Ray actor of one slot: its node's sandbox, keeping one GEPA worker alive."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._boxes: dict[tuple, StatefulSandbox] = {}
        self._said: list[str] = []

    def evaluate(
        self,
        req: EvalRequest,
        bundle: bytes,
        digest: str,
        roots: tuple[tuple[str, str], ...],
        opts: NodeOptions,
    ) -> NodeReply:
        req, cpus = arrived(req, bundle, digest, roots)
        key = sandbox_key(opts, req, cpus)
        with self._lock:
            box = self._boxes.get(key)
        if box is None:  # the controller sends one call at a time: no other makes this one
            inner = node_sandbox(opts, req.problem_dir, req.tools, cpus)
            box = StatefulSandbox(inner, 1, say=self._said.append)
            with self._lock:
                self._boxes[key] = box
        result = box.evaluate(req)
        said, self._said[:] = self._said[:], []
        return NodeReply(result, node_name(), said)

    def close(self) -> None:
        """End its workers (a call in flight fails) and its sandboxes."""
        with self._lock:
            boxes = list(self._boxes.values())
            self._boxes.clear()
        for box in boxes:
            box.close()


class RayStatefulSandbox:
    """A Sandbox that scores GEPA candidates in at most `parallel` actors of `inner`'s cluster;
    every other request (the capture of the script's call) goes to `inner`, a task each."""

    def __init__(
        self, inner: RaySandbox, parallel: int, say: Callable[[str], None] | None = None
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self._say = say or (lambda line: print(line, file=sys.stderr))
        self._ray = inner.ray
        o = inner.options
        room = _room(self._ray.cluster_resources(), o.cpus, o.gpus)
        slots = max(1, min(parallel, room))
        if slots < parallel:
            self._say(
                f"evolve: --sandbox ray keeps {slots} GEPA worker(s), not {parallel}: each holds "
                f"{o.cpus:g} CPU and {o.gpus:g} GPU of the cluster for the whole run"
            )
        self._actor = self._ray.remote(NodeWorkers).options(
            num_cpus=o.cpus,
            num_gpus=o.gpus,
            memory=(o.memory_mb << 20) if o.memory_mb else None,
            max_restarts=0,  # ours, bounded and counted (see _evaluate)
            max_task_retries=0,
            max_concurrency=2,  # a close() while a call runs
            scheduling_strategy="SPREAD",
        )
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(slots)
        self._free = list(range(slots))
        self._actors: list[Any] = [None] * slots
        self._closed = False

    def evaluate(self, request: EvalRequest) -> EvalResult:
        if request.fmt != "gepa" or request.program_code == CAPTURE:
            return self.inner.evaluate(request)
        with self._slots:
            with self._lock:
                slot = self._free.pop()
            try:
                return self._evaluate(slot, request)
            finally:
                with self._lock:
                    self._free.append(slot)

    def _evaluate(self, slot: int, request: EvalRequest) -> EvalResult:
        t0 = time.monotonic()
        try:
            bundle, ref = self.inner.bundle(request)
        except BundleError as e:
            return EvalResult(Status.SANDBOX_ERROR, artifacts={"error": str(e)})
        guard = guard_s(request)
        why, attempts = "", 0
        while attempts <= self.inner.options.retries:
            actor = self._actor_of(slot)
            if actor is None:
                why = "the run is stopping"
                break
            attempts += 1
            call = actor.evaluate.remote(
                request, ref, bundle.digest, bundle.roots, self.inner.options.node
            )
            try:
                reply = self._ray.get(call, timeout=guard)
            except Exception as e:  # the actor, its node or the cluster failed: not the candidate
                why = one_line(e)
                if isinstance(e, self._ray.exceptions.GetTimeoutError):
                    why = f"no answer within {guard:g} s"
                self._lose(slot, actor, why)
                continue
            self.inner.record(reply.node)
            for line in reply.said:
                self._say(line)
            return reply.result
        return infra_failed(why, attempts, t0)

    def _actor_of(self, slot: int) -> Any:
        """The slot's actor, started on first need (None: the run is stopping)."""
        with self._lock:
            if self._closed:
                return None
            if self._actors[slot] is None:
                self._actors[slot] = self._actor.remote()
            return self._actors[slot]

    def _lose(self, slot: int, actor: Any, why: str) -> None:
        """The actor failed a call: killed (its worker with it), a fresh one takes the slot."""
        with self._lock:
            if self._actors[slot] is actor:
                self._actors[slot] = None
            closed = self._closed
        self._kill(actor)
        self.inner.record(None)
        if not closed:
            self._say(
                f"evolve: ray lost GEPA worker slot {slot + 1} ({why}): a fresh actor scores "
                "the candidate again, the script's module state lost"
            )

    def _kill(self, actor: Any) -> None:
        try:
            self._ray.kill(actor, no_restart=True)
        except Exception:
            pass

    def close(self) -> None:
        """End every actor's workers (calls in flight fail), the actors, then the backend."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            actors = [a for a in self._actors if a is not None]
        ends = [a.close.remote() for a in actors]
        if ends:
            try:
                self._ray.wait(ends, num_returns=len(ends), timeout=CLOSE_S)
            except Exception:  # an actor already gone: killed below all the same
                pass
        for actor in actors:
            self._kill(actor)
        self.inner.close()


def _room(total: dict[str, float], cpus: float, gpus: float) -> int:
    """How many actors of this reservation the cluster holds at once."""
    fits = [total.get("CPU", 0.0) / cpus] if cpus > 0 else []
    fits += [total.get("GPU", 0.0) / gpus] if gpus > 0 else []
    return int(min(fits)) if fits else sys.maxsize
