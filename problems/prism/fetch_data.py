"""Rebuild data/adrs_cases.json from the ADRS Prism evaluator's case generator.

The ADRS case study does not ship its 50 cases as a file: its evaluator.py draws
them in `generate_test_gpu_models` with numpy's global generator seeded 42. This
script reads that evaluator (a URL, file:// included, or a local path), parses
the generator without running it (the seed, the case count and the randint
ranges of the GPU count, model size, request rate and SLO, the models per GPU),
draws the cases with prism_sim.draw_cases (the same numpy stream), writes them
as JSON and keeps the file only if its SHA-256 is the one problem.toml records.

    python problems/prism/fetch_data.py [--url URL_OR_PATH] [--data-dir DIR]
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
if str(HERE.parent.parent) not in sys.path:  # run as a script: the repository root
    sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import prism_sim as sim  # noqa: E402

(DATA,) = tomllib.loads((HERE / "problem.toml").read_text())["data"]  # its path and SHA-256
UPSTREAM_URL = (
    "https://raw.githubusercontent.com/mert-cemri/autoevolve/"
    "d4b77d811740cbfb6a3d536aa323458f56cfe81b/examples_ADRS/prism/evaluator.py"
)
FORMAT_NOTE = (
    "each case: gpu_num GPUs of 80 GB and its models as [name, size GB, req_rate, slo]; "
    "drawn by the ADRS Prism evaluator's generate_test_gpu_models (numpy seed 42)"
)
GENERATOR = "generate_test_gpu_models"
_FIELDS = {"gpu_num": "gpus", "model_size": "size", "req_rate": "rate", "slo": "slo"}


def _ints(call: ast.Call) -> tuple[int, ...]:
    return tuple(ast.literal_eval(a) for a in call.args)


def _callee(call: ast.Call) -> str:
    return ast.unparse(call.func)


def parse_generator(source: str) -> tuple[sim.Family, int]:
    """(family, seed) from the generator's text (never executed)."""
    fn = next(
        (
            n
            for n in ast.walk(ast.parse(source))
            if isinstance(n, ast.FunctionDef) and n.name == GENERATOR
        ),
        None,
    )
    if fn is None:
        raise ValueError(f"no function {GENERATOR} found")
    defaults = dict(
        zip(
            [a.arg for a in fn.args.args][-len(fn.args.defaults) :],
            [ast.literal_eval(d) for d in fn.args.defaults],
            strict=True,
        )
    )
    found: dict = {"cases": defaults.get("num_tests")}
    seed = None
    for node in ast.walk(fn):
        if isinstance(node, ast.Call) and _callee(node).endswith("random.seed"):
            (seed,) = _ints(node)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Call)
            and _callee(node.value).endswith("random.randint")
        ):
            target = ast.unparse(node.targets[0])
            if target in _FIELDS:
                found[_FIELDS[target]] = _ints(node.value)
        elif (
            isinstance(node, ast.Call)
            and _callee(node) == "range"
            and node.args
            and isinstance(node.args[0], ast.BinOp)
            and "gpu_num" in ast.unparse(node.args[0])
        ):
            found["models_per_gpu"] = ast.literal_eval(node.args[0].right)
    missing = [
        k
        for k in ("cases", "gpus", "size", "rate", "slo", "models_per_gpu")
        if found.get(k) is None
    ]
    if seed is None or missing:
        raise ValueError(f"{GENERATOR}: could not read {missing or ['the seed']}")
    return sim.Family(**found), seed


def render(cases: list[sim.Case]) -> bytes:
    """The JSON text, one case per line (the layout the checksum was taken from)."""
    lines = ",\n".join(json.dumps(c.as_json(), separators=(",", ":")) for c in cases)
    return f'{{\n"format": {json.dumps(FORMAT_NOTE)},\n"cases": [\n{lines}\n]\n}}\n'.encode()


def fetch(url: str, data_dir: Path, timeout_s: float = 60.0) -> Path:
    """Read the evaluator, parse, draw, verify, and write data_dir/adrs_cases.json atomically."""
    if os.path.isfile(url):
        source = Path(url).read_text(encoding="utf-8")
    else:
        with urllib.request.urlopen(url, timeout=timeout_s) as resp:
            source = resp.read().decode("utf-8")
    family, seed = parse_generator(source)
    data = render(sim.draw_cases(family, seed))
    digest, want = hashlib.sha256(data).hexdigest(), DATA["sha256"]
    if digest != want:
        raise ValueError(
            f"{url}: the drawn cases have SHA-256 {digest}, expected {want}; "
            "the upstream generator changed"
        )
    target = data_dir / DATA["path"]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--url", default=UPSTREAM_URL, help="the ADRS evaluator.py: a URL or a local path"
    )
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
