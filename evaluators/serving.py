"""What a backend needs to run a long-lived harness in `serve` mode (a GEPA script's worker,
evaluators/inside/gepa_serve.py): the channel it talks on, and when to end it.

Apart from evaluators/stateful.py, which drives the workers, so that a backend that can serve
(local, docker) imports only this.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Protocol

from evaluators.harness_result import ProcRun
from evaluators.sandbox import EvalRequest, Limits

SERVE_FDS_ENV = "EVOLVE_SERVE_FDS"  # harness.py's: "READ,WRITE", the worker's channel
# How long one worker may live: a backstop, never the per-call limit, which the host enforces
# on each call (evaluators/stateful.py). Also its RLIMIT_CPU, counted over all its calls.
LIFETIME_S = 30 * 24 * 3600.0
STOP_POLL_S = 0.1  # how often the host's side of a call looks at its worker's end


@dataclass
class Serving:
    """The worker's ends of its channel (`fds`: it reads requests from the first, writes
    replies to the second) and the event that ends it, everything it started killed."""

    fds: tuple[int, int]
    stop: threading.Event = field(default_factory=threading.Event)


class Server(Protocol):
    """A backend that runs a `serve` harness: blocks until it ended (by itself, or `stop`)."""

    def serve(self, request: EvalRequest, serving: Serving) -> ProcRun: ...


def lifetime(limits: Limits) -> Limits:
    """The worker's limits: a call's, but for the lifetime backstop."""
    from dataclasses import replace

    return replace(limits, timeout_s=LIFETIME_S)
