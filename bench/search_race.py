"""A race of evolve against its peers at an equal number of LLM calls.

The same problems, the same model (one llama-cpp-python server, shared) and the same budget of
N answered LLM calls per run, for:

  evolve        `evolve run PROBLEM --model local --seed S --max-calls N --iterations 4N`
  evolve-agent  the same with `--proposer agent --agent-turns 6 --agent-evals 2`: each turn
                is one of the N calls (bench/race/evolve_side.py)
  openevolve  OpenEvolve 0.4.1 (bench/race/openevolve.py)
  shinka      ShinkaEvolve 0.0.7 (bench/race/shinka.py)
  levi        LEVI 0.1.1 (bench/race/levi.py)

Each peer is installed from PyPI into its own venv under --venvs-dir on first use, is given
the problem's seed file unchanged as its initial program, scores candidates with our own
sandboxed `evolve eval PROBLEM CANDIDATE --json` (bench/race/peer_side/scorer.py) and reaches the model
through a proxy that counts every call and refuses those past N (bench/race/proxy.py). Each
framework's best program by train score is then scored held out (`evolve eval --split test`)
and normalised: 0 = the seed's held-out score, 100 = the folder's best baseline's
(evolve.benchmark.normalise). bench/README.md explains the columns.

    python bench/search_race.py binpack llm_serving txn_scheduling --calls 30 --seeds 3
        [--frameworks evolve evolve-agent openevolve shinka levi] [--model local] [--venvs-dir DIR]
        [--sandbox local] [--work DIR] [--out bench/results/search_race.json]
    python bench/search_race.py --table bench/results/search_race.json [MORE.json ...]

Results: bench/results/search_race.json (every run: its calls, yields, scores, settings and
best program) and the table on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the bench.race package

from harness import result_path  # noqa: E402

from bench.race import evolve_side, levi, openevolve, report, shinka  # noqa: E402
from bench.race.common import Ctx, RunResult  # noqa: E402
from evolve.benchmark.normalise import references  # noqa: E402
from evolve.llm import local_model as lm  # noqa: E402
from evolve.llm.local_server import default_threads  # noqa: E402
from evolve.llm.profiles import is_local, profile_for  # noqa: E402
from evolve.problem import data_seed  # noqa: E402
from evolve.problem.baselines import scored  # noqa: E402
from evolve.problem.load import load_problem  # noqa: E402

PEERS = {"openevolve": openevolve, "shinka": shinka, "levi": levi}
FRAMEWORKS = ("evolve", "evolve-agent", *PEERS)
RESULTS = result_path("search_race")
DEFAULT_VENVS = "/tmp/bench-venvs"


def note(msg: str) -> None:
    print(f"[race] {msg}", file=sys.stderr, flush=True)


def problem_dir(name: str) -> Path:
    p = Path(name)
    if not p.is_dir():
        p = ROOT / "problems" / name
    if not (p / "problem.toml").exists():
        raise SystemExit(f"not a native problem folder (no problem.toml): {name}")
    return p.resolve()


def seed_train(root: Path, problem, sandbox: str, data_seed: int) -> float:
    seed_file = Path(problem.seed_path) if problem.seed_path else root / problem.entry
    got = scored(root, seed_file, sandbox, role="seed", data_seed=data_seed)
    if got.status != "ok" or got.score is None:
        raise SystemExit(f"{problem.name}: the seed does not score on train ({got.status}: {got.detail})")
    return got.score


def run_one(fw: str, ctx: Ctx, a: argparse.Namespace, max_calls: bool) -> RunResult:
    ctx.work.mkdir(parents=True, exist_ok=True)
    try:
        if fw in ("evolve", "evolve-agent"):
            return evolve_side.run(ctx, max_calls, agent=fw == "evolve-agent")
        return PEERS[fw].run(ctx, Path(a.venvs_dir))
    except Exception as e:  # one framework failing must not end the race
        note(f"{fw} failed: {type(e).__name__}: {e}")
        return RunResult(fw, exit_code=None, error=f"{type(e).__name__}: {e}",
                         best_code=ctx.seed_code, best_train=ctx.seed_train)


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("problems", nargs="*", help="problem names (problems/NAME) or folders")
    ap.add_argument("--calls", type=int, default=30, help="answered LLM calls per run (default 30)")
    ap.add_argument("--seeds", type=int, default=3, help="runs per problem and framework: seeds 0..K-1")
    ap.add_argument("--model", default="local", help="local, local:NAME or local:/path.gguf")
    ap.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    ap.add_argument("--venvs-dir", default=DEFAULT_VENVS, help="the peers' venvs (made on first use)")
    ap.add_argument("--sandbox", default="local", choices=("local", "docker"),
                    help="evolve's sandbox, for `evolve run` and every `evolve eval` (default local)")
    ap.add_argument("--run-timeout", type=float, help="seconds before a run is killed (default 600 + 240 per call)")
    ap.add_argument("--data-seed", type=int,
                    help="the private seed of the workloads every framework scores on "
                    "(default: a fresh secret one per race)")
    ap.add_argument("--work", help="keep every run's files here (default: a temporary folder, removed)")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--table", metavar="JSON", nargs="+",
                    help="only print the table of saved results (several: their rows together)")
    a = ap.parse_args(argv)
    if a.data_seed is None:
        a.data_seed = data_seed.draw()
    if not a.table and not a.problems:
        ap.error("name at least one problem")
    if not is_local(a.model):
        ap.error("the race serves one local model to every framework: --model local[:NAME]")
    return a


def machine_info(a: argparse.Namespace, max_calls: bool) -> dict:
    profile = profile_for(a.model)
    return {"model": a.model, "calls": a.calls, "seeds": a.seeds, "frameworks": a.frameworks,
            "data_seed": a.data_seed,
            "sandbox": a.sandbox, "context_window": profile.context_window,
            "max_tokens": profile.max_tokens, "evolve_max_calls_flag": max_calls,
            "python": platform.python_version(), "cpus": os.cpu_count(),
            "server_threads": default_threads(), "when": time.strftime("%Y-%m-%d %H:%M:%S"),
            "versions": {name: mod.REQUIREMENT for name, mod in PEERS.items()}}


def race_problem(root: Path, a: argparse.Namespace, work: Path, port: int, max_calls: bool,
                 rows: list[dict], info: dict) -> None:
    """Every seed and framework on one problem, the frameworks in turn within a seed (so a
    change of the machine's load over time falls on all of them). Each run's row is added to
    `rows` and the results file rewritten: a killed race keeps what it measured."""
    problem = load_problem(root)
    refs = references(root, a.sandbox, a.data_seed)
    base = seed_train(root, problem, a.sandbox, a.data_seed)
    note(f"{problem.name}: seed train {base:.6g}, held out {refs.seed_test}, "
         f"best baseline {refs.best_baseline_name} {refs.best_baseline_test}")
    for seed in range(a.seeds):
        for fw in a.frameworks:
            ctx = Ctx(root, problem, seed, a.calls, work / problem.name / f"s{seed}" / fw, port,
                      a.sandbox, run_timeout_s=a.run_timeout or 600 + 240 * a.calls,
                      eval_timeout_s=3 * problem.timeout_s + 60,
                      max_tokens=profile_for(a.model).max_tokens, seed_train=base,
                      model=a.model, data_seed=a.data_seed, note=note)
            r = report.row(ctx, run_one(fw, ctx, a, max_calls), refs)
            note(f"{problem.name} s{seed} {fw}: {r['calls']} calls, {r['valid']} valid, "
                 f"best train {r['best_train']}, held out {r['held_out']}, "
                 f"normalised {r['normalised']}, {r['wall_s']:.0f}s {r['error'][:200]}")
            rows.append(r)
            report.save(Path(a.out), info, rows)


def main(argv: list[str] | None = None) -> int:
    a = parse(argv)
    if a.table:
        print(report.table([row for f in a.table for row in json.loads(Path(f).read_text())["summary"]]))
        return 0
    dirs = [problem_dir(p) for p in a.problems]
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="search-race-"))
    max_calls = evolve_side.has_max_calls()
    if "evolve" in a.frameworks and not max_calls:
        note("`evolve run` has no --max-calls here: evolve runs --iterations N instead")
    info = machine_info(a, max_calls)
    rows: list[dict] = []
    server = lm.start_server(a.model, profile_for(a.model).context_window, log=note)
    try:
        for root in dirs:
            race_problem(root, a, work, server.port, max_calls, rows, info)
    finally:
        server.stop()
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    print(report.table(report.summarise(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
