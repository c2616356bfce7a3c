"""Per-evaluation overhead of the sandboxes over calling the evaluator in-process.

A trivial candidate and an evaluator that only imports it and returns a
constant, so whatever the sandbox adds (temp dirs, interpreter start, rlimits,
uid switch, reaping, result file) is the whole difference. Measured in one run:
the in-process baseline, a bare `python -c pass` subprocess for reference, the
local sandbox without its namespaces and with them (bubblewrap, seccomp,
cgroups), with a trusted score() (two processes), and Docker's warm pool.

    python bench/sandbox_overhead.py [--n 50]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import machine, write_result
from rich.console import Console
from rich.table import Table

from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, Limits, Status

CANDIDATE = "def solve():\n    return 1\n"
EVALUATOR = '''import importlib.util


def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"score": 1.0, "outputs": module.solve()}
'''
SCORE_FN = '''

def score(outputs, split):
    return {"score": float(outputs)}
'''
BASELINE = "in-process evaluate()"


def _stats(xs: list[float]) -> dict[str, float]:
    q = statistics.quantiles(xs, n=10, method="inclusive")
    return {"median_ms": statistics.median(xs) * 1e3, "p10_ms": q[0] * 1e3, "p90_ms": q[-1] * 1e3}


def _time(fn, n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _problem(root: Path, name: str, with_score: bool) -> str:
    d = root / name
    d.mkdir()
    (d / "evaluator.py").write_text(EVALUATOR + (SCORE_FN if with_score else ""))
    return str(d)


def _in_process(problem: str, root: Path):
    """The baseline: the same evaluate() call, no sandbox."""
    spec = importlib.util.spec_from_file_location("bench_evaluator", f"{problem}/evaluator.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    program = root / "candidate.py"
    program.write_text(CANDIDATE)
    return lambda: module.evaluate(str(program), "train")


def _sandboxed(sandbox: LocalSandbox, problem: str):
    req = EvalRequest(problem_dir=problem, program_code=CANDIDATE, program_name="candidate.py",
                      split="train", limits=Limits(timeout_s=30))

    def call() -> None:
        res = sandbox.evaluate(req)
        if res.status != Status.OK:
            raise RuntimeError(f"benchmark evaluation failed: {res.status} {res.artifacts}")

    return call


def _docker():
    """The Docker backend's warm pool where an engine and the image are there, else None."""
    try:
        from evaluators.docker.sandbox import DockerSandbox

        return DockerSandbox(max_parallel=1)
    except Exception as e:  # no engine, no image: the row is left out, and said so
        print(f"docker row left out: {str(e).splitlines()[0][:160]}", file=sys.stderr)
        return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="timed evaluations per row (default 50)")
    args = ap.parse_args(argv)
    sandbox = LocalSandbox(max_parallel=1)
    unisolated = LocalSandbox(max_parallel=1, isolate=False)
    docker = _docker()
    with tempfile.TemporaryDirectory(prefix="evolve-bench-") as tmp:
        root = Path(tmp)
        os.chmod(root, 0o755)  # the slot uids read the problems
        plain, scored = _problem(root, "plain", False), _problem(root, "scored", True)
        bare = [sys.executable, "-s", "-c", "pass"]
        rows = {
            BASELINE: _time(_in_process(plain, root), args.n),
            "bare `python -s -c pass`": _time(
                lambda: subprocess.run(bare, check=True, env={"PATH": os.defpath}), args.n),
            "local, no namespaces (rlimits, uids)": _time(_sandboxed(unisolated, plain), args.n),
            f"local, isolated ({sandbox.isolation.summary()})": _time(_sandboxed(sandbox, plain), args.n),
            "local, isolated, native + score()": _time(_sandboxed(sandbox, scored), args.n),
        }
        if docker is not None:
            rows["docker warm pool"] = _time(_sandboxed(docker, plain), args.n)
            docker.close()
    sandbox.close()
    unisolated.close()
    base = statistics.median(rows[BASELINE])
    report = {
        "n": args.n,
        "machine": machine(),
        "rows": {name: {**_stats(xs), "overhead": _stats([x - base for x in xs])}
                 for name, xs in rows.items()},
    }
    table = Table(title=f"Sandbox overhead per evaluation (n={args.n}, "
                  f"{'root: uid per slot' if report['machine']['root'] else 'non-root'})")
    cols = ("ms per evaluation", "median", "p10", "p90", "overhead median", "overhead p10",
            "overhead p90")
    for i, col in enumerate(cols):
        table.add_column(col, justify="right" if i else "left", no_wrap=True)
    for name, r in report["rows"].items():
        o = r["overhead"]
        table.add_row(name, *(f"{v:.2f}" for v in (r["median_ms"], r["p10_ms"], r["p90_ms"],
                                                     o["median_ms"], o["p10_ms"], o["p90_ms"])))
    console = Console()
    console.width = max(console.width, 110)  # no wrapping when piped
    console.print(table)
    write_result("sandbox_overhead", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
