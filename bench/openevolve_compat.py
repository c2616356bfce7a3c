"""OpenEvolve folders scored by OpenEvolve 0.4.1's own Evaluator and by `evolve eval`.

    .venv/bin/python bench/openevolve_compat.py [--only NAME ...] [FOLDER ...]
        [--peer-examples DIR [--examples NAME ...]] [--sandbox local|docker|both]
        [--openevolve-venv PATH] [--reference-runs N] [--noisy-runs N] [--keep] [--timeout S]

The folders: every OpenEvolve folder among our fixtures (tests/fixtures/openevolve/*,
openevolve_rust_adaptive_sort, openevolve_binpack), the FOLDERs
given, and with --peer-examples a few of OpenEvolve's own examples, unchanged, from a
checkout of its repository (DIR is the checkout or its examples/ folder). The programs of a
folder: its initial_program (any suffix) and a better_program.py or best_program.py beside
it. The config: config.yaml, else the first config_phase_*.yaml (OpenEvolve's users pass
it with --config; `evolve eval` gets the same --config).

  openevolve  OpenEvolve 0.4.1 in its own venv, started in a fresh copy of the folder as
              openevolve-run users do: `Evaluator(config.evaluator, "evaluator.py",
              suffix=config.file_suffix).evaluate_program(code)` (the cascade and
              evaluator_args as config says), then `get_fitness_score(metrics,
              config.database.feature_dimensions)`. Run --reference-runs times (default 2),
              and where those differ, --noisy-runs in all (default 5), so a folder whose
              own score is noisy (timing, an unseeded random search) shows its spread.
  local       `evolve eval FOLDER PROGRAM --json --sandbox local`, in a fresh copy.
  docker      the same with `--sandbox docker`; ERROR with the one-line reason where there
              is no Docker engine or no sandbox image (`evolve sandbox build`).

A row AGREEs when every evolve score equals OpenEvolve's within 1e-9 (relative), or, where
OpenEvolve's own runs differ, lies within their spread widened by it; DIFFERs otherwise;
reads ERROR when a column has no score (the reason column says why). The reference venv
(default ~/.cache/evolve-bench/openevolve-0.4.1) is made on first use: `python3 -m venv`,
`pip install openevolve==0.4.1` and what the folders import (pandas, scipy, networkx, each
requirements.txt); that needs PyPI once. Exit status 1 when a row DIFFERs or has an ERROR.
Writes bench/results/openevolve_compat.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import result_path  # noqa: E402
from peer_common import (  # noqa: E402
    REPO,
    SANDBOXES,
    Cell,
    clean_env,
    docker_reason,
    ensure_venv,
    evolve_eval,
    last_line,
    one_line,
    print_table,
    run,
    verdict,
)

FIXTURES = REPO / "tests" / "fixtures"
RESULTS = result_path("openevolve_compat")
VERSION = "0.4.1"
DEFAULT_VENV = Path.home() / ".cache" / "evolve-bench" / f"openevolve-{VERSION}"
# OpenEvolve's examples that score on CPU, offline, with no model at evaluation time.
EXAMPLES = ("circle_packing", "circle_packing_with_artifacts", "k_module_problem",
            "function_minimization")  # fmt: skip
EXTRA_PROGRAMS = ("better_program.py", "best_program.py")
FIXTURE_ENV = {"needs_env": {"FIXTURE_MODE": "fast"}}  # variables a fixture reads
PIP = ("pandas", "scipy", "networkx")  # what the fixtures import beyond requirements.txt


@dataclass
class Folder:
    name: str
    path: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def config(self) -> str | None:
        """The config file OpenEvolve's user would run it with."""
        if (self.path / "config.yaml").is_file():
            return "config.yaml"
        phases = sorted(p.name for p in self.path.glob("config_phase_*.yaml"))
        return phases[0] if phases else None

    def programs(self) -> list[str]:
        seeds = sorted(p.name for p in self.path.glob("initial_program.*"))
        return seeds[:1] + [p for p in EXTRA_PROGRAMS if (self.path / p).is_file()]


def our_fixtures() -> list[Folder]:
    paths = sorted(p for p in (FIXTURES / "openevolve").iterdir() if p.is_dir())
    paths += [FIXTURES / "openevolve_rust_adaptive_sort", FIXTURES / "openevolve_binpack"]
    return [Folder(p.name, p, FIXTURE_ENV.get(p.name, {})) for p in paths]


