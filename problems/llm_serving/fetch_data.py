"""Download the llm_serving data files again and verify them against problem.toml.

The problem ships its data in data/, copied unchanged from upstream: the Azure LLM
inference traces 2023 (AzurePublicDataset, `data/AzureLLMInferenceTrace_code.csv` and
`_conv.csv`, CC-BY-4.0) and splitwise-sim's measured performance model
(`data/perf_model.csv`, MIT). This script fetches every file problem.toml's [[data]]
lists, from its `url` or from BASE/<path> (a URL, file:// included, or a local folder
holding the files under their names here), and keeps a file only if its SHA-256
matches; a file that does not match is never written, and the copy already there is kept.

    python problems/llm_serving/fetch_data.py [--base URL_OR_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

from evolve.problem.data import DataFile, fetch_main, fetch_verified, mirror_source

HERE = Path(__file__).resolve().parent
FILES = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # path, url, sha256, splits
HELP = (
    "a URL or folder holding the files under their names in data/ "
    "(default: each file's url in problem.toml)"
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
