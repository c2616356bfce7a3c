"""Download the eight WfInstances workflows again and verify them against problem.toml.

The problem ships its data in data/: eight WfFormat JSON files copied unchanged
from the WfInstances repository (github.com/wfcommons/WfInstances, LGPL-3.0),
where they sit under pegasus/<family>/ and makeflow/blast/. This script fetches
every file problem.toml's [[data]] lists, from its `url`, or from BASE: a URL
(file:// included) or a folder laid out like the repository (a checkout), or a
flat folder holding the files by name. A file is kept only if its SHA-256
matches; one that does not is never written, and the copy already there stays.

    python problems/dag_scheduling/fetch_data.py [--base URL_OR_DIR] [--data-dir DIR]
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
UPSTREAM_BASE = "https://raw.githubusercontent.com/wfcommons/WfInstances/main"


def repo_path(entry: dict) -> str:
    """Where the file sits in the WfInstances repository, e.g. 'pegasus/montage/montage-...json'."""
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
        help="a URL or folder laid out like the WfInstances repository, or a flat folder "
        f"of the files (default: each file's url in problem.toml, under {UPSTREAM_BASE})",
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