def peer_examples(root: Path, names: list[str]) -> list[Folder]:
    base = root / "examples" if (root / "examples").is_dir() else root
    missing = [n for n in names if not (base / n / "evaluator.py").is_file()]
    if missing:
        sys.exit(f"--peer-examples {root}: no {', '.join(missing)} with an evaluator.py there")
    return [Folder(f"examples/{n}", base / n) for n in names]


# Run by the reference venv's python in the folder's copy: OpenEvolve's own evaluation.
DRIVER = """
import asyncio, json, logging, os, sys
logging.disable(logging.INFO)
from openevolve.config import Config, load_config
from openevolve.evaluator import Evaluator
from openevolve.utils.metrics_utils import get_fitness_score
program, config_file, out = sys.argv[1:4]
config = load_config(config_file) if config_file else Config()
config.evaluator.max_retries = 0  # a failure is reported, not retried after a second's sleep
evaluator = Evaluator(config.evaluator, os.path.abspath("evaluator.py"), suffix=config.file_suffix)
with open(program) as f:
    code = f.read()
metrics = asyncio.run(evaluator.evaluate_program(code, program_id="bench"))
artifacts = evaluator.get_pending_artifacts("bench") or {}
score = get_fitness_score(metrics, config.database.feature_dimensions)
def plain(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else repr(v)
with open(out, "w") as f:
    json.dump({"score": score, "metrics": {str(k): plain(v) for k, v in metrics.items()},
               "artifacts": {str(k): plain(v) for k, v in artifacts.items()}}, f)
"""


class Bench:
    def __init__(self, args: argparse.Namespace, folders: list[Folder]):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="openevolve-compat-"))
        self.venv = Path(args.openevolve_venv).expanduser()
        self.venv_py: Path | None = None
        self.venv_error: str | None = None
        reqs = [a for f in folders if (f.path / "requirements.txt").is_file()
                for a in ("-r", str(f.path / "requirements.txt"))]  # fmt: skip
        try:
            self.venv_py = ensure_venv(self.venv, "openevolve", VERSION, *PIP, *reqs)
        except RuntimeError as e:
            self.venv_error = str(e)
            print(self.venv_error, file=sys.stderr)
        wanted = SANDBOXES if args.sandbox == "both" else (args.sandbox,)
        self.sandboxes = {s: None if s in wanted else "not asked" for s in SANDBOXES}
        if "docker" in wanted:
            self.sandboxes["docker"] = docker_reason()
        self.count = 0

    def copy(self, folder: Folder) -> Path:
        self.count += 1
        dest = self.work / f"{self.count:03d}-{folder.path.name}"
        shutil.copytree(folder.path, dest, ignore=shutil.ignore_patterns("__pycache__", "target"))
        return dest

    def openevolve(self, folder: Folder, program: str) -> Cell:
        if self.venv_py is None:
            return Cell(error=self.venv_error or "no reference venv")
        copy = self.copy(folder)
        out = copy.parent / f"{copy.name}.openevolve.json"
        cmd = [str(self.venv_py), "-c", DRIVER, program, folder.config or "", str(out)]
        r = run(cmd, copy, clean_env(folder.env), self.args.timeout)
        if isinstance(r, str):
            return Cell(error=r)
        if r.returncode != 0 or not out.is_file():
            return Cell(error=f"the driver failed: {last_line(r.stderr)}")
        got = json.loads(out.read_text())
        arts, metrics = got["artifacts"], got["metrics"]
        failed = "failure_stage" in arts or metrics.get("timeout") is True
        if failed or metrics == {"error": 0.0}:
            why = arts.get("error_message") or arts.get("stderr") or arts.get("stage2_stderr")
            where = arts.get("failure_stage", "evaluation")
            return Cell(error=f"failed in {where}: {one_line(str(why or metrics))}")
        return Cell(score=float(got["score"]), valid=True)

    def evolve(self, folder: Folder, program: str, sandbox: str) -> Cell:
        if self.sandboxes[sandbox] == "not asked":
            return Cell(skipped="not asked")
        if self.sandboxes[sandbox]:
            return Cell(error=self.sandboxes[sandbox])
        copy = self.copy(folder)
        extra = [a for k, v in folder.env.items() for a in ("--env", f"{k}={v}")]
        if folder.config and folder.config != "config.yaml":
            extra += ["--config", folder.config]
        return evolve_eval(copy, copy / program, sandbox, extra, self.args.timeout)

    def row(self, folder: Folder, program: str) -> dict:
        print(f"{folder.name}/{program} ...", file=sys.stderr, flush=True)
        refs = [self.openevolve(folder, program) for _ in range(self.args.reference_runs)]
        if len({c.score for c in refs}) > 1:  # noisy: a wider sample of its spread
            refs += [
                self.openevolve(folder, program) for _ in range(self.args.noisy_runs - len(refs))
            ]
        ours = {s: self.evolve(folder, program, s) for s in SANDBOXES}
        v, why = verdict(refs, ours, "openevolve")
        return {"folder": folder.name, "program": program, "config": folder.config,
                "openevolve": refs, **ours, "verdict": v, "reason": why}  # fmt: skip


