"""What a run does when its LLM endpoint misbehaves, through the real CLI.

    python bench/llm_faults.py [--iterations 6] [--only outage-60s ...]

Each scenario runs `evolve run` (local sandbox, default retries: 4, backoff 1 s doubling
with jitter) on a toy problem against the scripted OpenAI-compatible server of the tests,
which misbehaves as the scenario says:

- none: every call answers (the baseline of the same run);
- http-500-every-other: every second request gets HTTP 500;
- outage-15s / outage-60s: from the second request on, every connection is dropped for
  15 s / 60 s;
- timeouts: every third request answers after 5 s, past `--llm-timeout 2`;
- 429-retry-after: every other request gets HTTP 429 with `Retry-After: 3`.

For each: the exit code, the run's status and iterations done, the failed attempts the
archive recorded (llm_calls rows without a reply) and their distinct errors, the last
status line shown on screen (`LLM: ...`), and the wall time as a ratio to `none`. Writes
bench/results/llm_faults.json.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from harness import write_result
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

from evolve.testing.scripted_llm import Reply, ScriptedLLM  # noqa: E402
from evolve.testing.toy_problem import toy_problem  # noqa: E402


def _edit(k: int) -> Reply:
    body = f"def f(x):\n    return x + {k} * 0.25\n"
    return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


class Faults:
    """The server's responder: scenario `name` decides each request's fate."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.n = 0
        self.down_until: float | None = None
        self.lock = threading.Lock()

    def __call__(self, request: dict) -> Reply:
        with self.lock:
            self.n += 1
            n, name = self.n, self.name
            good = _edit(n)
            if name == "http-500-every-other" and n % 2 == 0:
                return Reply("scripted outage", status=500)
            if name in ("outage-15s", "outage-60s"):
                if n == 2 and self.down_until is None:
                    self.down_until = time.time() + (15 if name == "outage-15s" else 60)
                if self.down_until is not None and time.time() < self.down_until:
                    return Reply(drop_connection=True)
            if name == "timeouts" and n % 3 == 0:
                return Reply(good.content, delay_s=5.0)
            if name == "429-retry-after" and n % 2 == 0:
                return Reply("slow down", status=429, headers={"Retry-After": "3"})
            return good


def _run(name: str, iterations: int, tmp: Path) -> dict:
    problem = toy_problem(tmp / "toy")
    runs = tmp / "runs"
    env = {**os.environ, "HOME": str(tmp), "OPENAI_API_KEY": "sk-scripted"}
    with ScriptedLLM(Faults(name)) as srv:
        cmd = [
            sys.executable, "-m", "evolve.cli", "run", str(problem), "--iterations", str(iterations),
            "--model", "scripted", "--api-base", srv.base_url, "--runs-dir", str(runs),
            "--sandbox", "local", "--no-progress", "--parallel", "1", "--llm-parallel", "1",
        ]
        if name == "timeouts":
            cmd += ["--llm-timeout", "2"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp, timeout=900)
        wall = time.perf_counter() - t0
    if not (runs / "archive.db").is_file():
        raise SystemExit(f"{name}: evolve run exited {r.returncode}: {r.stderr.strip()[-500:]}")
    run_id = r.stdout.splitlines()[0].strip() if r.stdout else ""
    db = sqlite3.connect(runs / "archive.db")
    (status,) = db.execute("SELECT status FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    (done,) = db.execute(
        "SELECT COUNT(*) FROM programs WHERE run_id = ? AND iteration > 0", (run_id,)
    ).fetchone()
    failed = [e for (e,) in db.execute(
        "SELECT error FROM llm_calls WHERE run_id = ? AND reply IS NULL", (run_id,)
    )]
    db.close()
    shown = [ln.strip() for ln in r.stderr.splitlines() if "LLM:" in ln]
    # "attempt 2/5 failed: HTTP 500: scripted outage; retrying in 0.9 s" -> "HTTP 500: scripted outage"
    kinds = sorted({e.split("failed: ", 1)[-1].split(";")[0][:60] for e in failed if e})
    return {
        "scenario": name,
        "exit": r.returncode,
        "status": status,
        "iterations_done": done,
        "failed_attempts_archived": len(failed),
        "errors": kinds,
        "screen": shown[-1][shown[-1].index("LLM:"):] if shown else "",
        "wall_s": round(wall, 1),
    }


SCENARIOS = ("none", "http-500-every-other", "outage-15s", "outage-60s", "timeouts",
             "429-retry-after")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--only", nargs="*", choices=SCENARIOS)
    args = ap.parse_args()
    names = ["none", *[s for s in (args.only or SCENARIOS) if s != "none"]]
    rows = []
    console = Console(stderr=True)
    for name in names:
        console.print(f"[dim]{name} ...[/dim]")
        with tempfile.TemporaryDirectory(prefix="evolve-llm-faults-") as tmp:
            rows.append(_run(name, args.iterations, Path(tmp)))
    base = rows[0]["wall_s"] or 1.0
    table = Table(title=f"LLM faults: evolve run, {args.iterations} iterations, local sandbox")
    for col in ("scenario", "exit", "run", "iters", "failed attempts archived", "errors",
                "status line", "wall vs none"):
        table.add_column(col)
    for row in rows:
        row["wall_ratio"] = round(row["wall_s"] / base, 2)
        table.add_row(
            row["scenario"], str(row["exit"]), row["status"], str(row["iterations_done"]),
            str(row["failed_attempts_archived"]), "; ".join(row["errors"]) or "-",
            row["screen"] or "-", f"{row['wall_ratio']:.2f}x ({row['wall_s']} s)",
        )
    Console(width=200).print(table)
    write_result("llm_faults", {"iterations": args.iterations, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
