"""What every command shares: the usage error and where the runs live."""

from __future__ import annotations

import datetime as dt
import os
import secrets
from pathlib import Path


class UsageError(Exception):
    """Bad input from the user: printed as one line, exit code 2."""


def runs_dir(args) -> Path:
    return Path(getattr(args, "runs_dir", None) or os.environ.get("EVOLVE_RUNS_DIR") or "runs")


def new_run_id(problem: str) -> str:
    return f"{problem}-{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"
