"""LLM faults leave a trace: every failed attempt is an llm_calls row and part of the
status line; Retry-After is honoured; a budget with an unpriced model is refused.

Runs of a toy problem go through the real controller, local sandbox and `openai` SDK
against the scripted HTTP server (evolve/testing/scripted_llm.py); the screen is the real
RunProgress writing to a buffer. The LLM client waits on a FakeClock (tests/support/fake_clock.py):
its backoff and Retry-After waits take no real time, and each is checked exactly.
"""

from __future__ import annotations

import asyncio
import email.utils
import io
import sqlite3
import threading
from pathlib import Path

import openai
import pytest
from rich.console import Console

from evaluators.backends import make_sandbox
from evolve.archive import Archive
from evolve.cli.progress import RunProgress, status_line
from evolve.llm import LLMClient, LLMConfig, ModelSpec
from evolve.llm.client import MAX_RETRY_AFTER_S, parse_retry_after, retry_after_of
from evolve.llm.pricing import PriceTable, UnpricedModel, require_prices
from evolve.pipeline.config import RunConfig
from evolve.pipeline.controller import Controller, RunOutcome
from evolve.pipeline.evaluation import CandidateEvaluator
from evolve.problem.load import load_problem
from evolve.search.prompts import PromptBuilder
from evolve.testing.cli_helpers import evolve
from evolve.testing.scripted_llm import Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem
from tests.support.fake_clock import FakeClock


def edit(k: int) -> Reply:
    """The k-th answer: a new f, different from every other answer's."""
    body = f"def f(x):\n    return x + {k} * 0.5\n"
    return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


GOOD = [edit(k) for k in range(1, 20)]


class Run:
    """One run of the toy problem through the real Controller; `screen` is what the
    command line's RunProgress (plain mode) printed; the LLM client waits on `clock`."""

    def __init__(
        self, tmp_path: Path, url: str, iterations: int, clock: FakeClock | None = None, **cfg
    ):
        self.clock = clock or FakeClock()
        self.problem = load_problem(toy_problem(tmp_path / "toy"))
        self.cfg = RunConfig(
            problem_dir=str(self.problem.root),
            iterations=iterations,
            models=(ModelSpec("scripted"),),
            api_base=url,
            parallel=1,
            llm_parallel=1,
            sandbox="local",
            tune_evals=0,  # every iteration is a call: the calls' faults are what is tested
            **{"llm_backoff_s": 0.01, **cfg},
        )
        self.archive = Archive(tmp_path / "runs")
        self.archive.create_run(
            "r", self.problem.name, str(self.problem.root), self.cfg.to_json(), iterations
        )
        self.buf = io.StringIO()
        self.progress = RunProgress(enabled=False, console=Console(file=self.buf, width=400))

    def go(self) -> RunOutcome:
        sandbox = make_sandbox("local", self.cfg.parallel, run_id="r")
        llm = LLMClient(
            self.cfg.llm_config(), PriceTable.load(), seed=self.cfg.seed, clock=self.clock.clock()
        )
        self.ctl = Controller(
            self.archive,
            "r",
            self.cfg,
            self.problem,
            CandidateEvaluator(self.problem, sandbox, self.cfg.data_dir),
            llm,
            self.progress,
            PromptBuilder.for_config(self.problem, self.cfg),
        )

        async def main() -> RunOutcome:
            try:
                return await self.ctl.run()
            finally:
                await llm.close()

        try:
            return asyncio.run(main())
        finally:
            sandbox.close()

    @property
    def screen(self) -> str:
        return self.buf.getvalue()

    def calls(self) -> list[dict]:
        db = sqlite3.connect(self.archive.path)
        db.row_factory = sqlite3.Row
        rows = [dict(r) for r in db.execute("SELECT * FROM llm_calls ORDER BY call_id")]
        db.close()
        return rows


def _failed(calls: list[dict]) -> list[dict]:
    return [c for c in calls if c["reply"] is None]


