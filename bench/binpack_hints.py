"""Do binpack's known ideas (problem.toml `hints`) point the right way? Each idea written as
the smallest rule that follows it, scored by `evolve eval` on train and held out.

    python bench/binpack_hints.py [--splits train test]

A hint a prompt shows to a small model must not lead it somewhere worse than the seed: the
old example (a penalty under a gap of 8) did. Results: a table on stdout and
bench/results/binpack_hints.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from harness import result_path  # noqa: E402
from prompt_probe import score  # noqa: E402

from evolve.edits.blocks import replace_block  # noqa: E402

PROBLEM = ROOT / "problems" / "binpack"

# name -> the return expression of priority(item, bins), with gap = bins - item
RULES = {
    "best fit (seed)": "-gap",
    "hint 1: penalty 40 where 0 < gap < 20": "np.where((gap > 0) & (gap < 20), -gap - 40.0, -gap)",
    "hint 1: penalty 20 where 0 < gap < 20": "np.where((gap > 0) & (gap < 20), -gap - 20.0, -gap)",
    "hint 1 overdone: penalty 60 (opens bins)": "np.where((gap > 0) & (gap < 20), -gap - 60.0, -gap)",
    "hint 2: bonus 20 where 20 < gap < 70": "np.where((gap > 20) & (gap < 70), -gap + 20.0, -gap)",
    "old example: penalty 50 where gap < 8": "np.where(gap < 8, -gap - 50.0, -gap)",
    "the notes' example: penalty 5 where 0 < gap < 10": "np.where((gap > 0) & (gap < 10), -gap - 5.0, -gap)",
    "threshold too low: penalty 40 where 0 < gap < 10": "np.where((gap > 0) & (gap < 10), -gap - 40.0, -gap)",
}


def program(expr: str) -> str:
    body = (
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        f"    gap = bins - item\n    return {expr}\n\n\n"
    )
    return replace_block((PROBLEM / "seed.py").read_text(), 0, body)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", nargs="+", default=["train", "test"])
    ap.add_argument("--rules", type=int, default=len(RULES), help="the first N rules only (default all)")
    ap.add_argument("--out", type=Path, default=result_path("binpack_hints"))
    a = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for k, (name, expr) in enumerate(list(RULES.items())[: max(1, a.rules)]):
            path = Path(tmp) / f"rule{k}.py"
            path.write_text(program(expr))
            scores = {s: score(PROBLEM, path, s)["score"] for s in a.splits}
            rows.append({"rule": name, "expr": expr, **scores})
            print(json.dumps(rows[-1]), flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(rows, indent=1))
    print("\n| rule | " + " | ".join(a.splits) + " |\n|---|" + "---|" * len(a.splits))
    for r in rows:
        cells = " | ".join("error" if r[s] is None else f"{r[s]:.4f}" for s in a.splits)
        print(f"| {r['rule']} | {cells} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
