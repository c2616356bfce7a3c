"""An endpoint's answer is untrusted input: each bad answer of the scripted server's FAULTS
(not JSON, HTML, wrong types, bad usage, invalid Unicode, over the reply cap) is a failed
attempt, recorded with its reason and retried like a transport error, and the run goes on
to finish its iterations; spend is never negative, and no bad answer is stored whole.

Runs of the toy problem go through the real controller, local sandbox and `openai` SDK
against evolve/testing/scripted_llm.py (Run of tests/test_llm_faults.py); one run of the command
line checks the same with `evolve run` and --budget-usd.
"""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from evolve.llm import LLMClient, LLMConfig, LLMError, ModelSpec
from evolve.llm.answer import BadAnswer, parse_completion, read_body
from evolve.llm.pricing import PriceTable
from evolve.testing.cli_helpers import evolve
from evolve.testing.scripted_llm import FAULTS, Reply, ScriptedLLM
from evolve.testing.toy_problem import toy_problem
from tests.test_llm_faults import GOOD, Run, _failed

# What each fault's recorded reason says (the archive's llm_calls.error).
REASONS = {
    "not_json": "body is not JSON (application/json: Unterminated string",
    "html": "body is not JSON (text/html",
    "choices_str": "`choices` is a JSON string",
    "choices_empty": "`choices` is an empty JSON array",
    "message_list": "`choices[0].message` is a JSON array",
    "content_number": "`choices[0].message.content` is a JSON number",
    "body_list": "body is a JSON array, not a completion object",
    "error_200": "an error with status 200: 'quota exceeded'",
    "usage_str": "`usage.prompt_tokens` is a JSON string",
    "usage_negative": "`usage.prompt_tokens` is -1000000, expected 0 to",
    "usage_absurd": "`usage.prompt_tokens` is 1000000000000000, expected 0 to",
    "usage_nan": "`usage.prompt_tokens` is a JSON number ('NaN')",
    "lone_surrogate": "the reply's text is not valid Unicode (a lone surrogate U+D800",
    "not_utf8": "body is not UTF-8",
    "huge": "reply of 20,971,846 bytes is over the 262,144-byte reply cap",
}


def test_every_fault_has_its_reason():
    assert set(REASONS) == set(FAULTS)


@pytest.mark.parametrize("name", sorted(FAULTS))
def test_a_bad_answer_is_a_retried_failed_call_and_the_run_goes_on(tmp_path, name):
    script = [GOOD[0], FAULTS[name], FAULTS[name]]  # the second call meets it twice
    with ScriptedLLM.from_list(script, then=GOOD[1]) as srv:
        run = Run(tmp_path, srv.base_url, iterations=2, llm_retries=3)
        summary = run.go()
        asked = srv.counters["chat"]
    assert summary.status == "finished" and summary.iterations_done == 2, summary
    assert asked == 4
    calls = run.calls()
    failed = _failed(calls)
    assert [c["iteration"] for c in failed] == [2, 2]
    for k, c in enumerate(failed, 1):
        assert c["error"].startswith(f"attempt {k}/4 failed: bad answer: {REASONS[name]}"), c[
            "error"
        ]
        assert "retrying in" in c["error"] and "\n" not in c["error"]
        assert len(c["error"]) < 500 and c["cost_usd"] == 0 and c["prompt_tokens"] == 0
    assert len(calls) - len(failed) == 2  # the two answers, stored as answered
    stats = run.ctl.stats
    assert (stats.llm_retries, stats.llm_failed, stats.llm_last_fault) == (2, 0, "bad answer")
    assert stats.cost_usd >= 0
    # nothing of a bad answer is kept but its reason: the archive stays small
    assert run.archive.path.stat().st_size < 2_000_000
    assert run.archive.unconsumed_replies("r") == []


def test_an_endpoint_that_only_answers_badly_fails_each_call_and_the_run_goes_on(tmp_path):
    script = [GOOD[0], FAULTS["html"], FAULTS["html"], FAULTS["choices_str"], FAULTS["choices_str"]]
    with ScriptedLLM.from_list(script, then=GOOD[1]) as srv:
        run = Run(tmp_path, srv.base_url, iterations=3, llm_retries=1)
        summary = run.go()
    assert summary.status == "finished" and summary.iterations_done == 3, summary
    failed = _failed(run.calls())
    assert len(failed) == 4 and run.ctl.stats.llm_failed == 2
    assert "failed after 2 attempts" in failed[1]["error"] and "bad answer" in failed[1]["error"]
    assert "LLM call for iteration 2 failed" in run.screen


