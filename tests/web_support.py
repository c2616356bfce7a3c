"""Archives for the web view's tests: one made by a real run, one hostile run written
through the Archive API, and the real `evolve ui` started as a subprocess."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

from evolve.archive import Archive, ProgramRow
from tests.cli_helpers import BINPACK, ROOT, env, evolve, run_args
from tests.scripted_llm import ScriptedLLM, binpack_replies

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
            HOSTILE_RUN,
            1,
            0,
            seed.program_id,
            None,
            "block",
            f"model{IMG}",
            [{"role": "system", "content": SCRIPT}, {"role": "user", "content": IMG}],
            f"reply {SCRIPT}",
            None,
            10,
            20,
            0.001,
            0.5,
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
