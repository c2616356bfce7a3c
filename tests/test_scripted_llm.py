"""ScriptedLLM speaks enough of OpenAI's API for the real `openai` SDK, failures included."""

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import openai
import pytest

from evolve.testing.scripted_llm import (
    BINPACK_VARIANTS,
    Reply,
    ScriptedLLM,
    binpack_replies,
    estimate_tokens,
)

ROOT = Path(__file__).resolve().parent.parent
MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}]


def client(llm: ScriptedLLM, **kwargs) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.base_url, api_key="test", **kwargs)


def ask(c: openai.OpenAI, content: str = "hello there", model: str = "scripted"):
    messages = [{"role": "user", "content": content}]
    return c.chat.completions.create(model=model, messages=messages)


def test_content_round_trip_and_usage():
    replies = [Reply("first", prompt_tokens=11, completion_tokens=3), "second answer"]
    with ScriptedLLM.from_list(replies) as llm:
        c = client(llm)
        r = c.chat.completions.create(model="m1", messages=MESSAGES)
        assert r.choices[0].message.content == "first" and r.model == "m1"
        assert (r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens) == (
            11,
            3,
            14,
        )
        r = c.chat.completions.create(model="m1", messages=MESSAGES)
        assert r.choices[0].message.content == "second answer"
        assert r.usage.prompt_tokens == estimate_tokens("be brief" + "hello there") == 5
        assert r.usage.completion_tokens == estimate_tokens("second answer") == 4
        assert ask(c).choices[0].message.content == "first"  # the list cycles
        assert llm.counters["prompt_tokens"] == 11 + 5 + 11


def test_default_responder_echoes_and_models_are_listed():
    with ScriptedLLM(models=["a", "b"]) as llm:
        c = client(llm)
        assert ask(c, "ping").choices[0].message.content == "ping"
        assert [m.id for m in c.models.list()] == ["a", "b"]


def test_responder_sees_the_request():
    def responder(req: dict) -> str:
        return f"{req['model']}:{len(req['messages'])}:{req.get('temperature')}"

    with ScriptedLLM(responder) as llm:
        r = client(llm).chat.completions.create(model="x", messages=MESSAGES, temperature=0.3)
        assert r.choices[0].message.content == "x:2:0.3"


def test_from_list_then():
    with ScriptedLLM.from_list(["a"], then=Reply("rest")) as llm:
        c = client(llm)
        assert [ask(c).choices[0].message.content for _ in range(3)] == ["a", "rest", "rest"]
    with ScriptedLLM.from_list([], then=lambda req: req["model"]) as llm:
        assert ask(client(llm), model="m9").choices[0].message.content == "m9"


@pytest.mark.parametrize(
    "status, error", [(500, openai.InternalServerError), (429, openai.RateLimitError)]
)
def test_error_statuses_surface_as_sdk_errors(status, error):
    with ScriptedLLM.from_list([Reply("scripted failure", status=status)]) as llm:
        with pytest.raises(error) as e:
            ask(client(llm, max_retries=0))
    assert e.value.status_code == status
    assert e.value.body["message"] == "scripted failure"
    assert e.value.body["code"] in ("internal_error", "rate_limit_exceeded")
    if status == 429:
        assert e.value.response.headers["retry-after"] == "0"
    assert llm.counters["error"] == 1


def test_sdk_retries_a_429_then_succeeds():
    with ScriptedLLM.from_list([Reply(status=429)], then="ok") as llm:
        assert ask(client(llm, max_retries=1)).choices[0].message.content == "ok"
        assert len(llm.requests) == 2


def test_delay_beyond_client_timeout_raises_timeout():
    before = set(threading.enumerate())
    with ScriptedLLM.from_list([Reply("late", delay_s=600.0)]) as llm:
        with pytest.raises(openai.APITimeoutError):
            ask(client(llm, max_retries=0, timeout=0.3))
        handlers = [
            t for t in threading.enumerate() if t not in before and "process_request" in t.name
        ]
        assert handlers  # the handler is still sleeping out its delay
    # stop() wakes the sleeping handler: its thread ends instead of sleeping out the 600 s
    for t in handlers:
        t.join(60)  # a guard against hanging the suite, far below the delay
    assert not [t for t in handlers if t.is_alive()]


def test_drop_connection_raises_connection_error():
    with ScriptedLLM.from_list([Reply(drop_connection=True)]) as llm:
        with pytest.raises(openai.APIConnectionError) as e:
            ask(client(llm, max_retries=0))
        assert not isinstance(e.value, openai.APITimeoutError)
        assert llm.counters["dropped"] == 1


def test_streaming_is_refused_with_400():
    with ScriptedLLM() as llm:
        with pytest.raises(openai.BadRequestError) as e:
            client(llm, max_retries=0).chat.completions.create(
                model="m", messages=MESSAGES, stream=True
            )
        assert "stream" in e.value.message
        assert llm.counters["bad_request"] == 1


def test_a_failing_responder_answers_500():
    def responder(req: dict) -> Reply:
        raise RuntimeError("script bug")

    with ScriptedLLM(responder) as llm:
        with pytest.raises(openai.InternalServerError, match="script bug"):
            ask(client(llm, max_retries=0))


def test_requests_are_recorded_in_order_under_concurrency():
    with ScriptedLLM() as llm:
        c = client(llm)
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(lambda i: ask(c, f"q{i}"), range(24)))
        assert sorted(a.choices[0].message.content for a in answers) == sorted(
            f"q{i}" for i in range(24)
        )
        reqs = llm.requests
        assert len(reqs) == 24 and llm.counters["chat"] == llm.counters["ok"] == 24
        assert all(r["model"] == "scripted" and r["messages"][0]["role"] == "user" for r in reqs)
        assert [r["_ts"] for r in reqs] == sorted(r["_ts"] for r in reqs)
        llm.reset()
        assert llm.requests == [] and llm.counters["chat"] == 0


def test_binpack_replies_are_fenced_evolve_blocks():
    replies = binpack_replies()
    assert len(replies) == len(BINPACK_VARIANTS) >= 5
    assert "return -(bins - item)\n" in replies[0].content  # best fit comes first
    for r in replies:
        assert "```python\n# EVOLVE-BLOCK-START\ndef priority(" in r.content
        assert r.content.rstrip().endswith("# EVOLVE-BLOCK-END\n```")


def _serve(*args: str) -> tuple[subprocess.Popen, str]:
    cmd = [sys.executable, "-m", "evolve.testing.scripted_llm", "--port", "0", *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    return proc, line.rsplit(" ", 1)[-1].strip()


@pytest.mark.parametrize("mode", ["--improve-binpack", "--replies"])
def test_command_line(tmp_path, mode):
    if mode == "--replies":
        path = tmp_path / "replies.json"
        path.write_text(
            json.dumps([{"content": "one"}, {"content": "two", "completion_tokens": 9}])
        )
        args, expected = [mode, str(path)], ["one", "two", "one"]
    else:
        args, expected = [mode], [r.content for r in binpack_replies()[:3]]
    proc, url = _serve(*args)
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1")
        c = openai.OpenAI(base_url=url, api_key="test", max_retries=0, timeout=10)
        assert [ask(c).choices[0].message.content for _ in expected] == expected
    finally:
        proc.terminate()
        proc.wait(timeout=10)
