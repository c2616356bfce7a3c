"""What constant tuning (evolve/search/tune.py) makes of one program, without a call: the
loop's own Tuner, fed the real `evolve eval` train scores, step by step.

    python bench/tune_climb.py [--budget 12] [--rule EXPR ...] [--problem problems/binpack]

Each rule is binpack's `priority` return expression over `gap = bins - item`; the default
ones are what the 0.5B model writes most (the domain notes' example, a penalty under a small
gap; a bonus in a band of gaps). Per rule: every tuned child in the order the loop would
evaluate it, its train score and whether it beat its base; then the best program's held-out
score against the seed's. Writes bench/results/tune_climb.json.
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

from evolve.archive import ProgramRow, ProgramStatus  # noqa: E402
from evolve.edits import normalized_hash, unified_diff  # noqa: E402
from evolve.edits.blocks import replace_block  # noqa: E402
from evolve.search.tune import KIND, Tuner  # noqa: E402

RULES = (
    "np.where((gap > 0) & (gap < 10), -gap - 5.0, -gap)",
    "np.where((gap > 20) & (gap < 40), -gap + 5.0, -gap)",
)


def climb(problem: Path, seed_code: str, code: str, budget: int, work: Path) -> dict:
    def train(c: str, n: int) -> float | None:
        path = work / f"t{n}.py"
        path.write_text(c)
        return score(problem, path)["score"]

    tuner = Tuner(budget)
    root = ProgramRow(program_id="b:1", run_id="b", problem="p", iteration=1, island=0,
                      status=ProgramStatus.OK, code=code, score=train(code, 1), kind="mutation")
    seed_score = train(seed_code, 0)
    tuner.finished(root, seed_score, novel=root.score != seed_score)
    seen, best = {normalized_hash(code)}, root
    behaviours = {seed_score, root.score}  # train scores so far: the run's signatures here
    scores = {root.program_id: root.score}
    steps: list[dict] = []
    while (v := tuner.next(lambda c: normalized_hash(c) in seen)) is not None:
        n = len(steps) + 2  # the root is b:1
        seen.add(normalized_hash(v.code))
        s = train(v.code, n)
        row = ProgramRow(program_id=f"b:{n}", run_id="b", problem="p", iteration=n, island=0,
                         status=ProgramStatus.OK if s is not None else ProgramStatus.RUNTIME_ERROR,
                         code=v.code, score=s, parent_id=v.parent_id, kind=KIND)
        tuner.finished(row, scores[v.parent_id], novel=s is not None and s not in behaviours)
        behaviours.add(s)
        scores[row.program_id] = s
        changed = [ln[1:].strip() for ln in unified_diff(seed_code, v.code).splitlines()
                   if ln.startswith("+") and not ln.startswith("+++")]
        better = s is not None and scores[v.parent_id] is not None and s > scores[v.parent_id]
        steps.append({"n": n - 1, "train": s, "beat_base": better, "line": changed[-1]})
        print(f"  {n - 1:2d}  {s if s is not None else 'failed':>22}  {'up' if better else '  '}  {changed[-1]}",
              flush=True)
        if s is not None and (best.score is None or s > best.score):
            best = row
    path = work / "best.py"
    path.write_text(best.code or "")
    seed_path = work / "seed.py"
    seed_path.write_text(seed_code)
    return {"seed_train": seed_score, "start_train": root.score, "best_train": best.score,
            "evaluations": len(steps), "steps": steps,
            "best_test": score(problem, path, "test")["score"],
            "seed_test": score(problem, seed_path, "test")["score"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--problem", type=Path, default=ROOT / "problems" / "binpack")
    ap.add_argument("--rule", action="append", help="priority's return expression (repeatable)")
    ap.add_argument("--budget", type=int, default=12, help="tuned children per program")
    ap.add_argument("--out", type=Path, default=result_path("tune_climb"))
    a = ap.parse_args(argv)
    seed_code = (a.problem / "seed.py").read_text()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rule in a.rule or RULES:
            body = f"def priority(item, bins):\n    gap = bins - item\n    return {rule}\n"
            print(f"{rule}:", flush=True)
            r = climb(a.problem, seed_code, replace_block(seed_code, 0, body), a.budget, Path(tmp))
            print(f"  train: seed {r['seed_train']:.4f}, start {r['start_train']:.4f}, best "
                  f"{r['best_train']:.4f} after {r['evaluations']} evaluations; held out: seed "
                  f"{r['seed_test']:.4f}, best {r['best_test']:.4f}", flush=True)
            results[rule] = r
    a.out.parent.mkdir(parents=True, exist_ok=True)
    a.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
