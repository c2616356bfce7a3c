"""RaySandbox: each evaluation a Ray task on some node of a cluster.

The controller keeps the archive and the exactly-once accounting; a task carries the
request and the packed problem folder (bundle.py) and runs it in that node's
own sandbox (node.py). Ray's own task retries are off: a task whose worker
or node dies, or that Ray cancels, is resubmitted here a bounded number of times and then
recorded as a sandbox_error (the infrastructure's fault, never the candidate's).
Without an address a private Ray instance starts with the run and stops with it; a
driver that dies takes its tasks with it (Ray kills a dead job's workers).
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import sys
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from evaluators.ray.bundle import Bundle, BundleError, pack
from evaluators.ray.node import NodeOptions, evaluate_on_node
from evaluators.sandbox import EvalRequest, EvalResult, Status

LOOPBACK_ONLY_ENV = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"  # "0": Ray binds and advertises 127.0.0.1
GRACE_S = 120.0  # beyond the evaluation's own deadline: a task stuck this long is lost


class RayUnavailable(RuntimeError):
    """Ray is missing or the cluster cannot run these tasks; one line says why."""


@dataclass(frozen=True)
class RayOptions:
    """Where the tasks go and what each one asks of its node."""

    address: str | None = None  # None: a private Ray instance for this run
    node: NodeOptions = field(default_factory=NodeOptions)
    cpus: float = 1.0
    gpus: float = 0.0
    memory_mb: int | None = None  # what Ray reserves per task (None: nothing)
    retries: int = 2  # resubmissions after an infrastructure failure


def is_loopback(address: str | None) -> bool:
    if address is None:
        return True
    host = address.rsplit(":", 1)[0].strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _answers(address: str, timeout_s: float = 5.0) -> str | None:
    """None when something listens at host:port, else why not (fails fast, unlike ray.init)."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        return f"--ray-address {address}: expected HOST:PORT (the head's GCS address)"
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as e:
        return f"--ray-address {address}: no Ray cluster answers there ({e.strerror or e})"
    return None


def _stay_on_loopback(ray: Any) -> None:
    """Keep a loopback address as given though Ray was imported before the variable was set.

    Ray reads LOOPBACK_ONLY_ENV once, on import; imported earlier in this process (by a
    user's script, another run), it would swap 127.0.0.1 for the machine's outward
    address, where a head bound to loopback never answers (ray.init waits for GCS forever).
    """
    constants = getattr(getattr(ray, "_private", None), "ray_constants", None)
    if constants is not None and getattr(constants, "ENABLE_RAY_CLUSTER", False):
        constants.ENABLE_RAY_CLUSTER = False


class RaySandbox:
    name = "ray"

    def __init__(self, options: RayOptions) -> None:
        address = options.address
        if address and address != "auto" and (why := _answers(address)):
            raise RayUnavailable(why)
        # read by Ray on import: no usage report; a cluster on this machine stays on loopback
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        if is_loopback(address):
            os.environ.setdefault(LOOPBACK_ONLY_ENV, "0")
        try:
            import ray
        except ImportError:
            raise RayUnavailable(
                "--sandbox ray: the `ray` package is not installed: pip install -e '.[ray]'"
            ) from None
        if is_loopback(address):
            _stay_on_loopback(ray)
        self._ray = ray
        self.options = options
        try:
            ray.init(
                address=address,
                include_dashboard=False,
                log_to_driver=False,
                logging_level=logging.ERROR,  # not its notices (token auth on, ...)
                namespace="evolve",
                num_cpus=None if address else os.cpu_count() or 1,
            )
        except Exception as e:  # ConnectionError, a version mismatch, a bad address ...
            first = str(e).strip().splitlines()[0][:200] if str(e).strip() else type(e).__name__
            raise RayUnavailable(f"--sandbox ray: Ray did not start: {first}") from None
        self._check_resources()
        self._task = ray.remote(evaluate_on_node).options(
            num_cpus=options.cpus,
            num_gpus=options.gpus,
            memory=(options.memory_mb << 20) if options.memory_mb else None,
            max_retries=0,  # ours, bounded and counted (see evaluate)
            scheduling_strategy="SPREAD",
        )
        self._lock = threading.Lock()
        self._bundles: dict[tuple, tuple[Bundle, Any]] = {}
        self._inflight: set = set()
        self._closed = False
        self.placements: Counter[str] = Counter()  # node -> evaluations finished there
        self.infra_failures = 0  # task attempts lost to the infrastructure

    @property
    def ray(self) -> Any:
        """The `ray` module this sandbox drives (imported on the loopback terms above)."""
        return self._ray

    def _check_resources(self) -> None:
        total = self._ray.cluster_resources()
        o = self.options
        for name, want in (("CPU", o.cpus), ("GPU", o.gpus)):
            if want > total.get(name, 0.0):
                self._ray.shutdown()
                raise RayUnavailable(
                    f"--sandbox ray: each evaluation asks for {want:g} {name}, and the cluster "
                    f"has {total.get(name, 0.0):g} in all ([evaluation.resources] in problem.toml)"
                )

    # ---- the Sandbox interface ----------------------------------------------

    def evaluate(self, request: EvalRequest) -> EvalResult:
        t0 = time.monotonic()
        try:
            bundle, ref = self.bundle(request)
        except BundleError as e:
            return EvalResult(Status.SANDBOX_ERROR, artifacts={"error": str(e)})
        guard = guard_s(request)
        why, attempts = "", 0
        while attempts <= self.options.retries:
            if self._closed:
                why = "the run is stopping"
                break
            attempts += 1
            task = self._task.remote(request, ref, bundle.digest, bundle.roots, self.options.node)
            with self._lock:
                self._inflight.add(task)
                closed = self._closed
            if closed:  # close() ran while it was being submitted: it did not see this task
                with self._lock:
                    self._inflight.discard(task)
                try:
                    self._ray.cancel(task, force=True)
                except Exception:
                    pass
                why = "the run is stopping"
                break
            try:
                reply = self._ray.get(task, timeout=guard)
            except Exception as e:  # the task, its worker or its node failed: not the candidate
                why = one_line(e)
                if isinstance(e, self._ray.exceptions.GetTimeoutError):
                    self._ray.cancel(task, force=True)
                    why = f"no answer within {guard:g} s"
                self.record(None)
                continue
            finally:
                with self._lock:
                    self._inflight.discard(task)
            self.record(reply.node)
            return reply.result
        return infra_failed(why, attempts, t0)

    def record(self, node: str | None) -> None:
        """An attempt that finished on `node`, or that the infrastructure lost (None: unless
        the run is stopping, when a lost attempt is no failure): for the summary."""
        with self._lock:
            if node is not None:
                self.placements[node] += 1
            elif not self._closed:
                self.infra_failures += 1

    def bundle(self, req: EvalRequest) -> tuple[Bundle, Any]:
        """The problem's files, packed and put in the object store once per run."""
        key = (req.problem_dir, req.data_dir, req.includes, req.crates)
        with self._lock:
            if key not in self._bundles:
                bundle = pack(req.problem_dir, req.data_dir, req.includes, req.crates)
                self._bundles[key] = (bundle, self._ray.put(bundle.data))
            return self._bundles[key]

    def close(self) -> None:
        """Cancel what is in flight (its worker is killed, and the evaluation with it)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            inflight = list(self._inflight)
        for task in inflight:
            try:
                self._ray.cancel(task, force=True)
            except Exception:
                pass
        if self.placements or self.infra_failures:
            print(self.summary(), file=sys.stderr, flush=True)
        self._ray.shutdown()

    def summary(self) -> str:
        where = ", ".join(f"{n}: {c}" for n, c in sorted(self.placements.items()))
        line = f"sandbox: ray ran {sum(self.placements.values())} evaluations on {len(self.placements)} node(s) ({where})"
        if self.infra_failures:
            line += f"; {self.infra_failures} task attempt(s) lost to the infrastructure and resubmitted or recorded"
        return line


def guard_s(req: EvalRequest) -> float:
    """How long an attempt may go unanswered before it is lost (a hung node, a stuck task)."""
    return req.limits.timeout_s * 2 + GRACE_S


def infra_failed(why: str, attempts: int, t0: float) -> EvalResult:
    """The result of an evaluation the infrastructure lost on every attempt."""
    return EvalResult(
        Status.SANDBOX_ERROR,
        artifacts={
            "error": f"ray: infrastructure failure, not the candidate's: {why}",
            "attempts": str(attempts),
        },
        eval_s=time.monotonic() - t0,
    )


def one_line(e: BaseException) -> str:
    cause = getattr(e, "cause", None)  # RayTaskError: what our code raised on the node
    if isinstance(cause, BaseException):
        return one_line(cause)
    text = str(e).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(e).__name__}: {first[:200]}" if first else type(e).__name__
