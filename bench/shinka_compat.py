"""ShinkaEvolve-format folders scored by ShinkaEvolve 0.0.7 itself and by `evolve eval`.

    .venv/bin/python bench/shinka_compat.py [--shinka-venv PATH] [--only NAME ...]
        [--sandbox local|docker|both] [--keep] [--timeout S]

For each folder in tests/fixtures/shinka/ (ShinkaEvolve's own examples, unchanged) and each
program (initial.py, and variants made here from it: one that scores higher, one that its
evaluator rejects):

  shinka      ShinkaEvolve 0.0.7 as its runner calls an evaluator: in a fresh copy of the
              folder, `python evaluate.py --program_path P --results_dir D` with the
              reference venv's interpreter (the real `shinka` package importable), then
              correct.json's `correct` and metrics.json's `combined_score`, as
              shinka.utils.load_results reads them.
  stand-in    the same command with evolve's stand-in `shinka` package
              (evaluators/inside/shinka_compat) first on PYTHONPATH, shadowing the real one.
  local       `evolve eval FOLDER PROGRAM --json --sandbox local`: its status and score.
  docker      the same with `--sandbox docker`; ERROR with the one-line reason where there
              is no Docker engine or no sandbox image (`evolve sandbox build`).
--sandbox local or docker runs one of the two (the other reads `-`); the default runs both.

A program ShinkaEvolve marks incorrect must be `invalid` in evolve (no score); a correct
one must score the same within 1e-9 (relative). A row AGREEs when every column that ran
says what ShinkaEvolve says, DIFFERs when one does not, reads ERROR when a column failed
(the reason column says which, and why). The reference
venv (default ~/.cache/evolve-bench/shinka-0.0.7) is made on first use with
`python3 -m venv` and `pip install shinka-evolve==0.0.7` (PyPI, once). Exit status 1 when a
row DIFFERs or has an ERROR. Writes bench/results/shinka_compat.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict
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
    print_table,
    run,
    verdict,
)

BENCH = REPO / "bench"
FIXTURES = REPO / "tests" / "fixtures" / "shinka"
STAND_IN = REPO / "evaluators" / "inside" / "shinka_compat"
RESULTS = result_path("shinka_compat")
VERSION = "0.0.7"
DEFAULT_VENV = Path.home() / ".cache" / "evolve-bench" / f"shinka-{VERSION}"
COLUMNS = ("shinka", "stand-in", "local", "docker")

# Programs made from a folder's initial.py: (name, text replaced, replacement).
VARIANTS = {
    "circle_packing": [
        (
            "overlapping.py",
            "radii = np.maximum(radii, 0.0)",
            "radii = np.maximum(radii, 0.0) + 0.05",
        ),
    ],
    "sine_approx_headless": [
        ("taylor.py", "    return x\n", "    return x - x**3 / 6 + x**5 / 120 - x**7 / 5040\n"),
        ("cheating.py", "    return x\n", "    import math\n    return math.sin(x)\n"),
    ],
    "game_2048": [],
}


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="shinka-compat-"))
        self.venv_py: Path | None = None
        self.venv_error: str | None = None
        try:
            self.venv_py = ensure_venv(Path(args.shinka_venv), "shinka-evolve", VERSION)
        except RuntimeError as e:
            self.venv_error = str(e)
            print(self.venv_error, file=sys.stderr)
        wanted = SANDBOXES if args.sandbox == "both" else (args.sandbox,)
        self.sandboxes = {s: None if s in wanted else "not asked" for s in SANDBOXES}
        if "docker" in wanted:
            self.sandboxes["docker"] = docker_reason()

    def copy(self, column: str, fixture: str, program: str) -> Path:
        dest = self.work / f"{fixture}-{Path(program).stem}-{column}"
        shutil.copytree(FIXTURES / fixture, dest, ignore=shutil.ignore_patterns("__pycache__"))
        seed = (FIXTURES / fixture / "initial.py").read_text()
        for name, old, new in VARIANTS[fixture]:
            if name == program:
                assert old in seed, f"{fixture}: the variant {name} no longer applies"
                (dest / name).write_text(seed.replace(old, new))
        return dest

    def shinka(self, fixture: str, program: str, stand_in: bool) -> Cell:
        if self.venv_py is None:
            return Cell(error=self.venv_error)
        folder = self.copy("stand-in" if stand_in else "shinka", fixture, program)
        results = folder.parent / f"{folder.name}.results"
        cmd = [str(self.venv_py), "evaluate.py", "--program_path", program,
               "--results_dir", str(results)]  # fmt: skip
        r = run(cmd, folder, clean_env(pythonpath=STAND_IN if stand_in else None),
                self.args.timeout)  # fmt: skip
        if isinstance(r, str):
            return Cell(error=r)
        if stand_in and "evolve-stand-in" not in self.shinka_version(folder):
            return Cell(error="the stand-in did not shadow the real package")
        correct, metrics = results / "correct.json", results / "metrics.json"
        if not correct.is_file():
            return Cell(error=f"exit {r.returncode}, no correct.json: {last_line(r.stderr)}")
        ok = json.loads(correct.read_text()).get("correct") is True
        m = json.loads(metrics.read_text()) if metrics.is_file() else {}
        score = m.get("combined_score")
        return Cell(score=float(score) if ok and score is not None else None, valid=ok)

    def shinka_version(self, folder: Path) -> str:
        code = "import shinka; print(shinka.__version__)"
        r = subprocess.run([str(self.venv_py), "-c", code], cwd=folder,
                           env=clean_env(pythonpath=STAND_IN), capture_output=True,
                           text=True)  # fmt: skip
        return r.stdout.strip()

    def evolve(self, fixture: str, program: str, sandbox: str) -> Cell:
        if self.sandboxes[sandbox] == "not asked":
            return Cell(skipped="not asked")
        if self.sandboxes[sandbox]:
            return Cell(error=self.sandboxes[sandbox])
        folder = self.copy(sandbox, fixture, program)
        return evolve_eval(folder, folder / program, sandbox, [], self.args.timeout)

    def row(self, fixture: str, program: str) -> dict:
        print(f"{fixture}/{program} ...", file=sys.stderr, flush=True)
        ref = self.shinka(fixture, program, stand_in=False)
        ours = {"stand-in": self.shinka(fixture, program, stand_in=True)}
        ours |= {s: self.evolve(fixture, program, s) for s in SANDBOXES}
        v, why = verdict([ref], ours, "shinka")
        cells = {"shinka": ref, **ours}
        return {"fixture": fixture, "program": program, "cells": cells, "verdict": v,
                "reason": why}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(VARIANTS), metavar="NAME")
    ap.add_argument("--shinka-venv", default=str(DEFAULT_VENV), metavar="PATH",
                    help=f"a venv with shinka-evolve=={VERSION} (made when missing)")  # fmt: skip
    ap.add_argument("--sandbox", choices=(*SANDBOXES, "both"), default="both",
                    help="where `evolve eval` runs (default both: two columns)")  # fmt: skip
    ap.add_argument("--keep", action="store_true", help="keep the evaluated copies")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per command")
    args = ap.parse_args(argv)
    bench = Bench(args)
    rows = []
    try:
        for fixture in args.only or list(VARIANTS):
            for program in ("initial.py", *(v[0] for v in VARIANTS[fixture])):
                rows.append(bench.row(fixture, program))
    finally:
        if args.keep:
            print(f"kept the copies in {bench.work}", file=sys.stderr)
        else:
            shutil.rmtree(bench.work, ignore_errors=True)
    head = ("folder", "program", f"ShinkaEvolve {VERSION}", "stand-in", "evolve local",
            "evolve docker", "verdict", "reason")  # fmt: skip
    print_table(head, [(r["fixture"], r["program"], *(r["cells"][c].show() for c in COLUMNS),
                        r["verdict"], r["reason"]) for r in rows])  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(
        [{**r, "cells": {k: asdict(c) for k, c in r["cells"].items()}} for r in rows], indent=2
    ) + "\n")  # fmt: skip
    return 1 if any(r["verdict"] in ("DIFFER", "ERROR") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
