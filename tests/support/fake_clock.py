"""A clock for the LLM client (evolve.llm.client.Clock) whose waits take no real time.

The client still talks real HTTP to the scripted server; only its waits (backoff,
Retry-After) and its readings of the time go here, so a fault test runs in milliseconds
and checks each wait exactly, however loaded the machine is:

    clock = FakeClock()
    client = LLMClient(cfg, prices, clock=clock.clock())
    ... the call ...
    assert clock.waits == [1.0]   # the Retry-After asked for, exactly
"""

from __future__ import annotations

import asyncio
import threading

from evolve.llm.client import Clock


class FakeClock:
    """Time that moves only when the client waits: `now` (wall and monotonic alike) starts
    at a whole second and advances by each wait, which `waits` records in order. The
    scripted server's responder (another thread) may read `now` too."""

    def __init__(self, start: float = 1_000_000.0):
        self._lock = threading.Lock()
        self._now = start
        self.waits: list[float] = []

    @property
    def now(self) -> float:
        with self._lock:
            return self._now

    async def sleep(self, seconds: float) -> None:
        with self._lock:
            self.waits.append(seconds)
            self._now += seconds
        await asyncio.sleep(0)  # still a point where other tasks run, as a real wait is

    def clock(self) -> Clock:
        return Clock(sleep=self.sleep, monotonic=lambda: self.now, wall=lambda: self.now)
