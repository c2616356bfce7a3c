"""Download the Cloudcast data files again and verify them against problem.toml.

The problem ships its data in data/ (copied unchanged from the ADRS Cloudcast case
study: profiles/cost.csv, profiles/throughput.csv and examples/config/*.json). This
script fetches every file problem.toml's [[data]] lists, from its `url` or from
BASE/<path> (a URL, file:// included, or a local folder laid out like the ADRS
benchmark's), and keeps a file only if its SHA-256 matches; a file that does not match
is never written, and the copy already there is kept.

    python problems/cloudcast/fetch_data.py [--base URL_OR_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from evolve.problem.data import DataFile, fetch_main, fetch_verified, mirror_source

HERE = Path(__file__).resolve().parent
FILES = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # path, url, sha256, splits
UPSTREAM_BASE = "https://huggingface.co/datasets/f20180301/adrs-data/resolve/main/cloudcast"
HELP = (
    "a URL or folder holding profiles/ and examples/config/ "
    f"(default: each file's url in problem.toml, under {UPSTREAM_BASE})"
)


def source_of(entry: dict, base: str | None) -> str:
    """Where to read one file: BASE/<path> if a base is given, else the entry's url."""
    return mirror_source(DataFile(**entry), base)


def fetch(base: str | None, data_dir: Path) -> list[Path]:
    """Fetch and verify every file; write each atomically. Raises on the first mismatch."""
    return fetch_verified([DataFile(**e) for e in FILES], data_dir, base)


def main(argv: list[str] | None = None) -> int:
    return fetch_main(argv, __doc__, fetch, HERE / "data", help=HELP)


if __name__ == "__main__":
    sys.exit(main())
