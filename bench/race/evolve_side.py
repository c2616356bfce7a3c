"""evolve itself in the race: `evolve run` as a user types it, joining the shared server.

Two entrants: `evolve` (single calls, the default proposer) and `evolve-agent`
(`--proposer agent`: each turn of an agent's session is one answered call under the same
--max-calls, so both spend the same budget; the train evaluations it runs inside a session
are counted apart as agent evaluations)."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.race.common import ROOT, Ctx, RunResult, data_seed_flag, run_process, tail
from bench.race.measure import from_archive

NAME = "evolve"
AGENT = "evolve-agent"
# the agent's settings in the race: a session of at most 6 turns with 2 train evaluations
AGENT_FLAGS = ("--proposer", "agent", "--agent-turns", "6", "--agent-evals", "2")


def has_max_calls() -> bool:
    """`evolve run --max-calls` is recent; without it a run is bounded by --iterations N."""
    out = subprocess.run([sys.executable, "-m", "evolve.cli", "run", "--help"],
                         capture_output=True, text=True, cwd=ROOT)
    return "--max-calls" in out.stdout


def command(ctx: Ctx, run_id: str, max_calls: bool, agent: bool = False) -> list[str]:
    budget = (["--max-calls", str(ctx.calls), "--iterations", str(ctx.calls * 4)] if max_calls
              else ["--iterations", str(ctx.calls)])
    return [sys.executable, "-m", "evolve.cli", "run", str(ctx.problem_dir), "--model", ctx.model,
            "--seed", str(ctx.seed), *budget, "--runs-dir", str(ctx.work / "runs"),
            "--run-id", run_id, "--sandbox", ctx.sandbox, "--no-progress",
            *data_seed_flag(ctx.data_seed), *(AGENT_FLAGS if agent else ())]


def run(ctx: Ctx, max_calls: bool = True, agent: bool = False) -> RunResult:
    name = AGENT if agent else NAME
    run_id = f"race-{ctx.problem.name}-s{ctx.seed}"
    cmd = command(ctx, run_id, max_calls, agent)
    ctx.note(f"{name}: " + " ".join(cmd[2:]))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    log = ctx.work / "evolve.log"
    rc, wall, timed_out = run_process(cmd, ROOT, env, ctx.run_timeout_s, log)
    out = RunResult(name, wall_s=wall, exit_code=rc, timed_out=timed_out,
                    settings={"command": " ".join(cmd[2:]), "max_calls_flag": max_calls})
    db = ctx.work / "runs" / "archive.db"
    if not db.exists():
        out.error = f"no archive (exit {rc}): {tail(log)}"
        return out
    got = from_archive(db, run_id)
    out.calls, out.items, out.evaluations = got["calls"], got["items"], got["evaluations"]
    out.best_code, out.best_train = got["best_code"], got["best_train"]
    out.agent_evals = got["agent_evals"] if agent else None  # "-" in a single-call row
    if rc != 0:
        out.error = f"evolve run exited {rc}: {tail(log, 600)}"
    return out
