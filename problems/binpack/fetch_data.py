"""Rebuild data/funsearch_or3_weibull5k.json from FunSearch's bin-packing notebook.

The held-out splits read `funsearch_or3_weibull5k.json` from the problem's data
folder. That file is an extraction: FunSearch's notebook
(google-deepmind/funsearch, bin_packing/bin_packing.ipynb) holds its two
datasets as Python literals in a code cell, `datasets['OR3'] = {...}` and
`datasets['Weibull 5k'] = {...}`. This script reads the notebook (a URL,
file:// included, or a local path), parses those assignments without running
any of its code, writes the datasets as JSON (item sizes and capacities as
floats, `json.dumps` layout) and refuses to keep the file if its SHA-256 is
not the one problem.toml records.

    python problems/binpack/fetch_data.py [--url URL_OR_PATH] [--data-dir DIR]
"""

from __future__ import annotations

import ast
import hashlib
import json
import sys
import tomllib
from pathlib import Path

from evolve.problem.data import fetch_main, read_source, write_atomic

HERE = Path(__file__).resolve().parent
(DATA,) = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # its path and SHA-256
UPSTREAM_URL = (
    "https://raw.githubusercontent.com/google-deepmind/funsearch/main/bin_packing/bin_packing.ipynb"
)
DATASETS = ("OR3", "Weibull 5k")  # the notebook's keys, in the file's order


def _dataset_assignment(node: ast.stmt) -> str | None:
    """'OR3' for a statement `datasets['OR3'] = ...`, else None."""
    if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
        return None
    target = node.targets[0]
    if not (
        isinstance(target, ast.Subscript)
        and isinstance(target.value, ast.Name)
        and target.value.id == "datasets"
        and isinstance(target.slice, ast.Constant)
    ):
        return None
    return target.slice.value if isinstance(target.slice.value, str) else None


def _code_cells(notebook: dict) -> list[str]:
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        raise ValueError("not a Jupyter notebook: no 'cells' list")
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            out.append("".join(src) if isinstance(src, list) else str(src))
    return out


def _as_instance(name: str, key: str, inst: object) -> dict:
    """One instance with the file's types: capacity and items as floats, num_items an int."""
    if not (isinstance(inst, dict) and set(inst) == {"capacity", "num_items", "items"}):
        raise ValueError(f"{name}/{key}: expected capacity, num_items and items")
    items = inst["items"]
    if not (
        isinstance(items, list)
        and len(items) == inst["num_items"]
        and all(isinstance(x, (int, float)) and x > 0 for x in items)
    ):
        raise ValueError(f"{name}/{key}: items must be num_items positive numbers")
    return {
        "capacity": float(inst["capacity"]),
        "num_items": int(inst["num_items"]),
        "items": [float(x) for x in items],
    }


def extract(notebook_text: str) -> dict[str, dict[str, dict]]:
    """{"OR3": {"u500_00": {...}, ...}, "Weibull 5k": {...}} from the notebook's text (never run)."""
    found: dict[str, dict] = {}
    for source in _code_cells(json.loads(notebook_text)):
        lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
        try:
            tree = ast.parse("\n".join(lines))
        except SyntaxError:
            continue  # a cell of notebook-only syntax holds no dataset
        for node in tree.body:
            name = _dataset_assignment(node)
            if name in DATASETS:
                value = ast.literal_eval(node.value)
                if not isinstance(value, dict):
                    raise ValueError(f"datasets[{name!r}]: expected a dict of instances")
                found[name] = {k: _as_instance(name, k, v) for k, v in value.items()}
    missing = [n for n in DATASETS if n not in found]
    if missing:
        raise ValueError(f"no datasets[{missing[0]!r}] = {{...}} assignment in the notebook")
    return {n: found[n] for n in DATASETS}


def render(datasets: dict[str, dict[str, dict]]) -> bytes:
    """The JSON text whose SHA-256 problem.toml records (json.dumps' default layout)."""
    return json.dumps(datasets).encode()


def fetch(url: str, data_dir: Path, timeout_s: float = 60.0) -> Path:
    """Read the notebook, extract, verify, and write data_dir/funsearch_or3_weibull5k.json atomically."""
    data = render(extract(read_source(url, timeout_s).decode("utf-8")))
    digest, want = hashlib.sha256(data).hexdigest(), DATA["sha256"]
    if digest != want:
        raise ValueError(
            f"{url}: the extracted datasets have SHA-256 {digest}, expected "
            f"{want}; the upstream notebook changed"
        )
    write_atomic(data_dir / DATA["path"], data)
    return data_dir / DATA["path"]


def main(argv: list[str] | None = None) -> int:
    return fetch_main(
        argv,
        __doc__,
        lambda url, data_dir: [fetch(url, data_dir)],
        HERE / "data",
        flag="--url",
        default=UPSTREAM_URL,
        help="bin_packing.ipynb: a URL or a local path",
    )


if __name__ == "__main__":
    sys.exit(main())
