"""What running the candidate in its own process costs: a whole evaluation, in-process vs worker.

    python bench/remote_policy.py [--n 7] [--problems binpack spot_scheduling ...]

For each problem, its seed is evaluated and scored on the train split twice
over: with the candidate imported into the evaluator's process (`kit.REMOTE =
False`, the way before the worker existed) and through the confined worker
(`evaluators/inside/worker_client.py`, the default), worker start included. Two tables:

- warm: `kit.evaluate_and_score` in this process (the evaluator imported once);
- cold: what a sandbox runs per evaluation, minus the sandbox itself: the
  harness (`evaluators/inside/harness.py run`) in a fresh interpreter, then the
  trusted `harness.py score` in another.

The modes alternate run by run, so a load change on a shared machine hits both
alike; the tables give the median of `--n` runs of each and their ratio, and
the script checks that both modes score identically. A last line measures the
protocol itself: one round trip with a trivial function, and a worker's start
(interpreter, Landlock, import of the candidate) to its exit. Writes
results/remote_policy.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import machine, write_result
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

from evaluators import kit  # noqa: E402
from evaluators.inside import worker_client  # noqa: E402

PROBLEMS = ("binpack", "spot_scheduling", "spot_multi_region")
MODES = ("in-process", "worker")
TRIVIAL = "def f(x):\n    return x\n"


def _evaluator(name: str):
    """The problem's evaluator.py, imported the way the harness imports it."""
    folder = ROOT / "problems" / name
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("evaluator", folder / "evaluator.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluator"] = module
    spec.loader.exec_module(module)
    return module


def _seed(name: str, tmp: Path) -> str:
    """A copy of the problem's seed (its entry file)."""
    path = tmp / f"{name}_seed.py"
    path.write_text((ROOT / "problems" / name / "seed.py").read_text())
    return str(path)


def _timed(evaluator, program: str, mode: str) -> tuple[float, object]:
    kit.REMOTE = mode == "worker"
    try:
        t0 = time.perf_counter()
        result = kit.evaluate_and_score(evaluator, program, "train")
        return time.perf_counter() - t0, (result.get("score"), result.get("metrics"))
    finally:
        kit.REMOTE = True


HARNESS = ROOT / "evaluators" / "inside" / "harness.py"
# Runs the harness as the sandbox does; "in-process" turns the worker off in the kit it loads.
WRAPPER = """
import importlib.util, os, sys
harness_path, mode, src, dst, in_process = sys.argv[1:6]
spec = importlib.util.spec_from_file_location("harness", harness_path)
h = importlib.util.module_from_spec(spec)
spec.loader.exec_module(h)
provide = h._provide_kit
def _provide_kit():
    kit = provide()
    if in_process == "1":
        kit.REMOTE = False
    return kit
h._provide_kit = _provide_kit
code = h.main([harness_path, mode, src, dst])
sys.stdout.flush()
os._exit(code)
"""


def _cold(name: str, program: str, mode: str, tmp: Path) -> tuple[float, object]:
    """harness.py run, then harness.py score, each in a fresh interpreter."""
    folder = str(ROOT / "problems" / name)
    req, res = tmp / "req.json", tmp / "res.json"
    req.write_text(
        json.dumps(
            {
                "program_name": program,
                "problem_dir": folder,
                "split": "train",
                "fmt": "native",
                "limits": {},
            }
        )
    )
    flag = "1" if mode == "in-process" else "0"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOLVE_", "PYTHON"))}
    t0 = time.perf_counter()
    for step in ("run", "score"):
        subprocess.run(
            [sys.executable, "-s", "-c", WRAPPER, str(HARNESS), step, str(req), str(res), flag],
            check=True,
            cwd=tmp,
            env=env,
            stdout=subprocess.DEVNULL,
        )
        result = json.loads(res.read_text())
        if step == "run":
            if result.get("status") != "ok":
                raise SystemExit(f"{name}: harness run failed: {result}")
            req.write_text(
                json.dumps(
                    {
                        "problem_dir": folder,
                        "split": "train",
                        "limits": {},
                        "outputs": result["outputs"],
                    }
                )
            )
    return time.perf_counter() - t0, (result.get("score"), result.get("metrics"))


