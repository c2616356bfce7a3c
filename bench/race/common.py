"""What every contestant of the race shares: the run's context, the peers' venvs, the text of
the task, running a peer as a subprocess, and what one run returns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.race.measure import from_eval_log
from bench.race.proxy import BudgetProxy
from evolve.problem.model import Problem

ROOT = Path(__file__).resolve().parents[2]
RACE_DIR = Path(__file__).resolve().parent
# What runs inside the peers' venvs (standard library and the peer only): the scorer their
# evaluators import and LEVI's driver. A folder of its own, so that nothing on that import
# path is named like a peer's package (the adapters here are openevolve.py, shinka.py, levi.py).
PEER_SIDE = RACE_DIR / "peer_side"


@dataclass
class Ctx:
    """One run: a problem, a seed and a budget of LLM calls, for one framework."""

    problem_dir: Path
    problem: Problem
    seed: int
    calls: int  # the budget of answered LLM calls
    work: Path  # this run's scratch folder
    server_port: int  # the shared llama-cpp-python server
    sandbox: str  # evolve's --sandbox, for `evolve run` and every `evolve eval`
    run_timeout_s: float  # the whole run is killed past this
    eval_timeout_s: float  # one `evolve eval`
    max_tokens: int  # reply tokens, the same for every framework (the model's profile)
    seed_train: float  # the seed's train score (`evolve eval`)
    model: str = "local"  # evolve's --model (the peers reach the same server by the proxy)
    data_seed: int | None = None  # every framework's workloads (evolve's --data-seed)
    note: Callable[[str], None] = print

    @property
    def seed_code(self) -> str:
        return self.problem.seed_code


@dataclass
class RunResult:
    """What a run did, in a form every framework shares.

    calls: the answered LLM calls (latency_s, prompt_tokens, completion_tokens), in order.
    items: what the calls yielded, in order: one per candidate the framework evaluated (for
    evolve: per answered call that gave a program), its own evaluation of the seed left out;
    each {hash (normalised code), valid, score (train), clone (rejected as a duplicate)}.
    best_code, best_train: the best program by train score (the seed when nothing beat it).
    """

    framework: str
    calls: list[dict] = field(default_factory=list)
    items: list[dict] = field(default_factory=list)
    best_code: str = ""
    best_train: float | None = None
    wall_s: float = 0.0
    refused: int = 0  # requests past the budget, answered empty by the proxy
    failed: int = 0  # requests the model server answered with an error (not calls)
    evaluations: int | None = None  # candidates evaluated, the seed aside (evolve's tuned ones too)
    agent_evals: int | None = None  # train evaluations inside agent sessions (not candidates)
    exit_code: int | None = 0
    timed_out: bool = False
    error: str = ""
    settings: dict = field(default_factory=dict)
    version: str | None = None


def peer_result(name: str, version: str, ctx: Ctx, proxy, proc: tuple, log: Path,
                eval_log: Path, settings: dict) -> RunResult:
    """A peer's RunResult from its proxy's calls and the race's evaluation log."""
    rc, wall, timed_out = proc
    items, best_code, best_train = from_eval_log(read_eval_log(eval_log), ctx.seed_code, ctx.seed_train)
    out = RunResult(name, calls=list(proxy.calls), items=items, best_code=best_code,
                    best_train=best_train, evaluations=len(items), wall_s=wall, refused=proxy.refused, failed=proxy.failed,
                    exit_code=rc, timed_out=timed_out, settings=settings, version=version)
    if rc != 0:
        out.error = f"{name} exited {rc}: {tail(log, 600)}"
    return out


def task_text(problem: Problem) -> str:
    """The task as each peer is told it (its system message or problem description): the
    problem folder's description, domain notes and known ideas (`hints`), which evolve's own
    prompts show too (one idea per call there; all of them here, as a peer's user would)."""
    ideas = "".join(f"\n- {h.strip()}" for h in problem.hints)
    return (f"You are improving a Python program for: {problem.description}\n\n"
            f"{problem.domain_notes.strip()}\n\n"
            + (f"Known ideas you may try:{ideas}\n\n" if ideas else "")
            + "The program is a whole Python file. Change only the code between the "
            "EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers; keep the rest as it is.")


