"""Run the real `evolve` CLI in a subprocess, as a user would."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BINPACK = ROOT / "problems" / "binpack"
OPENEVOLVE_FIXTURE = ROOT / "tests" / "fixtures" / "openevolve_binpack"


def block(body: str, note: str = "Here is my idea.", path: str | None = None) -> str:
    """A reply rewriting binpack's EVOLVE-BLOCK with `body`; `path`: the file of a program of
    several files whose block it rewrites, named on a line above the code."""
    named = f"{path}\n" if path else ""
    return f"{note}\n\n{named}```python\n# EVOLVE-BLOCK-START\n{body.strip()}\n# EVOLVE-BLOCK-END\n```\n"


def env(**extra: str) -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVOLVE_"))}
    e.update({"PYTHONUNBUFFERED": "1", **extra})
    return e


def evolve(
    *args: str, timeout: float = 240, extra_env: dict | None = None
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evolve.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env(**(extra_env or {})),
        cwd=ROOT,
    )


def popen(
    *args: str, extra_env: dict | None = None, ignore_sigint: bool = False
) -> subprocess.Popen:
    """`evolve ARGS` in the background; `ignore_sigint`: started with SIGINT ignored, as a
    non-interactive shell starts a background job (`evolve run ... &` in a script)."""
    cmd = [sys.executable, "-m", "evolve.cli", *map(str, args)]
    if ignore_sigint:
        ignoring = (
            "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "os.execv(sys.argv[1], sys.argv[1:])"
        )
        cmd = [sys.executable, "-c", ignoring, *cmd]
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env(**(extra_env or {})),
        cwd=ROOT,
    )


def run_args(
    url: str, runs_dir: Path, *extra: str, problem: Path = BINPACK, iterations: int = 6
) -> list[str]:
    return [
        "run",
        str(problem),
        "--iterations",
        str(iterations),
        "--api-base",
        url,
        "--model",
        "scripted",
        "--runs-dir",
        str(runs_dir),
        "--no-progress",
        "--llm-backoff",
        "0.05",
        *extra,
    ]


def archive_json(runs_dir: Path, *args: str):
    r = evolve("archive", *args, "--json", "--runs-dir", str(runs_dir))
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def last_json(r: subprocess.CompletedProcess) -> dict:
    """The last line of `evolve eval --json`'s output that is JSON (lines before it: notices)."""
    for line in reversed(r.stdout.strip().splitlines()):
        try:
            return json.loads(line)
        except ValueError:
            continue
    raise AssertionError(f"no JSON from evolve eval (exit {r.returncode}): {r.stderr[-2000:]}")