def _protocol(tmp: Path, n: int) -> dict[str, float]:
    """Median seconds of one trivial round trip, and of a worker's start to exit."""
    program = tmp / "trivial.py"
    program.write_text(TRIVIAL)
    starts = []
    for _ in range(n):
        t0 = time.perf_counter()
        with worker_client.Remote(str(program), "f", kit.Invalid):
            pass
        starts.append(time.perf_counter() - t0)
    with worker_client.Remote(str(program), "f", kit.Invalid) as fn:
        for i in range(500):
            fn(i)
        t0 = time.perf_counter()
        for i in range(5000):
            fn(i)
        call = (time.perf_counter() - t0) / 5000
    return {"round_trip_s": call, "worker_start_s": statistics.median(starts)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--n", type=int, default=7, help="timed evaluations per problem and mode (default 7)"
    )
    ap.add_argument("--problems", nargs="*", default=list(PROBLEMS))
    args = ap.parse_args(argv)
    times: dict[str, dict[str, dict[str, list[float]]]] = {
        kind: {p: {m: [] for m in MODES} for p in args.problems} for kind in ("warm", "cold")
    }
    console = Console()
    console.width = max(console.width, 100)  # no wrapping when piped
    with tempfile.TemporaryDirectory(prefix="evolve-bench-") as tmp_name:
        tmp = Path(tmp_name)
        with Progress(console=console, transient=True) as progress:
            task = progress.add_task(
                "evaluations", total=2 * len(args.problems) * len(MODES) * (args.n + 1)
            )
            for name in args.problems:
                evaluator, program = _evaluator(name), _seed(name, tmp)
                for kind in ("warm", "cold"):
                    seen = {}
                    for i in range(args.n + 1):  # the first round warms caches and is not kept
                        for mode in MODES if i % 2 else MODES[::-1]:
                            if kind == "warm":
                                seconds, scored = _timed(evaluator, program, mode)
                            else:
                                seconds, scored = _cold(name, program, mode, tmp)
                            seen.setdefault(mode, scored)
                            if seen[mode] != scored:
                                raise SystemExit(f"{name}: {mode} scored differently across runs")
                            if i:
                                times[kind][name][mode].append(seconds)
                            progress.advance(task)
                    if seen["in-process"] != seen["worker"]:
                        raise SystemExit(
                            f"{name}: the worker scores {seen['worker']}, in-process {seen['in-process']}"
                        )
                sys.modules.pop("evaluator", None)
        protocol = _protocol(tmp, args.n)
    report = {
        "n": args.n,
        "machine": machine(),
        "protocol": protocol,
        **{
            kind: {
                name: {
                    mode: {"median_s": statistics.median(xs), "min_s": min(xs), "max_s": max(xs)}
                    for mode, xs in modes.items()
                }
                for name, modes in by_problem.items()
            }
            for kind, by_problem in times.items()
        },
    }
    titles = {
        "warm": "kit.evaluate_and_score(train) in a warm process",
        "cold": "harness.py run + harness.py score, fresh interpreters (a sandbox's work, no sandbox)",
    }
    for kind, title in titles.items():
        table = Table(title=f"{title}: median of {args.n} (seconds)")
        for i, col in enumerate(("problem", "in-process", "worker", "ratio", "worker min..max")):
            table.add_column(col, justify="right" if i else "left", no_wrap=True)
        for name, r in report[kind].items():
            a, b = r["in-process"]["median_s"], r["worker"]["median_s"]
            table.add_row(
                name,
                f"{a:.3f}",
                f"{b:.3f}",
                f"{b / a:.2f}x",
                f"{r['worker']['min_s']:.3f}..{r['worker']['max_s']:.3f}",
            )
        console.print(table)
    console.print(
        f"one round trip (trivial call): {1e6 * protocol['round_trip_s']:.0f} us; "
        f"worker start to exit: {1e3 * protocol['worker_start_s']:.0f} ms; "
        f"load average {report['machine']['loadavg'][0]:.2f} on {os.cpu_count()} CPUs"
    )
    write_result("remote_policy", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
