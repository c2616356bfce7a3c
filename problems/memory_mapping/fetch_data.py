"""Download MiniMalloc's eleven "challenging" instances again and verify them against problem.toml.

The problem ships its data in data/: eleven CSV files copied unchanged from Google's
MiniMalloc repository (github.com/google/minimalloc, Apache-2.0), where they sit under
benchmarks/challenging/. This script fetches every file problem.toml's [[data]] lists,
from its `url` (a raw URL pinned to one commit), or from BASE: a URL (file:// included)
or a folder laid out like the repository (a checkout), or a flat folder holding the files
by name. A file is kept only if its SHA-256 matches; one that does not is never written,
and the copy already there stays.

    python problems/memory_mapping/fetch_data.py [--base URL_OR_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

from evolve.problem.data import DataFile, fetch_main, fetch_verified

HERE = Path(__file__).resolve().parent
FILES = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # path, url, sha256, splits
COMMIT = "9f5cf810fec4494df473c23cffd0567989e81b69"
UPSTREAM_BASE = f"https://raw.githubusercontent.com/google/minimalloc/{COMMIT}"
HELP = (
    "a URL or folder laid out like the MiniMalloc repository, or a flat folder "
    f"of the files (default: each file's url in problem.toml, under {UPSTREAM_BASE})"
)


def repo_path(url: str) -> str:
    """Where the file sits in the repository, e.g. 'benchmarks/challenging/A.1048576.csv'."""
    if not url.startswith(UPSTREAM_BASE + "/"):
        raise ValueError(f"url {url} is not under {UPSTREAM_BASE}")
    return url[len(UPSTREAM_BASE) + 1 :]


def source_of(f: DataFile, base: str | None) -> str:
    """Where to read one file: its url; or BASE/<repository path>; or, for a folder without
    that path, BASE/<file name> (a flat copy)."""
    if f.url is None:
        raise ValueError(f"{f.path}: no url in problem.toml")
    if base is None:
        return f.url
    if os.path.isdir(base):
        nested = os.path.join(base, repo_path(f.url))
        return nested if os.path.isfile(nested) else os.path.join(base, f.path)
    return base.rstrip("/") + "/" + repo_path(f.url)


def fetch(base: str | None, data_dir: Path) -> list[Path]:
    """Fetch and verify every file; write each atomically. Raises on the first mismatch."""
    files = [DataFile(**e) for e in FILES]
    return fetch_verified(files, data_dir, base, source=source_of)


def main(argv: list[str] | None = None) -> int:
    return fetch_main(argv, __doc__, fetch, HERE / "data", help=HELP)


if __name__ == "__main__":
    sys.exit(main())
