"""Would tuning pay on the programs it skips? The model's valid programs that score exactly as
their parent or as an earlier program (so evolve/search/tune.py does not tune them), given the
first variants the loop would evaluate if it did (INERT_STOP of them: a root whose first ones
all tie stops there), scored on train with `evolve eval`.

    python bench/tune_twins.py RUNS_DIR... [--problem problems/binpack] [--out FILE]

Per run: the skipped programs, those with numbers to tune, those whose variants moved the
score at all, and those with a variant better than the seed. Writes bench/results/tune_twins.json.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from harness import result_path  # noqa: E402
from prompt_probe import score  # noqa: E402

from evolve.problem.load import load_problem  # noqa: E402
from evolve.search.tune import INERT_STOP, variants  # noqa: E402


def skipped(db: Path) -> list[dict]:
    """Per run of the archive: its seed's score and the model's valid programs that behave
    as their parent or an earlier program (same train score), in iteration order."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    rows = con.execute(
        "SELECT p.run_id, p.iteration, p.kind, p.code, p.score, q.score AS parent_score"
        " FROM programs p LEFT JOIN programs q ON q.program_id = p.parent_id"
        " WHERE p.status = 'ok' ORDER BY p.run_id, p.iteration"
    ).fetchall()
    con.close()
    runs: dict[str, dict] = {}
    for r in rows:
        run = runs.setdefault(r["run_id"], {"run_id": r["run_id"], "seen": set(), "twins": []})
        if r["kind"] == "seed":
            run["seed"] = r["score"]
        elif r["kind"] != "tune" and (r["score"] == r["parent_score"] or r["score"] in run["seen"]):
            run["twins"].append({"iteration": r["iteration"], "code": r["code"], "score": r["score"]})
        run["seen"].add(r["score"])
    return [{k: v for k, v in run.items() if k != "seen"} for run in runs.values()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+", type=Path, help="runs folders (each with archive.db)")
    ap.add_argument("--problem", type=Path, default=ROOT / "problems" / "binpack")
    ap.add_argument("--out", type=Path, default=result_path("tune_twins"))
    args = ap.parse_args(argv)
    report = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "variant.py"
        # `evolve eval`'s train draw is not a run's (each run has its own data seed): every
        # comparison is between programs scored here, the seed included.
        path.write_text(load_problem(args.problem).seed_code)  # its folder's entry
        seed_score = score(args.problem, path)["score"]
        for runs in args.runs:
            for run in skipped(runs / "archive.db"):
                numbered = moved = better = 0
                for twin in run["twins"]:
                    tried = variants(twin["code"])[:INERT_STOP]
                    numbered += bool(tried)
                    if not tried:
                        continue
                    twin["variants"] = []
                    for code in [twin["code"], *tried]:
                        path.write_text(code)
                        twin["variants"].append(score(args.problem, path)["score"])
                    own, *got = twin["variants"]
                    got = [s for s in got if s is not None]
                    moved += any(s != own for s in got)
                    better += any(s > seed_score for s in got)
                row = {"runs": str(runs), "run_id": run["run_id"], "seed": seed_score,
                       "skipped": len(run["twins"]), "with_numbers": numbered,
                       "moved": moved, "beat_seed": better, "twins": run["twins"]}
                report.append(row)
                print(f"{runs} {run['run_id']}: {len(run['twins'])} skipped, {numbered} with"
                      f" numbers, {moved} moved by a variant, {better} beat the seed", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
