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

import argparse
import hashlib
import os
import sys
import tempfile
import tomllib
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # path, url, sha256, splits


def source_of(entry: dict, base: str | None) -> str:
    """Where to read one file: BASE/<path> if a base is given, else the entry's url."""
    if base is None:
        return entry["url"]
    if os.path.isdir(base):
        return os.path.join(base, entry["path"])
    return base.rstrip("/") + "/" + entry["path"]


def read(source: str, timeout_s: float = 60.0) -> bytes:
    if os.path.isfile(source):
        return Path(source).read_bytes()
    with urllib.request.urlopen(source, timeout=timeout_s) as resp:
        return resp.read()


def fetch(base: str | None, data_dir: Path) -> list[Path]:
    """Fetch and verify every file; write each atomically. Raises on the first mismatch."""
    written = []
    for entry in FILES:
        source = source_of(entry, base)
        data = read(source)
        digest = hashlib.sha256(data).hexdigest()
        if digest != entry["sha256"]:
            raise ValueError(
                f"{source}: SHA-256 {digest}, expected {entry['sha256']}; the upstream file changed"
            )
        target = data_dir / entry["path"]
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, target)
        written.append(target)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--base",
        default=None,
        help="a URL or folder holding the files under their names in data/ "
        "(default: each file's url in problem.toml)",
    )
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    try:
        for path in fetch(args.base, args.data_dir):
            print(path)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
