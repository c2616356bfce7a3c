"""A run's `--env NAME=VALUE` values: kept beside the archive, never in it.

The archive keeps a run's settings so `resume` needs only its id, but what it holds is shown
(`archive runs --json`, the web view, exports) and copied around; an `--env` value is often a
token. So the stored settings name each variable only, and the values given on the command
line go to `secrets/` in the runs folder (one file per run, readable by its owner alone),
from which `resume` takes them back. A NAME given alone is read from the environment again
at every start, as before; so is a value whose file is gone.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from pathlib import Path

FOLDER = "secrets"


def names(entries: Iterable[str]) -> tuple[str, ...]:
    """The stored form: each entry's NAME, its value dropped."""
    return tuple(e.partition("=")[0] for e in entries)


def _file(runs_dir: Path, run_id: str) -> Path:
    digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return runs_dir / FOLDER / f"{digest}.json"


def keep(runs_dir: Path, run_id: str, entries: Iterable[str]) -> None:
    """Write the values of the NAME=VALUE entries (if any), private to this user."""
    values = dict(e.split("=", 1) for e in entries if "=" in e)
    if not values:
        return
    path = _file(runs_dir, run_id)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump({"run_id": run_id, "env": values}, f)
    os.replace(tmp, path)


def restore(runs_dir: Path, run_id: str, stored: Iterable[str]) -> tuple[str, ...]:
    """The run's entries as given: NAME=VALUE where its value was kept, else NAME (read
    from the environment again). An unreadable file keeps nothing."""
    try:
        data = json.loads(_file(runs_dir, run_id).read_text(encoding="utf-8"))
        kept = data["env"] if data.get("run_id") == run_id else {}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        kept = {}
    out = []
    for entry in stored:
        name = entry.partition("=")[0]
        value = kept.get(name) if isinstance(kept, dict) else None
        out.append(f"{name}={value}" if isinstance(value, str) else entry)
    return tuple(out)