def show_refs(refs: list[Cell]) -> str:
    if any(c.error for c in refs):
        return "ERROR"
    scores = sorted(c.score for c in refs if c.score is not None)
    if len(set(scores)) > 1:
        return f"{scores[0]:.6g}..{scores[-1]:.6g} ({len(refs)} runs)"
    return refs[0].show()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path, metavar="FOLDER",
                    help="more OpenEvolve folders to score")  # fmt: skip
    ap.add_argument("--only", nargs="+", metavar="NAME",
                    help="of our fixtures, only these (default all; `none` for none)")  # fmt: skip
    ap.add_argument("--peer-examples", type=Path, metavar="DIR",
                    help="a checkout of OpenEvolve's repository (or its examples/)")  # fmt: skip
    ap.add_argument("--examples", nargs="+", default=list(EXAMPLES), metavar="NAME",
                    help=f"which of its examples (default {' '.join(EXAMPLES)})")  # fmt: skip
    ap.add_argument("--sandbox", choices=(*SANDBOXES, "both"), default="both",
                    help="where `evolve eval` runs (default both: two columns)")  # fmt: skip
    ap.add_argument("--openevolve-venv", default=str(DEFAULT_VENV), metavar="PATH",
                    help=f"a venv with openevolve=={VERSION} (made when missing)")  # fmt: skip
    ap.add_argument("--reference-runs", type=int, default=2, metavar="N",
                    help="OpenEvolve's evaluation of each program, N times (default 2)")  # fmt: skip
    ap.add_argument("--noisy-runs", type=int, default=5, metavar="N",
                    help="where OpenEvolve's own runs differ, N in all (default 5)")  # fmt: skip
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    ap.add_argument("--keep", action="store_true", help="keep the evaluated copies")
    args = ap.parse_args(argv)
    if args.reference_runs < 1:
        ap.error("--reference-runs: expected 1 or more")

    folders = our_fixtures()
    if args.only:
        unknown = set(args.only) - {f.name for f in folders} - {"none"}
        if unknown:
            ap.error(f"--only: no fixture {', '.join(sorted(unknown))}")
        folders = [f for f in folders if f.name in args.only]
    for path in args.folders:
        if not (path / "evaluator.py").is_file():
            ap.error(f"{path}: expected an OpenEvolve folder (an evaluator.py in it)")
        folders.append(Folder(path.name, path.resolve()))
    if args.peer_examples:
        folders += peer_examples(args.peer_examples.expanduser(), args.examples)

    bench = Bench(args, folders)
    load_start = os.getloadavg()
    try:
        rows = [bench.row(f, p) for f in folders for p in f.programs()]
    finally:
        if args.keep:
            print(f"kept the copies in {bench.work}", file=sys.stderr)
        else:
            shutil.rmtree(bench.work, ignore_errors=True)
    head = ("folder", "program", f"OpenEvolve {VERSION}", "evolve local", "evolve docker",
            "verdict", "reason")  # fmt: skip
    print_table(head, [(r["folder"], r["program"], show_refs(r["openevolve"]),
                        r["local"].show(), r["docker"].show(), r["verdict"], r["reason"])
                       for r in rows])  # fmt: skip

    failed = [r for r in rows if r["verdict"] in ("DIFFER", "ERROR")]
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
        },  # fmt: skip
        "openevolve_venv": str(bench.venv),
        "openevolve_version": VERSION if bench.venv_py else None,
        "venv_error": bench.venv_error,
        "sandboxes": bench.sandboxes,
        "rows": [
            {
                k: [asdict(c) for c in v]
                if k == "openevolve"
                else asdict(v)
                if isinstance(v, Cell)
                else v
                for k, v in r.items()
            }
            for r in rows
        ],  # fmt: skip
        "ok": not failed,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2, default=repr) + "\n")
    print(f"wrote {RESULTS}")
    if failed:
        print(f"{len(failed)} of {len(rows)} rows DIFFER or have an ERROR")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
