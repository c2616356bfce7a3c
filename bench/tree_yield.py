"""What a call yields on a program of several files against the same program as one file
(issue 38's measure).

    .venv/bin/python bench/tree_yield.py [--model local] [--calls 6] [--seeds 2] [--api-base URL]

problems/dag_modular evolves two modules (policy/ordering.py, policy/mapping.py) that a
fixed policy/__init__.py composes with the fixed policy/helpers.py. Its one-file twin, built
here in a temporary folder, is the same program concatenated into one seed.py: the helpers,
then one EVOLVE block holding both modules' code (their two prepare() renamed
ordering_prepare and mapping_prepare), then the composer; the same evaluator, simulator,
data, splits and notes. Both go through one `evolve bench` (same model, calls, seeds and
data seed), which prints and stores per call the share that gave a valid program, a program
new to the run, and a behaviourally new one (a train score no earlier program had). Writes
bench/results/tree_yield.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from harness import result_path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
MODULAR = ROOT / "problems" / "dag_modular"
POLICY = MODULAR / "seed" / "policy"
EVOLVE = str(Path(sys.executable).with_name("evolve"))


def _block(path: Path, prepare_as: str) -> str:
    """The EVOLVE block's body of one module, its prepare() renamed."""
    text = path.read_text()
    body = text.split("# EVOLVE-BLOCK-START\n", 1)[1].split("# EVOLVE-BLOCK-END", 1)[0]
    return re.sub(r"\bdef prepare\(", f"def {prepare_as}(", body).strip() + "\n"


def _composer() -> str:
    """policy/__init__.py's code, calling the one file's functions instead of its modules'."""
    text = (POLICY / "__init__.py").read_text()
    code = text.split('"""', 2)[2]  # after its docstring
    code = code.replace("from policy import mapping, ordering\n", "")
    code = code.replace("from policy.helpers import Timeline\n", "")
    for old, new in (("ordering.prepare(", "ordering_prepare("), ("mapping.prepare(", "mapping_prepare("),
                     ("ordering.select(", "select("), ("mapping.choose(", "choose(")):  # fmt: skip
        code = code.replace(old, new)
    return code.strip() + "\n"


def one_file_seed() -> str:
    helpers = (POLICY / "helpers.py").read_text().split('"""', 2)[2].strip()
    return (
        '"""DAG list scheduling in one file: the fixed helpers and Timeline, the evolving\n'
        "ordering (which ready task next) and mapping (on which processor), the fixed\n"
        'composer schedule()."""\n\n'
        "import random  # noqa: F401  (seed it: random.Random(0))\n\n"
        "import numpy as np  # noqa: F401\n\n"
        f"{helpers}\n\n\n"
        "# EVOLVE-BLOCK-START\n"
        "# ---- ordering: which ready task goes next ----\n"
        f"{_block(POLICY / 'ordering.py', 'ordering_prepare')}\n\n"
        "# ---- mapping: on which processor ----\n"
        f"{_block(POLICY / 'mapping.py', 'mapping_prepare')}\n\n"
        "# EVOLVE-BLOCK-END\n\n\n"
        f"{_composer()}"
    )


def one_file_problem(root: Path) -> Path:
    """The twin folder, beside a dag_scheduling/dag_sim.py where its `include` looks."""
    twin = root / "dag_onefile"
    twin.mkdir()
    (root / "dag_scheduling").mkdir()
    shutil.copy(ROOT / "problems" / "dag_scheduling" / "dag_sim.py", root / "dag_scheduling")
    shutil.copytree(MODULAR / "data", twin / "data")
    shutil.copy(MODULAR / "evaluator.py", twin)
    toml = (MODULAR / "problem.toml").read_text()
    toml = toml.replace('name = "dag_modular"', 'name = "dag_onefile"')
    toml = toml.replace(
        "as a program of two modules: evolve policy/ordering.py (which ready task goes next) "
        "and policy/mapping.py (on which processor)",
        "as one file: evolve its ordering (which ready task goes next) and its mapping (on "
        "which processor)",
    )
    toml = re.sub(r'(?m)^entry = "policy/__init__.py".*$', 'entry = "seed.py"', toml)
    toml = re.sub(r"(?ms)^\[program\]\n.*?\n\n", "", toml)
    toml = toml.replace(
        'domain_notes = """\n',
        'domain_notes = """\nOne file: ordering.prepare is ordering_prepare, mapping.prepare is '
        "mapping_prepare; select, choose and the helpers are in the same file.\n",
    )
    (twin / "problem.toml").write_text(toml)
    (twin / "seed.py").write_text(one_file_seed())
    return twin


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local")
    ap.add_argument("--api-base")
    ap.add_argument("--calls", type=int, default=6)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--data-seed", default="2023")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tree-yield-"))
    twin = one_file_problem(work)
    check = subprocess.run([EVOLVE, "check", str(twin)], capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"the one-file twin fails check: {check.stderr[-1500:]}")
    cmd = [EVOLVE, "bench", str(MODULAR), str(twin), "--model", args.model, "--calls",
           str(args.calls), "--seeds", str(args.seeds), "--data-seed", args.data_seed,
           "--runs-dir", str(work / "runs"), "--json"]  # fmt: skip
    if args.api_base:
        cmd += ["--api-base", args.api_base]
    r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ})
    if r.returncode != 0:
        raise SystemExit(f"evolve bench failed: {r.stderr[-2000:]}")
    summary = json.loads(r.stdout)
    out = result_path("tree_yield")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"command": cmd[1:], "summary": summary}, indent=1, default=str))
    print(json.dumps(summary, indent=1, default=str)[:6000])
    print(f"written: {out}; runs: {work / 'runs'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
