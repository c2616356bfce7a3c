"""Download the Alibaba GPU trace (2023) files and generate the held-out pod-list variants.

Two files are copied as they are from github.com/alibaba/clusterdata,
`cluster-trace-gpu-v2023/csv/`: the GPU node list and the default pod list.
The three test files are generated from the default pod list by a seeded,
stdlib-only generator (`random.Random`), in the spirit of the trace's own
variants (openb_pod_list_gpushare*, multigpu*, gpuspec*):

- gen_pod_list_gpushare60.csv: 60% of the pods are GPU-sharing pods (one GPU,
  gpu_milli < 1000), the others drawn from the rest of the list.
- gen_pod_list_multigpu10.csv: 10% of the pods are multi-GPU pods (2 to 8 GPUs).
- gen_pod_list_gpuspec33.csv: the default list, but 33% of its GPU pods require
  a GPU model (G2, G3, P100, T4 or V100M16|V100M32, drawn in proportion to the
  cluster's GPUs of that model among the models whose nodes have enough GPUs).

A resampled list keeps the default list's creation times slot by slot: slot k
(the k-th pod by creation time) gets a pod drawn with replacement from the
favoured class with probability p, else from the other pods; the drawn pod
keeps its cpu, memory, GPU demand and lifetime (deletion - creation), and is
renamed gen-<variant>-<k>. Every file is checked against the SHA-256 that
problem.toml records; a mismatch leaves no file behind.

    python problems/gpu_placement/fetch_data.py [--source URL_OR_DIR] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import random
import sys
import tomllib
import urllib.request
from pathlib import Path

from evolve.data import write_atomic

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
# file -> (seed, favoured class, share of slots)
RESAMPLED = {
    "gen_pod_list_gpushare60.csv": (2023_06, "gpushare", 0.60),
    "gen_pod_list_multigpu10.csv": (2023_10, "multigpu", 0.10),
}
SPEC_FILE, SPEC_SEED, SPEC_SHARE = "gen_pod_list_gpuspec33.csv", 2023_33, 0.33
SPECS = ("G2", "G3", "P100", "T4", "V100M16|V100M32")


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


def _classes(row: dict) -> str:
    n, m = int(row["num_gpu"]), int(row["gpu_milli"])
    if n >= 2:
        return "multigpu"
    if n == 1 and m < 1000:
        return "gpushare"
    return "other"


def _write(rows: list[dict]) -> bytes:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue().encode()


def resample(pods: list[dict], variant: str, seed: int, share: float) -> bytes:
    rng = random.Random(seed)
    favoured = [r for r in pods if _classes(r) == variant]
    rest = [r for r in pods if _classes(r) != variant]
    slots = sorted(pods, key=lambda r: int(r["creation_time"]))
    out = []
    for k, slot in enumerate(slots):
        pod = rng.choice(favoured if rng.random() < share else rest)
        t = int(slot["creation_time"])
        life = int(pod["deletion_time"]) - int(pod["creation_time"])
        out.append(
            {
                **pod,
                "name": f"gen-{variant}-{k:04d}",
                "creation_time": t,
                "deletion_time": t + life,
                "scheduled_time": t,
            }
        )
    return _write(out)


def constrain(pods: list[dict], nodes: list[dict], seed: int, share: float) -> bytes:
    rng = random.Random(seed)
    gpus = {spec: 0 for spec in SPECS}
    most = {spec: 0 for spec in SPECS}  # the most GPUs one node of the spec has
    for node in nodes:
        for spec in SPECS:
            if node["model"] in spec.split("|"):
                gpus[spec] += int(node["gpu"])
                most[spec] = max(most[spec], int(node["gpu"]))
    out = []
    for pod in pods:
        pod = dict(pod)
        n = int(pod["num_gpu"])
        if n > 0 and rng.random() < share:
            specs = [s for s in SPECS if most[s] >= n]
            pod["gpu_spec"] = rng.choices(specs, weights=[gpus[s] for s in specs])[0]
        out.append(pod)
    return _write(out)


def build(source: str) -> dict[str, bytes]:
    """Every data file's bytes: the downloads, then the generated variants."""
    files = {name: _read(source, name) for name in DOWNLOADED}
    nodes = list(csv.DictReader(io.StringIO(files[DOWNLOADED[0]].decode())))
    pods = list(csv.DictReader(io.StringIO(files[DOWNLOADED[1]].decode())))
    if not pods or list(pods[0]) != COLUMNS:
        raise ValueError(f"{DOWNLOADED[1]}: expected the columns {COLUMNS}")
    for name, (seed, variant, share) in RESAMPLED.items():
        files[name] = resample(pods, variant, seed, share)
    files[SPEC_FILE] = constrain(pods, nodes, SPEC_SEED, SPEC_SHARE)
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