def test_http_500_every_other_call_is_retried_recorded_and_shown(tmp_path):
    lock, n = threading.Lock(), [0]

    def every_other(request: dict) -> Reply:
        with lock:
            n[0] += 1
            k = n[0]
        return Reply("upstream exploded", status=500) if k % 2 else GOOD[(k // 2) % len(GOOD)]

    with ScriptedLLM(every_other) as srv:
        run = Run(tmp_path, srv.base_url, iterations=4)
        summary = run.go()
        errors = srv.counters["error"]
    assert summary.status == "finished" and summary.iterations_done == 4
    calls = run.calls()
    failed = _failed(calls)
    assert errors == 4 and len(failed) == errors  # every 500 is a row of its own
    for c in failed:
        assert c["error"].startswith("attempt 1/5 failed: HTTP 500: upstream exploded")
        assert "retrying in" in c["error"] and c["cost_usd"] == 0
    assert len(calls) - len(failed) == 4  # and every answer one more
    assert len(run.clock.waits) == 4 and all(0.005 <= w <= 0.015 for w in run.clock.waits)
    # resume would consume only answers, never a failed attempt
    assert run.archive.unconsumed_replies("r") == []
    stats = run.ctl.stats
    assert (stats.llm_retries, stats.llm_failed, stats.llm_last_fault) == (4, 0, "HTTP 500")
    assert "LLM: 4 retries, last HTTP 500" in status_line(stats)
    assert "LLM: 1 retry, last HTTP 500" in run.screen  # the plain log's first status line


def test_a_call_that_fails_every_attempt_is_recorded_and_the_run_goes_on(tmp_path):
    script = [GOOD[0], Reply("down", status=502), Reply("still down", status=502)]
    with ScriptedLLM.from_list(script, then=GOOD[1]) as srv:
        run = Run(tmp_path, srv.base_url, iterations=3, llm_retries=1)
        summary = run.go()
    assert summary.status == "finished"
    failed = _failed(run.calls())
    assert [c["iteration"] for c in failed] == [2, 2]
    assert failed[0]["error"].startswith("attempt 1/2 failed: HTTP 502: down")
    assert (
        "failed after 2 attempts" in failed[1]["error"]
        and "HTTP 502: still down" in failed[1]["error"]
    )
    assert (run.ctl.stats.llm_retries, run.ctl.stats.llm_failed) == (1, 1)
    assert len(run.clock.waits) == 1  # one retry; the last failure is not waited on
    assert "LLM: 1 retry, 1 failed call, last HTTP 502" in status_line(run.ctl.stats)
    assert "LLM call for iteration 2 failed" in run.screen


def test_retry_after_seconds_on_429_is_honoured(tmp_path):
    script = [Reply("slow down", status=429, headers={"Retry-After": "1"})]
    with ScriptedLLM.from_list(script, then=GOOD[0]) as srv:
        run = Run(tmp_path, srv.base_url, iterations=1)  # backoff alone would wait ~0.01 s
        assert run.go().status == "finished"
        assert srv.counters["chat"] == 2
    assert run.clock.waits == [1.0]
    (failed,) = _failed(run.calls())
    assert "HTTP 429: slow down" in failed["error"]
    assert "retrying in 1.0 s (Retry-After)" in failed["error"]
    assert run.ctl.stats.llm_last_fault == "HTTP 429"


def test_retry_after_http_date_on_503_is_honoured():
    clock = FakeClock()  # at a whole second: the date says exactly 2 s from now

    def script(request: dict) -> Reply:
        if len(srv.requests) == 1:
            later = email.utils.formatdate(clock.now + 2, usegmt=True)
            return Reply("overloaded", status=503, headers={"Retry-After": later})
        return Reply("fine")

    seen = []
    with ScriptedLLM(script) as srv:
        cfg = LLMConfig(models=(ModelSpec("m"),), api_base=srv.base_url, backoff_s=0.01)
        client = LLMClient(cfg, PriceTable.load(), clock=clock.clock())

        async def ask():
            try:
                return await client.complete(
                    [{"role": "user", "content": "hi"}], "m", on_retry=seen.append
                )
            finally:
                await client.close()

        reply = asyncio.run(ask())
    assert reply.content == "fine" and reply.attempts == 2
    assert clock.waits == [2.0]
    (attempt,) = seen
    assert attempt.fault == "HTTP 503" and attempt.retry_after_s == 2.0 and attempt.wait_s == 2.0


def test_an_outage_of_a_few_seconds_is_recorded_and_recovered(tmp_path):
    outage = {"until": None}
    lock = threading.Lock()
    good = iter(GOOD * 3)

    clock = FakeClock()

    def flaky(request: dict) -> Reply:
        # the second request starts 2.5 s (on the client's clock) in which every
        # connection is dropped
        with lock:
            if outage["until"] is None and len(srv.requests) == 2:
                outage["until"] = clock.now + 2.5
            down = outage["until"] is not None and clock.now < outage["until"]
            return Reply(drop_connection=True) if down else next(good)

    with ScriptedLLM(flaky) as srv:
        # waits of 0.5, 1, 2, 4 s, each x0.5..1.5: at least 3.75 s, more than the outage
        run = Run(tmp_path, srv.base_url, iterations=3, clock=clock, llm_backoff_s=0.5)
        summary = run.go()
        dropped = srv.counters["dropped"]
    failed = _failed(run.calls())
    errors = [(c["iteration"], c["error"]) for c in failed]
    assert summary.status == "finished" and summary.iterations_done == 3, (summary, errors)
    assert dropped >= 2 and len(failed) == dropped, (dropped, errors)
    assert all("connection error" in e for _, e in errors), errors
    assert {it for it, _ in errors} == {2}, errors
    stats = run.ctl.stats
    assert stats.llm_retries == dropped and stats.llm_last_fault == "connection error"
    assert f"LLM: {dropped} retries, last connection error" in status_line(stats)
    # one wait per dropped attempt, each its backoff (0.5 s doubling, x0.5..1.5), and the
    # client asked again as soon as the outage was over: not one wait more
    waits = clock.waits
    assert len(waits) == dropped, (waits, dropped)
    assert all(0.25 * 2**i <= w <= 0.75 * 2**i for i, w in enumerate(waits)), waits
    assert sum(waits[:-1]) < 2.5 <= sum(waits), waits


def test_timeouts_are_recorded(tmp_path):
    with ScriptedLLM.from_list([Reply("too late", delay_s=3.0)], then=GOOD[0]) as srv:
        run = Run(tmp_path, srv.base_url, iterations=1, llm_timeout_s=0.5)
        assert run.go().status == "finished"
    (failed,) = _failed(run.calls())
    assert failed["error"].startswith("attempt 1/5 failed: timeout after 0.5 s")
    assert failed["latency_s"] >= 0.4
    assert run.ctl.stats.llm_last_fault == "timeout"
    assert "LLM: 1 retry, last timeout" in run.screen


def test_unpriced_model_with_a_budget_is_refused_before_the_run(tmp_path):
    with ScriptedLLM.from_list(GOOD) as srv:
        r = evolve("run", toy_problem(tmp_path / "toy"), "--iterations", "2", "--api-base",
                   srv.base_url, "--model", "mystery-model", "--budget-usd", "1",
                   "--runs-dir", tmp_path / "runs", "--no-progress")  # fmt: skip
        asked = srv.counters["chat"]
    assert r.returncode == 2 and asked == 0
    last = r.stderr.strip().splitlines()[-1]
    assert "mystery-model" in last and "--prices" in last and "--budget-usd 1" in last
    assert "Traceback" not in r.stderr


def test_price_requirements():
    require_prices(["gpt-4o", "openai/gpt-4o-mini", "local"], budget_usd=1.0)
    require_prices(["mystery"], budget_usd=None)  # no budget: nothing to protect
    with pytest.raises(UnpricedModel, match=r"for models mystery, other") as e:
        require_prices(["gpt-4o", "mystery", "other", "mystery"], budget_usd=2.0)
    assert "\n" not in str(e.value) and "--prices" in str(e.value)
    assert PriceTable({"mystery": (1.0, 1.0)}).unpriced(["mystery", "gpt-4o"]) == ["gpt-4o"]


def test_retry_after_parsing_and_cap():
    now = 1_000_000.0
    assert parse_retry_after({"retry-after": "7"}, now) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}, now) == 1.5
    assert (
        parse_retry_after({"retry-after": email.utils.formatdate(now + 30, usegmt=True)}, now)
        == 30.0
    )
    assert (
        parse_retry_after({"retry-after": email.utils.formatdate(now - 30, usegmt=True)}, now)
        == 0.0
    )
    assert parse_retry_after({"retry-after": "soon"}, now) is None
    assert parse_retry_after({}, now) is None

    def error(status: int, retry_after: str) -> openai.APIStatusError:
        """The SDK's own exception for an answer the scripted server gave."""
        reply = Reply("no", status=status, headers={"Retry-After": retry_after})
        with ScriptedLLM.from_list([reply]) as srv:
            client = openai.OpenAI(base_url=srv.base_url, api_key="x", max_retries=0)
            try:
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "hi"}]
                )
            except openai.APIStatusError as e:
                return e
            finally:
                client.close()
        raise AssertionError("the scripted error was not raised")

    assert retry_after_of(error(429, "3600")) == MAX_RETRY_AFTER_S
    assert retry_after_of(error(503, "2")) == 2.0
    assert retry_after_of(error(500, "2")) is None  # only 429 and 503 say when to come back
    assert retry_after_of(error(429, "0")) is None  # no wait asked: our backoff
