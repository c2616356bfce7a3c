"""Each part of the search on and off, on one problem, same seeds and budget of calls.

    python bench/search_ablation.py [--problem problems/binpack] [--calls 20] [--seeds 2]
                                    [--only all-on no-resample ...] [--runs-dir DIR]

Every variant is one `evolve bench` (the bundled local model unless --model): the model's
profile as it ships, then every part on (ALL_ON over the profile's defaults), then every part
on but one, in turn; the table gives, per
variant, the median over seeds of the share of calls that gave a new program, a valid one and
a behaviourally new one, the rejected clones, repairs that scored, tuned children (and those
that behaved unlike every earlier program), and the normalised held-out score. Results:
bench/results/search_ablation.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

sys.path.insert(0, str(ROOT / "bench"))
from harness import result_path  # noqa: E402
from search_yield import run_rows  # noqa: E402

# Every part on, whatever the model's profile turns off (the bundled model's asks no repairs and
# writes no meta-notes): each other variant then turns one part off.
ALL_ON = ["--repair-attempts=1", "--meta-interval=5"]
# item of issue 22 -> the flags that turn it off
VARIANTS: dict[str, list[str]] = {
    "bundled profile": [],  # what `evolve run` does with the model's profile, nothing added
    "all-on": ALL_ON,
    "no-resample (1)": [*ALL_ON, "--max-resamples=0"],
    "no-repair (2)": [*ALL_ON, "--repair-attempts=0"],
    "funsearch prompt (3)": [*ALL_ON, "--prompt-style=funsearch"],
    "one temperature, no stagnation (4)": [*ALL_ON, "--temperatures=0.7", "--stagnation=0"],
    "no meta-notes (5)": [*ALL_ON, "--meta-interval=0"],
    "no constant tuning": [*ALL_ON, "--tune-evals=0"],
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", default=str(ROOT / "problems" / "binpack"))
    ap.add_argument("--model", default="local")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--only", nargs="*", choices=list(VARIANTS))
    ap.add_argument("--runs-dir", type=Path, default=Path("/tmp/search-ablation"))
    ap.add_argument("--out", type=Path, default=result_path("search_ablation"))
    args = ap.parse_args(argv)
    rows = []
    for i, name in enumerate(args.only or VARIANTS):
        runs = args.runs_dir / f"v{i}"
        cmd = [
            sys.executable,
            "-m",
            "evolve.cli",
            "bench",
            args.problem,
            "--model",
            args.model,
            "--calls",
            str(args.calls),
            "--seeds",
            str(args.seeds),
            "--runs-dir",
            str(runs),
            "--json",
            *(f"--run-arg={f}" for f in VARIANTS[name]),
        ]
        print(f"{name}: {' '.join(cmd[3:])}", flush=True)
        out = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        bench = json.loads(out.stdout) if out.stdout.strip().startswith("{") else {}
        yields = run_rows(runs)

        def med(k: str, yields: list[dict] = yields) -> float | None:
            return statistics.median(r[k] for r in yields if r[k] is not None) if yields else None

        problem = (bench.get("problems") or [{}])[0]
        rows.append(
            {
                "variant": name,
                "flags": VARIANTS[name],
                "runs": len(yields),
                "new_pct": med("new_pct"),
                "valid_pct": med("valid_pct"),
                "behaviour_new_pct": med("behaviour_new_pct"),
                "rejected_clones": med("rejected_clones"),
                "repairs_ok": med("repairs_ok"),
                "tuned": med("tuned"),
                "tuned_new": med("tuned_new"),
                "improved": sum(r["improved"] for r in yields),
                "normalised": problem.get("normalised_median"),
                "median_call_s": med("median_call_s"),
                "exit_code": out.returncode,
            }
        )
        print(json.dumps(rows[-1]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=2))
    cols = (
        "runs",
        "new_pct",
        "valid_pct",
        "behaviour_new_pct",
        "rejected_clones",
        "repairs_ok",
        "tuned",
        "tuned_new",
        "improved",
        "normalised",
        "median_call_s",
    )
    print("| variant | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for r in rows:
        cells = [f"{r[c]:.3g}" if isinstance(r[c], float) else str(r[c]) for c in cols]
        print(f"| {r['variant']} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
