"""What the metric bounds buy: export and the program page for the largest program allowed.

    python bench/metric_bounds.py [--programs 200] [--echo 250000] [--repeat 5] [--unbounded]

An OpenEvolve evaluator that echoes `--echo` metric names (250,000 made one program page
11 MB and the CSV export take 48 s) goes through the host's real parsing (the result
file read by read_result_file, checked by to_result), which keeps MAX_METRICS (256) of
them. Two runs of `--programs` programs are then stored with the project's Archive: one
where each program has the 256 kept metrics, one with 3 metrics, and for each this
measures, median of `--repeat` after one untimed call:
  - `evolve archive export` (write_tables) to CSV, parquet and JSONL: time and bytes;
  - a program's page (GET /programs/<id>) and its JSON (GET /api/programs/<id>) from the
    real web app in process (Starlette's TestClient): time and bytes.
Each figure is also given as the ratio wide/narrow, measured in the same process (the
machine is shared and noisy). --unbounded also stores one program with every echoed
metric (what an archive held before the bound) and times the same. Writes
bench/results/metric_bounds.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from harness import result_path  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from evaluators.bounds import MAX_METRICS  # noqa: E402
from evaluators.harness_result import ProcRun, read_result_file, to_result  # noqa: E402
from evaluators.sandbox import Limits  # noqa: E402
from evolve.archive import Archive, ArchiveReader, ProgramRow  # noqa: E402
from evolve.export.tables import write_tables  # noqa: E402
from evolve.web.app import make_app  # noqa: E402

RESULTS = result_path("metric_bounds")
CODE = "# EVOLVE-BLOCK-START\ndef priority(item, bins):\n    return -bins\n# EVOLVE-BLOCK-END\n"


def echoed_result(n: int) -> tuple[dict[str, float], float, int]:
    """The metrics the host keeps of an evaluation echoing n names, the seconds the
    host's parsing took, and the result file's size."""
    payload = {
        "status": "ok",
        "score": 1.0,
        "metrics": {"combined_score": 1.0, **{f"echo_metric_{i}": i / 7 for i in range(n)}},
    }
    raw = json.dumps(payload).encode()
    with tempfile.TemporaryFile() as f:
        f.write(raw)
        t0 = time.perf_counter()
        data, note = read_result_file(f)
        run = ProcRun(data, 0, False, "", "", 0, note, {"loaded": True})
        result, _ = to_result(run, Limits(), "evaluate()", check_score=True)
        took = time.perf_counter() - t0
    assert len(result.metrics) == min(n + 1, MAX_METRICS), len(result.metrics)
    return result.metrics, took, len(raw)


def store(runs: Path, run_id: str, programs: int, metrics: dict[str, float]) -> str:
    """A finished run of `programs` scored programs with these metrics; the last one's id."""
    a = Archive(runs)
    a.create_run(run_id, "binpack", "problems/binpack", {}, programs)
    pid = ""
    for i in range(programs):
        pid = f"{run_id}-p{i}"
        p = ProgramRow(pid, run_id, "binpack", i, 0, "pending", code=CODE, created_at=1.7e9 + i)
        a.insert_program(p)
        p.status, p.score, p.metrics, p.eval_s = "ok", 1.0 + i / programs, metrics, 0.5
        a.finish_program(p)
    a.set_run_status(run_id, "finished", "iterations done")
    a.close()
    return pid


def median_time(fn: Callable[[], int], repeat: int) -> tuple[float, int]:
    """Median seconds of fn() after one untimed call (templates compiled, caches warm), and
    what its last call returned (a size in bytes)."""
    size = fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        size = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), size


def measure(runs: Path, run_id: str, pid: str, out: Path, repeat: int) -> dict[str, float]:
    reader = ArchiveReader(runs)
    client = TestClient(make_app(runs))
    row: dict[str, float] = {}
    for fmt in ("csv", "parquet", "jsonl"):
        path = out / f"{run_id}.{fmt}"

        def export(path: Path = path, fmt: str = fmt) -> int:
            write_tables(reader, path, fmt, run_id=run_id)
            return path.stat().st_size

        row[f"export_{fmt}_s"], row[f"export_{fmt}_bytes"] = median_time(export, repeat)
    for name, url in (("page", f"/programs/{pid}"), ("api", f"/api/programs/{pid}")):

        def get(url: str = url) -> int:
            r = client.get(url)
            assert r.status_code == 200, (url, r.status_code)
            return len(r.content)

        row[f"{name}_s"], row[f"{name}_bytes"] = median_time(get, repeat)
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--programs", type=int, default=200, help="programs per run")
    ap.add_argument("--echo", type=int, default=250_000, help="metric names the evaluator echoes")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--unbounded", action="store_true", help="also time a program with them all")
    args = ap.parse_args()

    kept, parse_s, result_bytes = echoed_result(args.echo)
    narrow = {"combined_score": 1.0, "bins": 12.0, "excess_pct": 3.5}
    report: dict = {
        "programs": args.programs,
        "echoed_metrics": args.echo,
        "result_file_bytes": result_bytes,
        "host_parse_s": round(parse_s, 4),
        "kept_metrics": len(kept),
        "cpus": os.cpu_count(),
    }
    with tempfile.TemporaryDirectory() as tmp:
        runs, out = Path(tmp) / "runs", Path(tmp) / "out"
        out.mkdir()
        rows = {
            "wide": measure(runs, "wide", store(runs, "wide", args.programs, kept), out, args.repeat),
            "narrow": measure(
                runs, "narrow", store(runs, "narrow", args.programs, narrow), out, args.repeat
            ),
        }
        if args.unbounded:
            every = {f"echo_metric_{i}": i / 7 for i in range(args.echo)}
            rows["unbounded"] = measure(runs, "unbounded", store(runs, "unbounded", 1, every), out, 1)
    report["runs"] = rows
    report["ratio_wide_over_narrow"] = {
        k: round(rows["wide"][k] / rows["narrow"][k], 2) for k in rows["wide"] if rows["narrow"][k]
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2) + "\n")
    print(f"host parse of {args.echo:,} echoed metrics ({result_bytes:,} bytes): "
          f"{parse_s * 1000:.0f} ms, {len(kept)} kept")  # fmt: skip
    print(f"{'':18}" + "".join(f"{name:>14}" for name in rows) + f"{'wide/narrow':>14}")
    for key in rows["wide"]:
        cells = "".join(
            f"{rows[name][key]:>14.4f}" if key.endswith("_s") else f"{rows[name][key]:>14,.0f}"
            for name in rows
        )
        print(f"{key:18}{cells}{report['ratio_wide_over_narrow'].get(key, float('nan')):>14.2f}")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
