"""Evaluation throughput on Ray against the local sandbox, and Ray's dispatch overhead per task.

    python bench/ray_throughput.py [--iterations 16] [--sleep 2] [--repeat 20]

1. Throughput. The same scripted run (an instant scripted LLM, a toy problem whose
   evaluator sleeps --sleep seconds per candidate, so that scheduling shows and not the
   two cores' compute) with --iterations candidates, on:
     - the local sandbox, --parallel 2 (the baseline);
     - Ray, 2 worker slots: a loopback cluster of two nodes with one CPU each, --parallel 2;
     - Ray, 4 worker slots: two nodes with two CPUs each, --parallel 4.
   Each configuration also runs with 0 iterations (start-up, connecting to Ray, the seed);
   throughput = iterations / (wall(N) - wall(0)), and each is given as a ratio to the
   local sandbox's, measured in the same run.
2. Dispatch overhead. --repeat evaluations of a candidate that returns at once, one after
   another, in this process through LocalSandbox and through RaySandbox (2 slots); the
   overhead per task is the difference of the median wall times (request in, result out).

The clusters are real `ray start` nodes on 127.0.0.1 (evolve/testing/ray_support.py), without
token authentication (RAY_AUTH_MODE=disabled, for them and every driver here). Writes
bench/results/ray_throughput.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

from harness import result_path  # noqa: E402

from evaluators.backends import make_sandbox, ray_options  # noqa: E402
from evaluators.local.sandbox import LocalSandbox  # noqa: E402
from evolve.pipeline.evaluation import CandidateEvaluator  # noqa: E402
from evolve.problem.load import load_problem  # noqa: E402
from evolve.testing.ray_support import AUTH_OFF, LoopbackCluster  # noqa: E402
from evolve.testing.scripted_llm import Reply, ScriptedLLM  # noqa: E402

EVALUATOR = """
import importlib.util, os, time

def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    time.sleep(float(os.environ.get("SLEEP_S", "0")))
    return {"outputs": {"value": float(m.f(3))}}

def score(outputs, split):
    return {"score": -abs(outputs["value"] - 10.0), "metrics": {"value": outputs["value"]}}
