"""Archives for the web view's tests: one made by a real run, one hostile run written
through the Archive API, and the real `evolve ui` started as a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from evolve.archive import Archive, LlmCall, ProgramRow
from evolve.testing.cli_helpers import BINPACK, ROOT, env, evolve, run_args
from evolve.testing.scripted_llm import ScriptedLLM, binpack_replies

# What a candidate or a model might write to break out of the page.
SCRIPT = "</textarea><script>window.__pwned = 1</script>"
IMG = '<img src=x onerror="window.__pwned = 2">'
HOSTILE_RUN = "hostile-run"


def scripted_run(runs_dir: Path, iterations: int = 8) -> str:
    """A real run on binpack driven by the scripted model; its run id."""
    with ScriptedLLM.from_list(binpack_replies()) as srv:
        r = evolve(*run_args(srv.base_url, runs_dir, iterations=iterations), timeout=600)
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()[0].strip()


def hostile_run(runs_dir: Path) -> dict[str, str]:
    """A finished run whose code, artifacts, prompt and reply all try to inject HTML."""
    a = Archive(runs_dir)
    try:
        lease = a.claim(HOSTILE_RUN)
        a.create_run(HOSTILE_RUN, "binpack", str(BINPACK), {}, 2)
        seed = ProgramRow(
            f"{HOSTILE_RUN}:0",
            HOSTILE_RUN,
            "binpack",
            0,
            0,
            "ok",
            kind="seed",
            code=f"# {SCRIPT}\ndef priority(item, bins):\n    return bins\n",
            score=-5.0,
            metrics={IMG: 1.0},
        )
        a.insert_program(seed)
        call = a.insert_llm_call(
            LlmCall(
                run_id=HOSTILE_RUN,
                iteration=1,
                island=0,
                parent_id=seed.program_id,
                edit_format="block",
                model=f"model{IMG}",
                prompt=[{"role": "system", "content": SCRIPT}, {"role": "user", "content": IMG}],
                reply=f"reply {SCRIPT}",
                prompt_tokens=10,
                completion_tokens=20,
                cost_usd=0.001,
                latency_s=0.5,
            )
        )
        child = ProgramRow(
            f"{HOSTILE_RUN}:1",
            HOSTILE_RUN,
            "binpack",
            1,
            0,
            "runtime_error",
            parent_id=seed.program_id,
            code=f"def priority(item, bins):\n    '{SCRIPT}'\n",
            artifacts={"stderr": f"Traceback: {IMG}", IMG: SCRIPT},
            llm_call_id=call,
        )
        a.insert_program(child)
        a.set_run_status(HOSTILE_RUN, "finished", f"done {SCRIPT}")
        lease.release()
    finally:
        a.close()
    return {"seed": f"{HOSTILE_RUN}:0", "child": f"{HOSTILE_RUN}:1"}


SEARCH_RUN = "search-run"
# What a model might write in a meta-note or a rejected reply: HTML for the page and an
# escape sequence (a window title) for the terminal.
ESC = "\x1b]0;pwned\x07"
NOTE = f"Keep the best-fit rule.\n{SCRIPT}\n{IMG} {ESC}"
REJECTED_REPLY = f"the same program again {SCRIPT} {IMG} {ESC}"


def search_run(runs_dir: Path) -> dict[str, str]:
    """A finished run with what the search records (schema 4): a reply rejected as a repeat
    then a resample (iteration 1, which fails), a repair of it (2), a child of the repair
    better than it (3), a failed attempt, a meta-note and a stagnation decision; two models.
    Its meta-note and rejected reply try to inject HTML and drive a terminal."""
    a = Archive(runs_dir)
    run = SEARCH_RUN
    ids = {k: f"{run}:{i}" for i, k in enumerate(("seed", "failed", "repair", "improved"))}
    code = "def priority(item, bins):\n    return bins\n"

    def call(it, parent, fmt, model, reply, purpose, temperature, decision, error=None):
        return a.insert_llm_call(LlmCall(
            run_id=run, iteration=it, island=0, parent_id=parent, edit_format=fmt, model=model,
            prompt=[{"role": "user", "content": "improve it"}], reply=reply, error=error,
            prompt_tokens=100, completion_tokens=50, cost_usd=0.001, latency_s=0.5, purpose=purpose,
            temperature=temperature, decision=decision,
        ))  # fmt: skip

    def program(key, it, status, parent, call_id, model, score=None, kind="mutation"):
        a.insert_program(
            ProgramRow(ids[key], run, "binpack", it, 0, status, code=code + f"# {it}\n",
                       parent_id=parent, kind=kind, model=model, llm_call_id=call_id,
                       score=score, artifacts={"stderr": "Traceback: boom"} if score is None else {})
        )  # fmt: skip

    try:
        lease = a.claim(run)
        a.create_run(run, "binpack", str(BINPACK), {}, 3)
        a.insert_program(
            ProgramRow(ids["seed"], run, "binpack", 0, 0, "ok", kind="seed", code=code, score=1.0)
        )
        ucb = "UCB 0.812 (mean reward 0.300 over 4 calls)"
        rejected = call(1, ids["seed"], "diff", "model-a", REJECTED_REPLY, "mutation", 0.7, ucb)
        a.reject_call(rejected, "rejected_duplicate")
        c = call(1, ids["seed"], "diff", "model-a", "a new idea", "resample", 1.0, ucb)
        program("failed", 1, "runtime_error", ids["seed"], c, "model-a")
        burst = "stagnation burst on model-b (2 calls left)"
        c = call(2, ids["failed"], "repair", "model-b", "fixed", "repair", 0.7, burst)
        program("repair", 2, "ok", ids["failed"], c, "model-b", score=2.0, kind="repair")
        call(3, ids["repair"], "diff", "model-a", None, "mutation", 0.7, ucb, error="HTTP 500")
        c = call(3, ids["repair"], "diff", "model-b", "better", "mutation", 0.7, burst)
        program("improved", 3, "ok", ids["repair"], c, "model-b", score=3.0)
        meta = call(3, None, "meta", "model-a", "notes", "meta", 0.7, "the only model")
        a.add_meta_note(run, 4, meta, NOTE)
        detail = {"model": "model-b", "calls": 2, "island": 0, "from": ids["repair"], "after": 2}
        a.add_decision(run, 2, "stagnation", detail)
        a.set_run_status(run, "finished", "iterations done")
        lease.release()
    finally:
        a.close()
    return ids


class UiServer:
    """`evolve ui` in a subprocess on a free loopback port, as a user starts it."""

    def __init__(self, runs_dir: Path, *extra: str):
        self.args = ["ui", "--runs-dir", str(runs_dir), "--port", "0", "--no-baselines", *extra]

    def __enter__(self) -> UiServer:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "evolve.cli", *self.args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env(),
            cwd=ROOT,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        m = re.search(r"(http://127\.0\.0\.1:\d+)/", line)
        assert m, (line, self.proc.stderr.read() if self.proc.poll() is not None else "")
        self.url = m.group(1)
        self._wait_listening()
        return self

    def _wait_listening(self) -> None:
        import urllib.request

        for _ in range(200):
            try:
                urllib.request.urlopen(self.url + "/api/problems", timeout=5).read()
                return
            except OSError:
                time.sleep(0.05)
        raise AssertionError("evolve ui did not start listening")

    def __exit__(self, *exc) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
