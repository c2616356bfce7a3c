"""Download the Alibaba GPU trace (2023) files and generate the held-out pod-list variants.

Two files are copied as they are from github.com/alibaba/clusterdata,
`cluster-trace-gpu-v2023/csv/`: the GPU node list and the default pod list.
The three test files are generated from the default pod list by a seeded,
stdlib-only generator (`random.Random`, in pod_variants.py, which also draws a
run's private variants at evaluation time): gen_pod_list_gpushare60.csv (60%
GPU-sharing pods), gen_pod_list_multigpu10.csv (10% multi-GPU pods) and
gen_pod_list_gpuspec33.csv (the default list, 33% of its GPU pods requiring a GPU
model); pod_variants.py says how. Every file is checked against the SHA-256 that
problem.toml records; a mismatch leaves no file behind.

    python problems/gpu_placement/fetch_data.py [--source URL_OR_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import sys
import tomllib
import urllib.request
from pathlib import Path

import pod_variants  # the generator next to this file

from evolve.problem.data import write_atomic

HERE = Path(__file__).resolve().parent
UPSTREAM = (
    "https://raw.githubusercontent.com/alibaba/clusterdata/master/cluster-trace-gpu-v2023/csv/"
)
DOWNLOADED = ("openb_node_list_gpu_node.csv", "openb_pod_list_default.csv")
COLUMNS = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
]
# file -> the variant (pod_variants.RECIPES) it holds
GENERATED = {
    "gen_pod_list_gpushare60.csv": "gpushare",
    "gen_pod_list_multigpu10.csv": "multigpu",
    "gen_pod_list_gpuspec33.csv": "gpuspec",
}


def expected_sha256() -> dict[str, str]:
    entries = tomllib.loads((HERE / "problem.toml").read_text())["data"]
    return {e["path"]: e["sha256"] for e in entries}


def _read(source: str, name: str) -> bytes:
    """One upstream file from a URL prefix (https://, file://) or a local folder."""
    if "://" in source:
        url = source.rstrip("/") + "/" + name
        with urllib.request.urlopen(url, timeout=60) as resp:
            return resp.read()
    return (Path(source) / name).read_bytes()


def _write(rows: list[dict]) -> bytes:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue().encode()


def build(source: str) -> dict[str, bytes]:
    """Every data file's bytes: the downloads, then the generated variants."""
    files = {name: _read(source, name) for name in DOWNLOADED}
    nodes = list(csv.DictReader(io.StringIO(files[DOWNLOADED[0]].decode())))
    pods = list(csv.DictReader(io.StringIO(files[DOWNLOADED[1]].decode())))
    if not pods or list(pods[0]) != COLUMNS:
        raise ValueError(f"{DOWNLOADED[1]}: expected the columns {COLUMNS}")
    for name, variant in GENERATED.items():
        files[name] = _write(pod_variants.published(variant, pods, nodes))
    return files


def fetch(source: str, data_dir: Path) -> list[Path]:
    """Build every file, check each SHA-256, then write them all (or none) into data_dir."""
    want = expected_sha256()
    files = build(source)
    for name, data in files.items():
        got = hashlib.sha256(data).hexdigest()
        if got != want.get(name):
            raise ValueError(f"{name}: SHA-256 {got} is not {want.get(name)} (upstream changed?)")
    for name, data in files.items():
        write_atomic(data_dir / name, data)
    return [data_dir / name for name in files]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", default=UPSTREAM, help="URL prefix or folder of the upstream CSVs")
    ap.add_argument("--data-dir", default=str(HERE / "data"))
    args = ap.parse_args(argv)
    try:
        for path in fetch(args.source, Path(args.data_dir)):
            print(f"{path}: SHA-256 verified")
    except (OSError, ValueError) as e:
        print(f"fetch_data: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
