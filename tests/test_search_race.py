"""bench/search_race.py's parts that need no model and no peer: the budget proxy, the
scorer's marker check, the yield counts, what an agent's run counts and the generated peer
settings."""

from __future__ import annotations

import json
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench" / "race" / "peer_side"))

import scorer  # noqa: E402

from bench.race import levi, measure, openevolve, shinka  # noqa: E402
from bench.race.common import Ctx  # noqa: E402
from bench.race.proxy import BudgetProxy  # noqa: E402
from evolve.problem.load import load_problem  # noqa: E402
from evolve.testing.scripted_llm import ScriptedLLM  # noqa: E402
from tests.test_agent import block, run, toy  # noqa: E402


class _Upstream(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status, reply = (
            (400, {"error": "too long"})
            if body.get("too_long")
            else (
                200,
                {
                    "choices": [{"message": {"content": "x = 1"}}],
                    "usage": {"prompt_tokens": 7, "completion_tokens": 3},
                },
            )
        )
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def upstream():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()


def _chat(proxy: BudgetProxy, too_long: bool = False) -> tuple[int, str]:
    req = urllib.request.Request(
        f"{proxy.base_url}/chat/completions",
        data=json.dumps({"model": "local", "too_long": too_long}).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req) as r:
            return r.status, json.loads(r.read())["choices"][0]["message"]["content"]
    except urllib.error.HTTPError as e:
        return e.code, ""


def test_proxy_counts_answered_calls_and_answers_empty_past_the_budget(upstream):
    proxy = BudgetProxy(upstream, budget=2)
    try:
        got = [_chat(proxy), _chat(proxy, too_long=True), _chat(proxy), _chat(proxy)]
    finally:
        proxy.close()
    assert got == [(200, "x = 1"), (400, ""), (200, "x = 1"), (200, "")]
    assert len(proxy.calls) == 2 and proxy.failed == 1 and proxy.refused == 1
    assert proxy.calls[0]["prompt_tokens"] == 7 and proxy.calls[0]["completion_tokens"] == 3


def test_proxy_can_turn_a_rejected_prompt_into_an_empty_reply(upstream):
    proxy = BudgetProxy(upstream, budget=1, empty_on_client_error=True)
    try:
        assert _chat(proxy, too_long=True) == (200, "")
        assert _chat(proxy) == (200, "x = 1")
    finally:
        proxy.close()
    assert len(proxy.calls) == 1 and proxy.failed == 1 and proxy.refused == 0


def test_unpaired_markers_are_dropped_before_scoring():
    ok = "a = 1\n# EVOLVE-BLOCK-START\nb = 2\n# EVOLVE-BLOCK-END\n"
    assert scorer.markers_pair(ok) and scorer.markers_pair("a = 1\n")
    broken = "a = 1\n# EVOLVE-BLOCK-START\nb = 2\n"
    assert not scorer.markers_pair(broken)
    assert not scorer.markers_pair("# EVOLVE-BLOCK-END\n# EVOLVE-BLOCK-START\n")
    assert scorer.without_markers(broken) == "a = 1\nb = 2\n"


def test_yields_count_new_code_and_new_behaviour_against_the_seed():
    items = [
        {"hash": "seed", "valid": True, "score": 1.0},  # a clone of the seed
        {"hash": "a", "valid": True, "score": 1.0},  # new code, the seed's behaviour
        {"hash": "b", "valid": True, "score": 2.0},  # new code, new behaviour
        {"hash": "b", "valid": True, "score": 2.0},  # evaluated again
        {"hash": "c", "valid": False, "score": None},  # new, invalid
        {"hash": "d", "valid": False, "score": None, "clone": True},  # rejected as a clone
    ]
    assert measure.yields(items, "seed", 1.0) == {
        "new_programs": 3,
        "behaviourally_new": 1,
        "valid": 4,
    }


def test_an_agents_turns_are_calls_and_its_evaluations_are_counted_apart(tmp_path):
    script = [
        "Try five.\n" + block("return x + 5") + "ACTION: evaluate",
        "Seven then.\n" + block("return x + 7") + "ACTION: submit",
    ]
    with ScriptedLLM.from_list(script, then="ACTION: submit") as srv:
        run(toy(tmp_path), srv, tmp_path, run_id="race-toy-s0")
    got = measure.from_archive(tmp_path / "runs" / "archive.db", "race-toy-s0")
    assert len(got["calls"]) == 2 and got["agent_evals"] == 1 and got["evaluations"] == 1
    # the session's program belongs to its last turn: one valid program for two calls
    assert [it["valid"] for it in got["items"]] == [False, True]
    assert got["best_train"] == 0.0 and "return x + 7" in got["best_code"]


def _ctx(tmp_path: Path, calls: int = 30) -> Ctx:
    root = ROOT / "problems" / "binpack"
    return Ctx(
        root,
        load_problem(root),
        seed=3,
        calls=calls,
        work=tmp_path,
        server_port=1,
        sandbox="local",
        run_timeout_s=60,
        eval_timeout_s=60,
        max_tokens=1024,
        seed_train=-3.9,
    )


def test_peer_settings_keep_the_budget_and_the_seed(tmp_path):
    ctx = _ctx(tmp_path)
    oe = openevolve.config(ctx, "http://proxy/v1")
    assert oe["max_iterations"] == 30 and oe["llm"]["retries"] == 0
    assert oe["diff_based_evolution"] is False and oe["database"]["random_seed"] == 3
    sh = shinka.config(ctx, "http://proxy/v1")
    assert sh["evo_config"]["llm_models"] == ["local/local@http://proxy/v1"]
    assert sh["evo_config"]["embedding_model"] is None
    # every peer is told the folder's known ideas, as evolve's prompts show them
    for hint in ctx.problem.hints:
        assert hint in oe["prompt"]["system_message"] and hint in sh["evo_config"]["task_sys_msg"]
    folder = shinka.prepare(ctx, "http://proxy/v1")
    assert (folder / "initial.py").read_text() == (
        ROOT / "problems" / "binpack" / "seed.py"
    ).read_text()


def test_levi_gets_its_default_initialisation_at_its_published_budget():
    assert levi.init_config(750) == {"n_diverse_seeds": 4, "n_variants_per_seed": 20}
    small = levi.init_config(30)
    assert small["n_diverse_seeds"] * (1 + small["n_variants_per_seed"]) <= 30 * 0.2
    seed = (ROOT / "problems" / "binpack" / "seed.py").read_text()
    assert (
        levi.function_signature(seed)
        == "def priority(item: float, bins: np.ndarray) -> np.ndarray:"
    )
