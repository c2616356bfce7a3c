"""Download DS3's job and SoC files again and verify them against problem.toml.

The problem ships its data in data/: files copied unchanged from the DS3 repository
(github.com/segemena/DS3, GPL-3.0) at a fixed commit, where they sit under config_Jobs/ and
config_SoC/. This script fetches every file problem.toml's [[data]] lists, from its `url`,
or from BASE: a URL (file:// included), a folder laid out like the repository (a checkout),
or a flat folder holding the files by name. A file is kept only if its SHA-256 matches.

    python problems/soc_scheduling/fetch_data.py [--base URL_OR_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import os
import sys
import tomllib
from dataclasses import asdict
from pathlib import Path

from evolve.problem.data import DataFile, fetch_main, fetch_verified

HERE = Path(__file__).resolve().parent
FILES = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # path, url, sha256, splits
UPSTREAM_BASE = (
    "https://raw.githubusercontent.com/segemena/DS3/056c9300c304ba9c4ad7363c14dd47ac2c15a507"
)
HELP = (
    "a URL or folder laid out like the DS3 repository, or a flat folder "
    f"of the files (default: each file's url in problem.toml, under {UPSTREAM_BASE})"
)


def repo_path(entry: dict) -> str:
    """Where the file sits in the DS3 repository, e.g. 'config_Jobs/job_LAG.txt'."""
    url = entry["url"]
    if not url.startswith(UPSTREAM_BASE + "/"):
        raise ValueError(f"{entry['path']}: url {url} is not under {UPSTREAM_BASE}")
    return url[len(UPSTREAM_BASE) + 1 :]


def source_of(entry: dict, base: str | None) -> str:
    """Where to read one file: its url; or BASE/<repository path>; or, for a folder without
    that path, BASE/<file name> (a flat copy)."""
    if base is None:
        return entry["url"]
    if os.path.isdir(base):
        nested = os.path.join(base, repo_path(entry))
        return nested if os.path.isfile(nested) else os.path.join(base, entry["path"])
    return base.rstrip("/") + "/" + repo_path(entry)


def fetch(base: str | None, data_dir: Path) -> list[Path]:
    """Fetch and verify every file; write each atomically. Raises on the first mismatch."""
    files = [DataFile(**e) for e in FILES]
    return fetch_verified(files, data_dir, base, source=lambda f, b: source_of(asdict(f), b))


def main(argv: list[str] | None = None) -> int:
    return fetch_main(argv, __doc__, fetch, HERE / "data", help=HELP)


if __name__ == "__main__":
    sys.exit(main())