def peer_env(ctx: Ctx, eval_log: Path) -> dict:
    """The environment of a peer's process: what bench/race/peer_side/scorer.py needs, no real keys."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("OPENAI_", "ANTHROPIC_", "GEMINI_", "OPENROUTER_", "VIRTUAL_ENV"))}
    env.update(
        RACE_EVOLVE_PYTHON=sys.executable,
        RACE_PROBLEM_DIR=str(ctx.problem_dir),
        RACE_SANDBOX=ctx.sandbox,
        RACE_EVAL_LOG=str(eval_log),
        RACE_EVAL_TIMEOUT=str(ctx.eval_timeout_s),
        RACE_DATA_SEED="" if ctx.data_seed is None else str(ctx.data_seed),
        OPENAI_API_KEY="not-needed",
        PYTHONUNBUFFERED="1",
        LITELLM_LOCAL_MODEL_COST_MAP="True",  # LEVI's litellm: no download of its price list
        HF_HUB_OFFLINE="1",
        TOKENIZERS_PARALLELISM="false",
    )
    return env


def run_process(cmd: list[str], cwd: Path, env: dict, timeout_s: float, log: Path) -> tuple[int | None, float, bool]:
    """Run a peer in its own process group, its output to `log`; kill the group past the
    timeout. Returns (exit code, wall seconds, timed out)."""
    t0 = time.monotonic()
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_group(proc)
            rc = proc.poll()
        except BaseException:  # Ctrl-C: leave nothing of ours behind
            _kill_group(proc)
            raise
    return rc, time.monotonic() - t0, timed_out


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=15)
            return
        except subprocess.TimeoutExpired:
            continue


def read_eval_log(path: Path) -> list[dict]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue  # a line cut by a killed worker
    return rows


def tail(path: Path, chars: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return ""


def ensure_venv(venvs_dir: Path, name: str, requirement: str, note: Callable[[str], None]) -> Path:
    """The python of `venvs_dir/name`, a venv holding `requirement` (dist==version); created
    and filled from PyPI on first use, so no peer's dependencies touch evolve's venv."""
    venv = venvs_dir / name
    py = venv / "bin" / "python"
    dist, version = requirement.split("==")
    if not py.exists():
        note(f"creating {venv}")
        venv.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    if installed_version(py, dist) != version:
        note(f"installing {requirement} into {venv} (PyPI)")
        subprocess.run([str(py), "-m", "pip", "install", "-q", requirement], check=True)
    return py


def installed_version(py: Path, dist: str) -> str | None:
    out = subprocess.run([str(py), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
                         capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else None


def race_peer(
    name: str,
    requirement: str,
    ctx: Ctx,
    venvs: Path,
    launch: Callable[[Path, str], tuple[list[str], Path]],
    settings: Callable[[str], dict],
    **proxy_options,
) -> RunResult:
    """One peer's run: its venv, a budget proxy in front of the server, `launch(python,
    api_base) -> (command, cwd)` run to its end, and its result with the settings it ran with
    (`settings(api_base)`)."""
    py = ensure_venv(venvs, name, requirement, ctx.note)
    proxy = BudgetProxy(ctx.server_port, budget=ctx.calls, **proxy_options)
    eval_log, log = ctx.work / "evals.jsonl", ctx.work / f"{name}.log"
    ctx.work.mkdir(parents=True, exist_ok=True)
    try:
        cmd, cwd = launch(py, proxy.base_url)
        ctx.note(f"{name}: " + " ".join(cmd))
        proc = run_process(cmd, cwd, peer_env(ctx, eval_log), ctx.run_timeout_s, log)
    finally:
        proxy.close()
    version = requirement.split("==")[1]
    return peer_result(name, version, ctx, proxy, proc, log, eval_log, settings(proxy.base_url))


def data_seed_flag(seed: int | None) -> list[str]:
    """`evolve run`/`eval`'s flag for the race's shared workloads (none: the public data)."""
    return [] if seed is None else ["--data-seed", str(seed)]