def _client(url: str, **kw) -> LLMClient:
    cfg = LLMConfig(models=(ModelSpec("gpt-4o-mini"),), api_base=url, backoff_s=0.01, **kw)
    return LLMClient(cfg, PriceTable.load())


def _ask(client: LLMClient):
    async def go():
        try:
            return await client.complete([{"role": "user", "content": "hi"}], "gpt-4o-mini")
        finally:
            await client.close()

    return asyncio.run(go())


def test_the_reply_cap_is_a_setting_and_an_answer_within_it_is_whole():
    text = "y" * 50_000
    with ScriptedLLM.from_list([Reply(text)]) as srv:
        assert _ask(_client(srv.base_url)).content == text  # the default, 256 KB
    with ScriptedLLM.from_list([Reply(text)]) as srv:
        with pytest.raises(LLMError) as e:
            _ask(_client(srv.base_url, max_retries=1, max_reply_bytes=10_000))
        assert srv.counters["chat"] == 2
    assert e.value.fault == "bad answer" and "10,000-byte reply cap" in str(e.value)


def test_a_trickling_answer_times_out_as_a_whole():
    # headers at once, then the body a byte every 0.1 s: each read is quicker than the
    # timeout, the whole (~300 bytes, 30 s) is not
    with ScriptedLLM.from_list([Reply("late", trickle_s=0.1)]) as srv:
        with pytest.raises(LLMError) as e:
            _ask(_client(srv.base_url, max_retries=0, timeout_s=1.0))
    assert e.value.fault == "timeout" and "SlowAnswer: timeout after 1 s" in str(e.value)


def test_a_body_without_its_length_is_read_up_to_the_cap_only():
    read = []

    async def chunks():
        for _ in range(1000):  # 64 MB if it were all read
            read.append(1)
            yield b"z" * 65536

    async def go():
        return await read_body(chunks(), None, 256 * 1024)

    with pytest.raises(BadAnswer, match="over the 262,144-byte reply cap"):
        asyncio.run(go())
    assert len(read) == 5  # the chunk that passed the cap was the last one read


def test_negative_and_absurd_usage_never_counts_as_spend():
    assert PriceTable.load().cost("gpt-4o-mini", -(10**9), -(10**9)) == 0.0
    for name in ("usage_negative", "usage_absurd", "usage_str"):
        with pytest.raises(BadAnswer):
            parse_completion(_body(FAULTS[name]))
    ok = parse_completion(b'{"choices": [{"message": {"content": null}}]}')
    assert (ok.content, ok.prompt_tokens, ok.completion_tokens) == ("", 0, 0)  # no usage: 0


def _body(reply: Reply) -> bytes:
    """The body the scripted server sends for `reply` (its usage faults only)."""
    import json

    usage = reply.usage or {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
    }
    return json.dumps(
        {"choices": [{"message": {"content": reply.content}}], "usage": usage}
    ).encode()


def test_negative_usage_does_not_defeat_the_budget(tmp_path):
    # each good answer costs $0.15 (1M prompt tokens of gpt-4o-mini); the bad ones claim
    # -$0.75 each and would keep the spend under the budget for ever if they counted
    good = [Reply(g.content, prompt_tokens=1_000_000, completion_tokens=0) for g in GOOD[:8]]
    script = [x for g in good for x in (FAULTS["usage_negative"], g)]
    runs = tmp_path / "runs"
    with ScriptedLLM.from_list(script) as srv:
        r = evolve("run", toy_problem(tmp_path / "toy"), "--iterations", "8", "--api-base", srv.base_url,
                   "--model", "gpt-4o-mini", "--budget-usd", "0.25", "--tune-evals", "0", "--llm-parallel", "1",
                   "--parallel", "1", "--sandbox", "local", "--llm-backoff", "0.01", "--runs-dir", runs,
                   "--no-progress")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "Traceback" not in r.stderr
    db = sqlite3.connect(runs / "archive.db")
    ((status, reason),) = db.execute("SELECT status, stop_reason FROM runs").fetchall()
    costs = [c for (c,) in db.execute("SELECT cost_usd FROM llm_calls ORDER BY call_id")]
    errors = [e for (e,) in db.execute("SELECT error FROM llm_calls WHERE error IS NOT NULL")]
    db.close()
    assert "budget" in (reason or ""), (status, reason)
    assert all(c >= 0 for c in costs) and 0.25 <= sum(costs) <= 0.45, costs
    assert errors and all("bad answer: `usage.prompt_tokens` is -1000000" in e for e in errors)
