"""A wrong endpoint, key or model is one line before the seed is evaluated, and no run is
left in the archive (issue 42 item 1): each mistake against a real HTTP server."""

from __future__ import annotations

import pytest

import evolve
from evolve.llm.probe import Endpoint, EndpointRefused, probe
from evolve.testing.cli_helpers import archive_json, run_args
from evolve.testing.cli_helpers import evolve as cli
from evolve.testing.scripted_llm import ScriptedLLM
from evolve.testing.toy_problem import toy_problem


def _refused(r, fragment: str, runs) -> None:
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert fragment in lines[-1], r.stderr
    assert "Traceback" not in r.stderr and "seed" not in r.stderr
    assert not (runs / "archive.db").exists() or archive_json(runs, "runs") == []


def test_an_unreachable_endpoint_is_one_line_and_no_run(tmp_path):
    runs = tmp_path / "runs"
    r = cli(*run_args("http://127.0.0.1:1/v1", runs, problem=toy_problem(tmp_path / "toy")))
    _refused(r, "LLM endpoint unreachable: http://127.0.0.1:1/v1 (connection refused)", runs)


def test_a_refused_key_is_an_authentication_error_naming_the_variable(tmp_path):
    runs = tmp_path / "runs"
    with ScriptedLLM(key="sk-right") as llm:
        args = run_args(llm.base_url, runs, problem=toy_problem(tmp_path / "toy"))
        r = cli(*args, extra_env={"OPENAI_API_KEY": "sk-wrong"})
        assert llm.counters["chat"] == 0
    _refused(r, "authentication failed (HTTP 401)", runs)
    assert "set OPENAI_API_KEY to a key it accepts" in r.stderr


def test_a_model_the_endpoint_does_not_serve_is_named_with_those_it_does(tmp_path):
    runs = tmp_path / "runs"
    with ScriptedLLM(models=("qwen-7b", "llama-8b")) as llm:
        r = cli(*run_args(llm.base_url, runs, problem=toy_problem(tmp_path / "toy")))
    _refused(r, "--model scripted: ", runs)
    assert "does not serve it (it lists qwen-7b, llama-8b)" in r.stderr


def test_a_hosted_model_without_a_key_is_refused_before_any_request(tmp_path):
    runs = tmp_path / "runs"
    toy = toy_problem(tmp_path / "toy")
    r = cli("run", toy, "--model", "gpt-4.1-mini", "--runs-dir", runs, "--no-progress")
    _refused(r, "OPENAI_API_KEY is not set", runs)


def test_the_python_api_raises_the_same_line(tmp_path):
    with pytest.raises(evolve.UsageError, match="^LLM endpoint unreachable: "):
        evolve.run(
            toy_problem(tmp_path / "toy"),
            runs_dir=tmp_path / "runs",
            api_base="http://127.0.0.1:1/v1",
            model="scripted",
        )
    assert archive_json(tmp_path / "runs", "runs") == []


def test_a_good_endpoint_is_asked_once_and_the_run_goes_on(tmp_path):
    runs = tmp_path / "runs"
    with ScriptedLLM(key="sk-right") as llm:
        args = run_args(llm.base_url, runs, problem=toy_problem(tmp_path / "toy"), iterations=1)
        r = cli(*args, extra_env={"OPENAI_API_KEY": "sk-right"})
        assert r.returncode == 0, r.stderr
        assert llm.counters["models"] == 1 and llm.counters["chat"] >= 1
    assert archive_json(runs, "runs")[0]["status"] == "finished"


def test_a_server_of_one_model_answers_any_name_so_it_is_a_line_not_a_refusal(tmp_path):
    """llama.cpp's servers list the one model they hold and answer every name with it."""
    runs = tmp_path / "runs"
    with ScriptedLLM(models=("only-one.gguf",)) as llm:
        args = run_args(llm.base_url, runs, problem=toy_problem(tmp_path / "toy"), iterations=1)
        r = cli(*args)
    assert r.returncode == 0, r.stderr
    assert "--model scripted: " in r.stderr and "lists only only-one.gguf; going on" in r.stderr


def test_what_gives_no_verdict_lets_the_run_go_on():
    with ScriptedLLM(models=("a", "b")) as llm:
        root = llm.base_url.removesuffix("/v1")  # no /v1: the models route is a 404
        assert "HTTP 404" in probe(Endpoint(root, None, "OPENAI_API_KEY", ("a",)))[0]
        assert probe(Endpoint(llm.base_url, None, "OPENAI_API_KEY", ("a",))) == []
        # Ollama names `qwen` as `qwen:latest`; LiteLLM lists routes by pattern
        for listed, model in ((("qwen:latest", "x"), "qwen"), (("openai/*", "x"), "openai/o3")):
            llm.models = list(listed)
            assert probe(Endpoint(llm.base_url, None, "OPENAI_API_KEY", (model,))) == []
        llm.models = ["a", "b"]
        with pytest.raises(EndpointRefused, match="^--model c: "):
            probe(Endpoint(llm.base_url, None, "OPENAI_API_KEY", ("c",)))


def test_resume_with_the_endpoint_gone_says_so_and_replays_what_is_stored(tmp_path):
    runs = tmp_path / "runs"
    toy = toy_problem(tmp_path / "toy")
    with ScriptedLLM() as llm:
        r = cli(*run_args(llm.base_url, runs, "--run-id", "r", problem=toy, iterations=2))
        assert r.returncode == 0, r.stderr
    r = cli("resume", "r", "--runs-dir", runs, "--no-progress")
    assert r.returncode == 0, r.stderr
    assert "LLM endpoint unreachable" in r.stderr and "resuming:" in r.stderr
