"""CPU time of one train evaluation of each problem's seed, against the problems' budget.

    .venv/bin/python bench/eval_budget.py [--n 3] [--problems eplb txn_scheduling] [--budget-s 10]

The problem issues set a budget for one evaluation of the seed on `train`: 10 s of one
core (eplb and txn_scheduling). The unit tests used to assert it; CPU time still moves
with the machine, so it is measured here instead. Each repetition runs the evaluator
the way the tests call it (`evaluate(seed, "train")`, then the trusted `score()` where
the evaluator has one) in a fresh interpreter, without a sandbox. Columns:

- `CPU s`: user + system time of that interpreter and every process it waited for
  (the candidate's worker included), start-up and imports included: the figure the
  budget is checked against;
- `eval wall s`: the wall time of evaluate() + score() alone, timed inside;
- `score`: what the seed scored (the same every time: the evaluations are deterministic).

Medians of `--n` repetitions. Writes bench/results/eval_budget.json.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from harness import machine, write_result
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

from evolve.problem.load import load_problem  # noqa: E402

CHILD = """
import importlib.util, json, sys, time
problem, seed, split = sys.argv[1:4]
sys.path.insert(0, problem)  # the evaluator imports its simulator, as in the sandbox
spec = importlib.util.spec_from_file_location("evaluator", problem + "/evaluator.py")
ev = importlib.util.module_from_spec(spec)
sys.modules["evaluator"] = ev
spec.loader.exec_module(ev)
t0 = time.perf_counter()
out = ev.evaluate(seed, split)
if "outputs" in out and hasattr(ev, "score"):
    out = ev.score(out["outputs"], split)
print(json.dumps({"wall_s": time.perf_counter() - t0, "score": out.get("score")}))
"""


def one(problem_dir: Path, seed: Path, split: str) -> dict:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run([sys.executable, "-c", CHILD, str(problem_dir), str(seed), split],
                       capture_output=True, text=True, cwd=ROOT, timeout=600)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{problem_dir.name}: exit {r.returncode}\n{r.stderr[-2000:]}")
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["cpu_s"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return out


def main(argv: list[str] | None = None) -> int:
    names = sorted(p.name for p in (ROOT / "problems").iterdir() if (p / "problem.toml").exists())
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3, help="repetitions per problem")
    parser.add_argument("--problems", nargs="+", default=names, choices=names)
    parser.add_argument("--budget-s", type=float, default=10.0, help="CPU seconds of one core")
    args = parser.parse_args(argv)
    rows = {}
    for name in args.problems:
        problem = load_problem(ROOT / "problems" / name)
        runs = [one(problem.root, problem.root / problem.entry, problem.train_split) for _ in range(args.n)]
        cpu = statistics.median(r["cpu_s"] for r in runs)
        rows[name] = {"cpu_s": cpu, "eval_wall_s": statistics.median(r["wall_s"] for r in runs),
                      "score": runs[0]["score"], "within_budget": cpu <= args.budget_s, "runs": runs}
    table = Table(title=f"One train evaluation of the seed (median of {args.n}; budget {args.budget_s:g} CPU s)")
    for col in ("problem", "CPU s", "eval wall s", "score", "within budget"):
        table.add_column(col, justify="left" if col == "problem" else "right")
    for name, r in rows.items():
        table.add_row(name, f"{r['cpu_s']:.2f}", f"{r['eval_wall_s']:.2f}", f"{r['score']:.6g}",
                      "yes" if r["within_budget"] else "NO")
    Console(width=max(Console().width, 100)).print(table)
    report = {
        "n": args.n,
        "budget_cpu_s": args.budget_s,
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(),
        "problems": rows,
    }
    write_result("eval_budget", report)
    return 0 if all(r["within_budget"] for r in rows.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
