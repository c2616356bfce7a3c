"""What every bench/ script repeats: the machine it ran on and where its result JSON goes.

Stdlib only, so scripts that run in a peer's venv may import it too. A script run as
`python bench/NAME.py` finds this module beside it (its folder is first on sys.path).
EVOLVE_BENCH_RESULTS moves every result elsewhere (the smoke test writes to a scratch
folder, so a smoke run never overwrites a measured result).
"""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS_ENV = "EVOLVE_BENCH_RESULTS"


def results_dir() -> Path:
    """bench/results/, or $EVOLVE_BENCH_RESULTS when set."""
    return Path(os.environ.get(RESULTS_ENV) or BENCH / "results")


def result_path(name: str) -> Path:
    """Where the benchmark NAME writes its report: NAME.json in results_dir()."""
    return results_dir() / f"{name}.json"


def cpu_model() -> str | None:
    """The CPU's model name from /proc/cpuinfo (Linux), else what platform says."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def git_commit(root: Path = ROOT) -> str | None:
    """HEAD of the checkout measured, with '+dirty' when its tracked files have changes."""
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10)  # fmt: skip
        if head.returncode != 0:
            return None
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def machine(**extra: Any) -> dict[str, Any]:
    """The machine and code a result came from: timings are only comparable within one."""
    info: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "cores": os.cpu_count(),
        "cores_usable": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu_model": cpu_model(),
        "loadavg": list(os.getloadavg()),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "root": os.geteuid() == 0,
        "git_commit": git_commit(),
    }
    info.update(extra)
    return info


def write_result(name: str, report: dict[str, Any], path: Path | None = None) -> Path:
    """Write report (with a "machine" entry added when it has none) as NAME's result JSON;
    prints where, the line the smoke test looks for."""
    out = path or result_path(name)
    out.parent.mkdir(parents=True, exist_ok=True)
    body = report if "machine" in report else {"machine": machine(), **report}
    out.write_text(json.dumps(body, indent=2, default=repr) + "\n")
    print(f"wrote {out}", flush=True)
    return out