"""


def make_problem(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "problem.toml").write_text(
        '[problem]\nname = "sleeper"\nentry = "seed.py"\n'
        '[evaluation]\ntimeout_s = 60\nsplits = ["train"]\nenv = ["SLEEP_S"]\n'
    )
    (root / "seed.py").write_text("# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n")
    (root / "evaluator.py").write_text(EVALUATOR)
    return root


class Replies:
    def __init__(self) -> None:
        self.k = 0

    def __call__(self, request: dict) -> Reply:
        self.k += 1
        body = f"def f(x):\n    return x + {self.k}\n"
        return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```")


def run_wall(problem: Path, work: Path, iterations: int, sleep_s: float, args: list[str]) -> float:
    runs = Path(tempfile.mkdtemp(dir=work))
    with ScriptedLLM(Replies()) as srv:
        cmd = [sys.executable, "-m", "evolve.cli", "run", str(problem), "--iterations", str(iterations),
               "--api-base", srv.base_url, "--model", "scripted", "--runs-dir", str(runs),
               "--no-progress", "--llm-parallel", "4", *args]
        env = {**os.environ, "SLEEP_S": str(sleep_s), "OPENAI_API_KEY": "unused",
               "RAY_USAGE_STATS_ENABLED": "0"}
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
        wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"bench: {' '.join(args)}: run failed:\n{r.stderr[-2000:]}")
    return wall


def throughput(problem: Path, work: Path, iterations: int, sleep_s: float, args: list[str]) -> dict:
    base = run_wall(problem, work, 0, sleep_s, args)
    full = run_wall(problem, work, iterations, sleep_s, args)
    return {"wall_0_s": base, "wall_n_s": full, "evals_per_s": iterations / (full - base)}


def dispatch(problem_dir: Path, cluster: LoopbackCluster, repeat: int) -> dict:
    os.environ["SLEEP_S"] = "0"
    problem = load_problem(problem_dir)
    code = problem.seed_code
    out = {}
    local = LocalSandbox(max_parallel=1)
    ray = make_sandbox("ray", 1, ray=ray_options(problem, cluster.address, "local"))
    try:
        for name, sandbox in (("local", local), ("ray", ray)):
            ev = CandidateEvaluator(problem, sandbox)
            ev.run_split(code, "train")  # warm: Ray's worker processes, the bundle on each node
            ev.run_split(code, "train")
            walls = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                r = ev.run_split(code, "train")
                walls.append(time.perf_counter() - t0)
                assert r.status == "ok", r.artifacts
            out[name] = statistics.median(walls)
    finally:
        ray.close()
        local.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=16)
    ap.add_argument("--sleep", type=float, default=2.0, help="seconds the evaluator sleeps")
    ap.add_argument("--repeat", type=int, default=20, help="evaluations for the dispatch overhead")
    args = ap.parse_args()
    os.environ.update(AUTH_OFF)  # the drivers here and in the runs agree with the clusters
    console = Console(stderr=True)
    work = Path(tempfile.mkdtemp(prefix="bench-ray-"))
    problem = make_problem(work / "sleeper")
    results: dict = {}
    with console.status("local sandbox, --parallel 2"):
        results["local_parallel_2"] = throughput(
            problem, work, args.iterations, args.sleep, ["--sandbox", "local", "--parallel", "2"]
        )
    for slots, cpus in ((2, 1), (4, 2)):
        with console.status(f"Ray, {slots} worker slots (2 nodes x {cpus} CPU)"):
            cluster = LoopbackCluster(cpus_per_node=cpus).start(workers=1)
            try:
                results[f"ray_{slots}_slots"] = throughput(
                    problem, work, args.iterations, args.sleep,
                    ["--sandbox", "ray", "--ray-address", cluster.address, "--ray-node-sandbox",
                     "local", "--parallel", str(slots)],
                )
                if slots == 2:
                    with console.status("dispatch overhead"):
                        results["dispatch_median_s"] = dispatch(problem, cluster, args.repeat)
            finally:
                cluster.stop()
    base = results["local_parallel_2"]["evals_per_s"]
    for key in ("local_parallel_2", "ray_2_slots", "ray_4_slots"):
        results[key]["ratio_to_local"] = results[key]["evals_per_s"] / base
    d = results["dispatch_median_s"]
    results["dispatch_overhead_s"] = d["ray"] - d["local"]
    results["dispatch_ratio"] = d["ray"] / d["local"]

    table = Table(title=f"{args.iterations} candidates, evaluator sleeps {args.sleep:g} s")
    for col in ("configuration", "wall 0 it (s)", f"wall {args.iterations} it (s)", "evals/s", "x local"):
        table.add_column(col)
    for key in ("local_parallel_2", "ray_2_slots", "ray_4_slots"):
        r = results[key]
        table.add_row(key, f"{r['wall_0_s']:.1f}", f"{r['wall_n_s']:.1f}", f"{r['evals_per_s']:.3f}",
                      f"{r['ratio_to_local']:.2f}")
    Console().print(table)
    Console().print(
        f"dispatch: local {d['local'] * 1000:.0f} ms, ray {d['ray'] * 1000:.0f} ms per evaluation "
        f"(median of {args.repeat}); Ray adds {results['dispatch_overhead_s'] * 1000:.0f} ms "
        f"({results['dispatch_ratio']:.2f}x)"
    )
    out = result_path("ray_throughput")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"when": dt.datetime.now(dt.UTC).isoformat(), "host": platform.node(),
            "cpus": os.cpu_count(), "iterations": args.iterations, "sleep_s": args.sleep}
    out.write_text(json.dumps({"meta": meta, **results}, indent=2))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
