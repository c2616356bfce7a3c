"""The LLM layer against a real HTTP server: retries, timeouts, accounting."""

import asyncio

import pytest

from evolve.llm import LLMClient, LLMConfig, LLMError, ModelSpec
from evolve.llm.pricing import PriceTable
from evolve.testing.scripted_llm import Reply, ScriptedLLM

MSG = [{"role": "user", "content": "hi"}]


def _client(url, **kw):
    cfg = LLMConfig(
        models=(ModelSpec("gpt-4o-mini"),),
        api_base=url,
        timeout_s=kw.pop("timeout_s", 5.0),
        max_retries=kw.pop("max_retries", 3),
        backoff_s=0.01,
        **kw,
    )
    return LLMClient(cfg, PriceTable.load(), seed=0)


def _run(coro):
    return asyncio.run(coro)


async def _complete(client, model="gpt-4o-mini"):
    try:
        return await client.complete(MSG, model)
    finally:
        await client.close()


def test_usage_and_cost_are_counted():
    with ScriptedLLM.from_list([Reply("hello", prompt_tokens=1000, completion_tokens=2000)]) as srv:
        r = _run(_complete(_client(srv.base_url)))
    assert r.content == "hello" and r.prompt_tokens == 1000 and r.completion_tokens == 2000
    assert r.cost_usd == pytest.approx((1000 * 0.15 + 2000 * 0.60) / 1e6)


def test_retries_on_429_500_and_dropped_connections_then_succeeds():
    script = [
        Reply("busy", status=429),
        Reply("boom", status=500),
        Reply(drop_connection=True),
        Reply("ok"),
    ]
    with ScriptedLLM.from_list(script, then="late") as srv:
        r = _run(_complete(_client(srv.base_url)))
        assert srv.counters["chat"] == 4
    assert r.content == "ok" and r.attempts == 4


def test_timeout_is_retried_and_gives_up_with_one_line_error():
    # the reply would come after 10 minutes: an error at all means the client's timeout
    # fired (stop() wakes the sleeping handlers), on both attempts
    with ScriptedLLM.from_list([Reply("slow", delay_s=600.0)]) as srv:
        with pytest.raises(LLMError) as e:
            _run(_complete(_client(srv.base_url, timeout_s=0.3, max_retries=1)))
        assert srv.counters["chat"] == 2 and srv.counters["ok"] == 0
    assert (e.value.fault, e.value.attempts) == ("timeout", 2)
    assert "failed after 2 attempts" in str(e.value) and "timeout after 0.3 s" in str(e.value)
    assert "\n" not in str(e.value)


def test_client_errors_are_not_retried():
    with ScriptedLLM.from_list([Reply("bad key", status=401)], then="never") as srv:
        with pytest.raises(LLMError, match="HTTP 401"):
            _run(_complete(_client(srv.base_url)))
        assert srv.counters["chat"] == 1


def test_unreachable_endpoint():
    with pytest.raises(LLMError, match="127.0.0.1:9"):
        _run(_complete(_client("http://127.0.0.1:9/v1", max_retries=1)))


def test_env_base_url_and_model_weights(monkeypatch):
    with ScriptedLLM.from_list(["x"]) as srv:
        monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
        cfg = LLMConfig(models=(ModelSpec("a", 3.0), ModelSpec("b", 1.0)), backoff_s=0.01)
        c = LLMClient(cfg, PriceTable.load(), seed=3)
        picks = [c.pick_model() for _ in range(400)]
        r = _run(_complete(c, model="b"))
        assert srv.requests[-1]["model"] == "b"
    assert r.content == "x"
    assert 250 < picks.count("a") < 350


def test_model_spec_parse():
    assert ModelSpec.parse("gpt-4o:2.5") == ModelSpec("gpt-4o", 2.5)
    assert ModelSpec.parse("local:/x/y.gguf") == ModelSpec("local:/x/y.gguf")
    assert ModelSpec.parse("qwen") == ModelSpec("qwen")
    with pytest.raises(ValueError, match="weight must be > 0"):
        ModelSpec.parse("m:0")


def test_price_table_file(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text("mine = {input = 1.0, output = 2.0}\n")
    assert PriceTable.load(f).cost("mine", 1_000_000, 1_000_000) == pytest.approx(3.0)
    f.write_text("mine = {input = 1.0}\n")
    with pytest.raises(ValueError, match="'mine' must have 'input' and 'output'"):
        PriceTable.load(f)
