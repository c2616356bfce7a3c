"""ShinkaEvolve-format folders scored by ShinkaEvolve 0.0.7 itself and by `evolve eval`.

    .venv/bin/python bench/shinka_compat.py [--shinka-venv PATH] [--only NAME ...]
        [--docker | --skip-docker] [--keep] [--timeout S]

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
  docker      the same with `--sandbox docker`, where the sandbox image exists.

A program ShinkaEvolve marks incorrect must be `invalid` in evolve (no score); a correct
one must score the same within 1e-9 (relative). A row AGREEs when every column that ran
says the same, DIFFERs when two disagree, reads ERROR when a column failed. The reference
venv (default ~/.cache/evolve-bench/shinka-0.0.7) is made on first use with
`python3 -m venv` and `pip install shinka-evolve==0.0.7` (PyPI, once). Exit status 1 when a
row DIFFERs or has an ERROR. Writes bench/results/shinka_compat.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FIXTURES = REPO / "tests" / "fixtures" / "shinka"
STAND_IN = REPO / "evaluators" / "inside" / "shinka_compat"
RESULTS = BENCH / "results" / "shinka_compat.json"
VERSION = "0.0.7"
DEFAULT_VENV = Path.home() / ".cache" / "evolve-bench" / f"shinka-{VERSION}"
REL_TOL, ABS_TOL = 1e-9, 1e-12
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


@dataclass
class Cell:
    """One column's verdict on one program: valid with a score, invalid, or an error."""

    score: float | None = None
    valid: bool | None = None
    error: str | None = None
    skipped: str | None = None

    def show(self) -> str:
        if self.skipped:
            return f"skipped ({self.skipped})"
        if self.error:
            return f"ERROR {self.error[:60]}"
        return f"{self.score:.10g}" if self.valid else "invalid"


def one_line(text: str, limit: int = 300) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[:limit]


def clean_env(pythonpath: Path | None = None) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "EVOLVE_", "OPENAI_"))
    }
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    return env


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="shinka-compat-"))
        self.venv_py, self.venv_error = self.reference_venv(Path(args.shinka_venv))
        self.docker = self.docker_reason()

    def reference_venv(self, venv: Path) -> tuple[Path | None, str | None]:
        py = venv / "bin" / "python"
        try:
            if not py.exists():
                print(f"making the reference venv {venv} (pip install shinka-evolve=={VERSION})")
                subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
                subprocess.run(
                    [str(py), "-m", "pip", "install", "-q", f"shinka-evolve=={VERSION}"], check=True
                )
            code = "import importlib.metadata as m; print(m.version('shinka-evolve'))"
            got = subprocess.run(
                [str(py), "-c", code], capture_output=True, text=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError) as e:
            return None, f"no reference venv: {e}"
        if got != VERSION:
            return None, f"{venv} has shinka-evolve {got or 'missing'}, expected {VERSION}"
        return py, None

    def docker_reason(self) -> str | None:
        """None when the Docker column runs, else why not."""
        if self.args.skip_docker:
            return "--skip-docker"
        if self.args.docker:
            return None
        try:
            out = subprocess.run(["docker", "images", "--format", "{{.Repository}}"],
                                 capture_output=True, text=True, timeout=30).stdout  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return "no docker"
        return None if "evolve" in out else "no sandbox image: evolve sandbox build"

    def copy(self, column: str, fixture: str, program: str) -> Path:
        dest = self.work / f"{fixture}-{Path(program).stem}-{column}"
        shutil.copytree(FIXTURES / fixture, dest, ignore=shutil.ignore_patterns("__pycache__"))
        seed = (FIXTURES / fixture / "initial.py").read_text()
        for name, old, new in VARIANTS[fixture]:
            if name == program:
                assert old in seed, f"{fixture}: the variant {name} no longer applies"
                (dest / name).write_text(seed.replace(old, new))
        return dest

    def run(self, cmd: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess | str:
        try:
            return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=self.args.timeout)  # fmt: skip
        except subprocess.TimeoutExpired:
            return f"timed out after {self.args.timeout:g} s"

    def shinka(self, fixture: str, program: str, stand_in: bool) -> Cell:
        if self.venv_py is None:
            return Cell(error=self.venv_error)
        folder = self.copy("stand-in" if stand_in else "shinka", fixture, program)
        results = folder.parent / f"{folder.name}.results"
        cmd = [
            str(self.venv_py),
            "evaluate.py",
            "--program_path",
            program,
            "--results_dir",
            str(results),
        ]
        r = self.run(cmd, folder, clean_env(STAND_IN if stand_in else None))
        if isinstance(r, str):
            return Cell(error=r)
        if stand_in and "evolve-stand-in" not in self.shinka_version(folder):
            return Cell(error="the stand-in did not shadow the real package")
        correct, metrics = results / "correct.json", results / "metrics.json"
        if not correct.is_file():
            return Cell(error=f"exit {r.returncode}, no correct.json: {one_line(r.stderr)}")
        ok = json.loads(correct.read_text()).get("correct") is True
        m = json.loads(metrics.read_text()) if metrics.is_file() else {}
        score = m.get("combined_score")
        return Cell(score=float(score) if ok and score is not None else None, valid=ok)

    def shinka_version(self, folder: Path) -> str:
        code = "import shinka; print(shinka.__version__)"
        r = subprocess.run([str(self.venv_py), "-c", code], cwd=folder, env=clean_env(STAND_IN),
                           capture_output=True, text=True)  # fmt: skip
        return r.stdout.strip()

    def evolve(self, fixture: str, program: str, sandbox: str) -> Cell:
        if sandbox == "docker" and self.docker is not None:
            return Cell(skipped=self.docker)
        folder = self.copy(sandbox, fixture, program)
        cmd = [sys.executable, "-m", "evolve.cli", "eval", str(folder), str(folder / program),
               "--json", "--sandbox", sandbox]  # fmt: skip
        r = self.run(cmd, REPO, clean_env())
        if isinstance(r, str):
            return Cell(error=r)
        out = None
        for line in reversed(r.stdout.strip().splitlines()):
            try:
                out = json.loads(line)
                break
            except ValueError:
                continue
        if not isinstance(out, dict):
            return Cell(error=f"exit {r.returncode}: {one_line(r.stderr or r.stdout)}")
        if out.get("status") == "invalid":
            return Cell(valid=False)
        if out.get("status") != "ok":
            why = (out.get("artifacts") or {}).get("error", "no score")
            return Cell(error=f"{out.get('status')}: {one_line(str(why))}")
        return Cell(score=float(out["score"]), valid=True)

    def row(self, fixture: str, program: str) -> dict:
        print(f"{fixture}/{program} ...", file=sys.stderr, flush=True)
        cells = {
            "shinka": self.shinka(fixture, program, stand_in=False),
            "stand-in": self.shinka(fixture, program, stand_in=True),
            "local": self.evolve(fixture, program, "local"),
            "docker": self.evolve(fixture, program, "docker"),
        }
        return {"fixture": fixture, "program": program, "cells": cells, "verdict": verdict(cells)}


