"""Rebuild data/adrs_workloads.json from the ADRS repository's workloads.py.

The train split reads `adrs_workloads.json` from the problem's data folder. That
file is an extraction: the ADRS case study ships its three workloads as Python
constants (WORKLOAD_1..3, each a JSON object of "txnN": "ops") in
openevolve/examples/ADRS/txn_scheduling/workloads.py. This script reads that
file (a URL, file:// included, or a local path), parses it without running it,
writes the JSON in the exact layout whose SHA-256 problem.toml records, and
refuses to keep it if the checksum differs.

    python problems/txn_scheduling/fetch_workloads.py [--url URL_OR_PATH] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import sys
import tempfile
import tomllib
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
(DATA,) = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # its path and SHA-256
UPSTREAM_URL = (
    "https://raw.githubusercontent.com/UCB-ADRS/ADRS/main/"
    "openevolve/examples/ADRS/txn_scheduling/workloads.py"
)
FORMAT_NOTE = ("each workload maps txn id -> space-separated ops: r-KEY read, w-KEY write, "
               "* non-conflicting op; each op takes one time unit")


def extract(source: str) -> dict[str, dict[str, str]]:
    """{"WORKLOAD_1": {"txn0": "w-17 r-5 ...", ...}, ...} from workloads.py's text (never executed)."""
    found: dict[str, dict[str, str]] = {}
    for node in ast.parse(source).body:
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id.startswith("WORKLOAD_")):
            continue
        value = ast.literal_eval(node.value)
        txns = json.loads(value) if isinstance(value, str) else value
        if not isinstance(txns, dict) or not all(isinstance(v, str) for v in txns.values()):
            raise ValueError(f"{node.targets[0].id}: expected a JSON object of txn id -> ops")
        found[node.targets[0].id] = txns
    if not found:
        raise ValueError("no WORKLOAD_<n> constants found")
    return dict(sorted(found.items(), key=lambda kv: int(kv[0].split("_")[1])))


def render(workloads: dict[str, dict[str, str]]) -> bytes:
    """The JSON text, one transaction per line (the layout the checksum was taken from)."""
    d = json.dumps
    blocks = []
    for name, txns in workloads.items():
        lines = ",\n".join(f"{d(t)}: {d(ops)}" for t, ops in txns.items())
        blocks.append(f"{d(name)}: {{\n{lines}\n}}")
    body = ",\n".join(blocks)
    return f'{{\n"format": {d(FORMAT_NOTE)},\n"workloads": {{\n{body}\n}}\n}}'.encode()


def fetch(url: str, data_dir: Path, timeout_s: float = 60.0) -> Path:
    """Read workloads.py, extract, verify, and write data_dir/adrs_workloads.json atomically."""
    if os.path.isfile(url):
        source = Path(url).read_text(encoding="utf-8")
    else:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            source = resp.read().decode("utf-8")
    data = render(extract(source))
    digest, want = hashlib.sha256(data).hexdigest(), DATA["sha256"]
    if digest != want:
        raise ValueError(f"{url}: the extracted workloads have SHA-256 {digest}, expected "
                         f"{want}; the upstream file changed")
    target = data_dir / DATA["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default=UPSTREAM_URL, help="workloads.py: a URL or a local path")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    try:
        print(fetch(args.url, args.data_dir))
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
