"""Score every problem's seed and baselines on its train and held-out splits.

    python bench/baselines.py [--problems A B] [--sandbox local] [--compare OLD.json]

Writes bench/results/baselines.json and prints a markdown table (with each evaluation's
wall time in the sandbox, one split alone, no cascade); with
--compare, lists every score or metric that differs from an earlier run (the
problem READMEs' numbers must be reproduced bit for bit). Metrics that are
timings (`runtime*`, `*_ms`, and eplb's speed terms) are left out of the comparison.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from harness import result_path  # noqa: E402

from evaluators.backends import make_sandbox  # noqa: E402
from evolve.pipeline.evaluation import CandidateEvaluator  # noqa: E402
from evolve.problem.baselines import baseline_files  # noqa: E402
from evolve.problem.load import load_problem  # noqa: E402
from evolve.problem.model import Problem  # noqa: E402
from evolve.problem.program_input import program_code  # noqa: E402

TIMING = ("speed_bonus", "slow_penalty")


def is_timing(metric: str) -> bool:
    """A metric that measures the policy's own wall time (`runtime*`, `*_ms`, eplb's speed
    terms); simulated times (`transfer_s`, makespans) are deterministic and compared."""
    return metric in TIMING or metric.startswith("runtime") or metric.endswith("_ms")


def programs(problem: Problem) -> list[Path]:
    """The seed (a file, or the folder of a program of several files) and the baselines, as
    `evolve eval` reads them."""
    return [problem.seed_file, *baseline_files(problem.root)]


def score_all(names: list[str], sandbox_name: str) -> dict[str, dict]:
    sandbox = make_sandbox(sandbox_name, 1)
    out: dict[str, dict] = {}
    try:
        for name in names:
            problem = load_problem(ROOT / "problems" / name)
            ev = CandidateEvaluator(problem, sandbox)
            for path in programs(problem):
                code = program_code(problem, path)
                for split in filter(None, (problem.train_split, problem.test_split)):
                    r = ev.run_split(code, split)
                    key = f"{name}/{path.relative_to(problem.root)}/{split}"
                    out[key] = {
                        "status": r.status,
                        "score": r.score,
                        "metrics": r.metrics,
                        "eval_s": round(r.eval_s, 2),
                    }
                    print(f"{key}: {r.status} {r.score}", file=sys.stderr, flush=True)
    finally:
        sandbox.close()
    return out


def differences(old: dict, new: dict) -> list[str]:
    diffs = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a is None or b is None:
            diffs.append(f"{key}: only in the {'new' if a is None else 'old'} run")
            continue
        timed = any(is_timing(m) for m in a["metrics"])  # the score has a speed term
        if (a["status"], a["score"]) != (b["status"], b["score"]) and not timed:
            diffs.append(f"{key}: score {a['score']!r} -> {b['score']!r}")
        for m in sorted(set(a["metrics"]) | set(b["metrics"])):
            if not is_timing(m) and a["metrics"].get(m) != b["metrics"].get(m):
                diffs.append(f"{key}: {m} {a['metrics'].get(m)!r} -> {b['metrics'].get(m)!r}")
    return diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problems", nargs="*", default=None, help="problem folder names (default: all)")
    ap.add_argument("--sandbox", default="local", choices=("local", "docker"))
    ap.add_argument("--compare", type=Path, help="an earlier baselines.json to compare with")
    ap.add_argument("--out", type=Path, default=result_path("baselines"))
    args = ap.parse_args()
    names = args.problems or sorted(p.parent.name for p in (ROOT / "problems").glob("*/problem.toml"))
    scores = score_all(names, args.sandbox)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(scores, indent=1, sort_keys=True))
    print("| program | split | status | score | eval s |\n|---|---|---|---|---|")
    for key, r in scores.items():
        program, split = key.rsplit("/", 1)
        print(f"| {program} | {split} | {r['status']} | {r['score']!r} | {r['eval_s']} |")
    if args.compare:
        diffs = differences(json.loads(args.compare.read_text()), scores)
        print("\n".join(diffs) if diffs else f"identical to {args.compare} (timings aside)")
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