def verdict(cells: dict[str, Cell]) -> str:
    ran = [c for c in cells.values() if c.valid is not None]
    for i, a in enumerate(ran):
        for b in ran[i + 1 :]:
            if a.valid != b.valid:
                return "DIFFER"
            if a.valid and not math.isclose(
                a.score or 0.0, b.score or 0.0, rel_tol=REL_TOL, abs_tol=ABS_TOL
            ):
                return "DIFFER"
    if any(c.error for c in cells.values()):
        return "ERROR"
    return "AGREE" if len(ran) >= 2 else "-"


def print_table(rows: list[dict]) -> None:
    head = (
        "folder",
        "program",
        f"ShinkaEvolve {VERSION}",
        "stand-in",
        "evolve local",
        "evolve docker",
        "verdict",
    )
    body = [
        (r["fixture"], r["program"], *(r["cells"][c].show() for c in COLUMNS), r["verdict"])
        for r in rows
    ]
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    for line in (head, tuple("-" * w for w in widths), *body):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
    for r in rows:
        for col in COLUMNS:
            cell = r["cells"][col]
            if cell.error:
                print(f"{r['fixture']}/{r['program']} {col}: {cell.error}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", choices=list(VARIANTS), metavar="NAME")
    ap.add_argument("--shinka-venv", default=str(DEFAULT_VENV), metavar="PATH",
                    help=f"a venv with shinka-evolve=={VERSION} (made when missing)")  # fmt: skip
    ap.add_argument(
        "--docker", action="store_true", help="run the Docker column whatever `docker images` says"
    )
    ap.add_argument("--skip-docker", action="store_true")
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
    print_table(rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(
        [{**r, "cells": {k: asdict(c) for k, c in r["cells"].items()}} for r in rows], indent=2
    ) + "\n")  # fmt: skip
    return 1 if any(r["verdict"] in ("DIFFER", "ERROR") for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
