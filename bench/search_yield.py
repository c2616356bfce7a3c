"""What each LLM call of finished runs yielded: the figures issue 22's targets are stated in.

    python bench/search_yield.py RUNS_DIR [RUNS_DIR ...] [--json OUT]

For every run in each archive: answered calls; the share that gave a program not evaluated
before in the run (new), a valid program, a valid program with a train score no earlier
program had (behaviourally new); rejected clones, repairs asked and repairs that scored;
tuned children (no call; evolve/search/tune.py) and those that behaved unlike every earlier
program; the median call latency and completion tokens; the best train score against the seed's.
The per-call counting is evolve.benchmark.measure's, so `evolve bench` reports the same.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from evolve.archive import ArchiveReader  # noqa: E402
from evolve.benchmark.measure import measure  # noqa: E402
from evolve.benchmark.normalise import References  # noqa: E402


def run_rows(runs_dir: Path) -> list[dict]:
    out = []
    reader = ArchiveReader(runs_dir)
    db = sqlite3.connect(f"file:{runs_dir / 'archive.db'}?mode=ro", uri=True)
    cols = {r[1] for r in db.execute("PRAGMA table_info(llm_calls)")}
    v4 = "purpose" in cols  # an archive before schema 4 has no purpose or outcome
    for (run_id,) in db.execute("SELECT run_id FROM runs ORDER BY created_at"):
        r = measure(reader, run_id, 0, References(None, None, None), 0, 0.0)
        calls = db.execute(
            "SELECT latency_s, completion_tokens,"
            + (" purpose, outcome" if v4 else " NULL, NULL")
            + " FROM llm_calls"
            " WHERE run_id=? AND reply IS NOT NULL",
            (run_id,),
        ).fetchall()
        repairs = db.execute(
            "SELECT status FROM programs WHERE run_id=? AND kind='repair'", (run_id,)
        ).fetchall()
        seed, best = db.execute(
            "SELECT (SELECT score FROM programs WHERE run_id=? AND iteration=0),"
            " (SELECT MAX(score) FROM programs WHERE run_id=? AND status='ok')",
            (run_id, run_id),
        ).fetchone()
        n = max(1, r.calls)
        out.append(
            {
                "run_id": run_id,
                "calls": r.calls,
                "new_pct": 100.0 * r.new_programs / n,
                "valid_pct": 100.0 * r.valid / n,
                "behaviour_new_pct": 100.0 * r.behaviourally_new / n,
                "rejected_clones": sum(1 for c in calls if c[3] == "rejected_duplicate"),
                "meta_calls": sum(1 for c in calls if c[2] == "meta"),
                "tuned": r.tuned,
                "tuned_new": r.tuned_new,
                "repairs": len(repairs),
                "repairs_ok": sum(1 for (s,) in repairs if s == "ok"),
                "median_call_s": statistics.median(c[0] for c in calls) if calls else None,
                "median_completion_tokens": statistics.median(c[1] for c in calls)
                if calls
                else None,
                "seed": seed,
                "best": best,
                "improved": best is not None and seed is not None and best > seed,
            }
        )
    db.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs_dirs", nargs="+", type=Path)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    rows = [dict(r, runs_dir=str(d)) for d in args.runs_dirs for r in run_rows(d)]
    cols = (
        "calls",
        "new_pct",
        "valid_pct",
        "behaviour_new_pct",
        "rejected_clones",
        "repairs",
        "repairs_ok",
        "meta_calls",
        "tuned",
        "tuned_new",
        "median_call_s",
        "median_completion_tokens",
        "seed",
        "best",
    )
    print("run_id".ljust(40), *(c[:12].rjust(12) for c in cols))
    for r in rows:
        cells = [f"{r[c]:.4g}" if isinstance(r[c], float) else str(r[c]) for c in cols]
        print(r["run_id"][:40].ljust(40), *(c.rjust(12) for c in cells))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
