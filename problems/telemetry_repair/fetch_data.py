"""Download the ADRS telemetry snapshots and split them into the train and test files.

The upstream file (ADRS repository, openevolve/examples/ADRS/telemetry_repair/
ref_data/evaluation_data.csv, Apache-2.0) holds 40 Abilene snapshots, one CSV
line each. Train gets the 30 snapshots the ADRS evaluator samples
(`random.seed(42); random.sample(rows, 30)`), in that order, so the case
study's fault stream replays exactly; test gets the other 10, in file order.
Lines are copied byte for byte (header first); each file is kept only if its
SHA-256 matches problem.toml.

    python problems/telemetry_repair/fetch_data.py [--url URL_OR_PATH] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import sys
import tempfile
import tomllib
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
UPSTREAM_URL = (
    "https://raw.githubusercontent.com/UCB-ADRS/ADRS/main/"
    "openevolve/examples/ADRS/telemetry_repair/ref_data/evaluation_data.csv"
)
UPSTREAM_SHA256 = "4fa7656d67d1d67d2149d6e7828b65f2a7b50a0f425daf2c2b99c0e047adc2b5"
SNAPSHOTS, TRAIN_SIZE, ADRS_SEED = 40, 30, 42
TRAIN_FILE, TEST_FILE = "telemetry_train.csv", "telemetry_test.csv"


def train_rows() -> list[int]:
    """Row positions (0-based, data lines) of the train split, in the ADRS evaluator's order."""
    return random.Random(ADRS_SEED).sample(range(SNAPSHOTS), TRAIN_SIZE)


def split(raw: bytes) -> dict[str, bytes]:
    """{file name: bytes}: the header line plus the split's data lines, unchanged."""
    lines = raw.splitlines(keepends=True)
    header, rows = lines[0], lines[1:]
    if len(rows) != SNAPSHOTS:
        raise ValueError(f"expected {SNAPSHOTS} snapshot lines, got {len(rows)}")
    train = train_rows()
    test = [i for i in range(SNAPSHOTS) if i not in set(train)]
    return {
        TRAIN_FILE: header + b"".join(rows[i] for i in train),
        TEST_FILE: header + b"".join(rows[i] for i in test),
    }


def expected_sha256() -> dict[str, str]:
    entries = tomllib.loads((HERE / "problem.toml").read_text())["data"]
    return {e["path"]: e["sha256"] for e in entries}


def _read(url: str, timeout_s: float) -> bytes:
    if os.path.isfile(url):
        return Path(url).read_bytes()
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return resp.read()


def _write(target: Path, data: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)


def fetch(url: str, data_dir: Path, timeout_s: float = 60.0) -> list[Path]:
    """Download (a URL, file:// or a local path), verify, split, verify, write atomically."""
    raw = _read(url, timeout_s)
    digest = hashlib.sha256(raw).hexdigest()
    if digest != UPSTREAM_SHA256:
        raise ValueError(
            f"{url}: SHA-256 {digest}, expected {UPSTREAM_SHA256}; the upstream file changed"
        )
    parts, want = split(raw), expected_sha256()
    for name, data in parts.items():
        got = hashlib.sha256(data).hexdigest()
        if got != want[name]:
            raise ValueError(f"{name}: SHA-256 {got}, expected {want[name]} (problem.toml)")
    written = []
    for name, data in parts.items():
        _write(data_dir / name, data)
        written.append(data_dir / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", default=UPSTREAM_URL, help="evaluation_data.csv: a URL or a local path"
    )
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    try:
        for path in fetch(args.url, args.data_dir):
            print(path)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
