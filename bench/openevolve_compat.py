"""OpenEvolve-format folders scored three ways: directly, by `evolve eval`, by OpenEvolve 0.4.0.

    .venv/bin/python bench/openevolve_compat.py [--only NAME ...] [--openevolve-venv PATH]
        [--skip-openevolve] [--skip-docker] [--keep] [--timeout S]

For each fixture in tests/fixtures/openevolve/ and each of its program files:

  direct      `evaluate(program)` called the way a user tries an evaluator by hand: a
              subprocess started in the folder (`python -c "import evaluator; ..."`), with
              the fixture's environment variables set, and PYTHONPATH holding our stand-in
              `openevolve` package (evaluators/inside/openevolve_compat) for the fixtures that
              import it. The interpreter is this one, or the reference venv's for the
              fixtures that need packages this one lacks (pandas, scipy, networkx,
              tabulate). Its score is OpenEvolve's rule, implemented here: combined_score,
              else the average of the numeric, non-bool, non-NaN metrics.
  evolve      `evolve eval FOLDER PROGRAM --json --sandbox local` (`--sandbox docker` for
              the fixtures that need the scientific stack or a requirements.txt), with
              `--env NAME=VALUE` for the fixture's variables; its `score`.
  openevolve  OpenEvolve 0.4.0 in its own venv, started in the folder as openevolve-run
              users do: `Evaluator(config.evaluator, "evaluator.py").evaluate_program(code)`
              (cascade included, as config.yaml says), then
              `get_fitness_score(metrics, config.database.feature_dimensions)`.

Every column runs on a fresh copy of the fixture (an evaluator may write beside itself),
so the folders in the repository are never touched. For a cascade, `direct` is evaluate()
alone; where OpenEvolve's cascade legitimately scores something else (a program stopped
by a stage's threshold keeps that stage's metrics) the cell reads n/a, with the reason.

The reference venv (default ~/.cache/evolve-bench/openevolve-0.4.0) is created on first
use with `python3 -m venv` and `pip install openevolve==0.4.0`, plus what the fixtures
need (`pip install pandas scipy networkx`, `pip install -r requirements.txt`); that
needs PyPI once. `--openevolve-venv /tmp/oe-venv` reuses an existing one.

A row AGREEs when every pair of numbers in it is equal within 1e-9 (relative); it
DIFFERs otherwise, and reads ERROR when nothing differs but a column failed (the one-line
reason is printed under the table). Exit status 1 when a row DIFFERs or has an ERROR.
Writes bench/results/openevolve_compat.json.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
FIXTURES = REPO / "tests" / "fixtures" / "openevolve"
STAND_IN = REPO / "evaluators" / "inside" / "openevolve_compat"  # holds the stand-in `openevolve` package
RESULTS = BENCH / "results" / "openevolve_compat.json"
sys.path.insert(0, str(REPO))  # tests/ is not installed
from tests.openevolve_reference import DIRECT_CHILD, openevolve_score  # noqa: E402

OPENEVOLVE_VERSION = "0.4.0"
DEFAULT_VENV = Path.home() / ".cache" / "evolve-bench" / f"openevolve-{OPENEVOLVE_VERSION}"
REL_TOL = 1e-9
ABS_TOL = 1e-12  # two zeros (or values within a rounding of zero) agree


@dataclass(frozen=True)
class Fixture:
    name: str
    programs: tuple[str, ...] = ("initial_program.py",)
    env: dict[str, str] = field(default_factory=dict)
    openevolve: bool = False  # imports openevolve.evaluation_result
    docker: bool = False  # evolve needs the Docker sandbox (packages beyond the host venv)
    imports: tuple[str, ...] = ()  # modules the evaluator imports that a venv may lack
    pip: tuple[str, ...] = ()  # `pip install` arguments that provide them
    na: dict[str, str] = field(default_factory=dict)  # program -> why `direct` does not apply


SEED_STOPS = (
    "OpenEvolve's cascade stops the seed after evaluate_stage1 (0.25, under the first "
    "threshold 0.5) and scores stage 1's metrics; evaluate() runs both stages"
)
ALL = (
    Fixture("relative_data", programs=("initial_program.py", "better_program.py")),
    Fixture("sibling_import"),
    Fixture("writes_beside"),
    Fixture("evaluation_result", openevolve=True),
    Fixture(
        "scientific",
        docker=True,
        imports=("pandas", "scipy", "networkx"),
        pip=("pandas", "scipy", "networkx"),
    ),
    Fixture(
        "requirements_txt",
        docker=True,
        imports=("tabulate",),
        pip=("-r", str(FIXTURES / "requirements_txt" / "requirements.txt")),
    ),
    Fixture(
        "cascade_low_seed",
        programs=("initial_program.py", "better_program.py"),
        na={"initial_program.py": SEED_STOPS},
    ),
    Fixture("stdout_artifact", openevolve=True),
    Fixture("needs_env", env={"FIXTURE_MODE": "fast"}),
)
BY_NAME = {f.name: f for f in ALL}
ENV_NAMES = {k for f in ALL for k in f.env}


# Run by the reference venv's python in the fixture's folder: OpenEvolve's own evaluation.
OPENEVOLVE_DRIVER = """
import asyncio, json, logging, os, sys
logging.disable(logging.INFO)
from openevolve.config import Config, load_config
from openevolve.evaluator import Evaluator
from openevolve.utils.metrics_utils import get_fitness_score
program, out = sys.argv[1:3]
config = load_config("config.yaml") if os.path.exists("config.yaml") else Config()
config.evaluator.max_retries = 0  # a failure is reported, not retried after a second's sleep
evaluator = Evaluator(config.evaluator, os.path.abspath("evaluator.py"))
with open(program) as f:
    code = f.read()
metrics = asyncio.run(evaluator.evaluate_program(code, program_id="bench"))
artifacts = evaluator.get_pending_artifacts("bench") or {}
score = get_fitness_score(metrics, config.database.feature_dimensions)
def plain(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else repr(v)
with open(out, "w") as f:
    json.dump({"score": score, "metrics": {str(k): plain(v) for k, v in metrics.items()},
               "artifacts": {str(k): plain(v) for k, v in artifacts.items()},
               "cascade": config.evaluator.cascade_evaluation,
               "thresholds": list(config.evaluator.cascade_thresholds)}, f)
"""


@dataclass
class Cell:
    value: float | None = None
    error: str | None = None  # one line: why there is no value
    na: str | None = None  # why the value is not compared
    skipped: str | None = None
    detail: dict = field(default_factory=dict)


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def last_line(text: str) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return one_line(lines[-1]) if lines else "no output"


def clean_env(extra: dict[str, str] | None = None, pythonpath: Path | None = None) -> dict:
    """This environment without PYTHONPATH or any fixture's variables, then `extra`."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and k not in ENV_NAMES}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.update(extra or {})
    return env


class Bench:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.console = Console(stderr=True)
        self.work = Path(tempfile.mkdtemp(prefix="openevolve-compat-", dir=args.workdir))
        self.venv: Path = Path(args.openevolve_venv).expanduser()
        self.venv_py: Path | None = None
        self.venv_error: str | None = None
        self.evolve_cmd = evolve_command(args.evolve)

    def note(self, text: str) -> None:
        self.console.print(f"[dim]{text}[/dim]", highlight=False)

    def copy(self, column: str, fixture: Fixture, program: str) -> Path:
        dest = self.work / column / fixture.name / Path(program).stem
        shutil.copytree(FIXTURES / fixture.name, dest, ignore=shutil.ignore_patterns("__pycache__"))
        return dest

    def run(self, cmd: list[str], cwd: Path, env: dict) -> subprocess.CompletedProcess | str:
        try:
            return subprocess.run(
                cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=self.args.timeout
            )
        except subprocess.TimeoutExpired:
            return f"no result within {self.args.timeout:g} s"
        except OSError as e:
            return f"cannot start {cmd[0]}: {e.strerror or e}"

    # The reference venv: OpenEvolve 0.4.0 and the packages the fixtures import.
    def ensure_venv(self, fixtures: list[Fixture]) -> None:
        try:
            py = self.venv / "bin" / "python"
            if not py.exists():
                self.note(f"creating {self.venv} (python3 -m venv)")
                base = shutil.which("python3") or sys.executable
                subprocess.run(
                    [base, "-m", "venv", str(self.venv)], check=True, capture_output=True
                )
            if openevolve_version(py) != OPENEVOLVE_VERSION:
                self.note(f"installing openevolve=={OPENEVOLVE_VERSION} into {self.venv}")
                pip(py, f"openevolve=={OPENEVOLVE_VERSION}")
            if openevolve_version(py) != OPENEVOLVE_VERSION:
                raise RuntimeError(
                    f"{self.venv}: no openevolve=={OPENEVOLVE_VERSION} after pip install"
                )
            for f in fixtures:
                if f.imports and not importable(py, f.imports):
                    self.note(f"{f.name}: pip install {' '.join(f.pip)} into {self.venv}")
                    pip(py, *f.pip)
            self.venv_py = py
        except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
            why = e.stderr if isinstance(e, subprocess.CalledProcessError) and e.stderr else str(e)
            self.venv_error = f"reference venv {self.venv}: {last_line(str(why))}"
            self.note(self.venv_error)

    def direct(self, fixture: Fixture, program: str) -> Cell:
        if fixture.imports:
            if self.venv_py is None:
                return Cell(error=self.venv_error or "no reference venv")
            py = str(self.venv_py)
        else:
            py = sys.executable
        pythonpath = None
        if fixture.openevolve:
            if not (STAND_IN / "openevolve" / "evaluation_result.py").is_file():
                return Cell(
                    error=f"no stand-in {(STAND_IN / 'openevolve').relative_to(REPO)} package yet"
                )
            pythonpath = STAND_IN
        folder = self.copy("direct", fixture, program)
        out = folder.parent / f"{folder.name}.direct.json"
        r = self.run(
            [py, "-c", DIRECT_CHILD, str(folder / program), "evaluate", str(out)],
            folder,
            clean_env(fixture.env, pythonpath),
        )
        if isinstance(r, str):
            return Cell(error=r)
        if r.returncode != 0 or not out.is_file():
            return Cell(error=f"evaluate() raised: {last_line(r.stderr)}")
        got = json.loads(out.read_text())
        cell = Cell(value=openevolve_score(got["metrics"]), detail=got)
        if program in fixture.na:
            cell.na = fixture.na[program]
        return cell

    def evolve(self, fixture: Fixture, program: str) -> Cell:
        if fixture.docker and self.args.skip_docker:
            return Cell(skipped="--skip-docker")
        folder = self.copy("evolve", fixture, program)
        cmd = [*self.evolve_cmd, "eval", str(folder), str(folder / program), "--json"]
        cmd += ["--sandbox", "docker" if fixture.docker else "local"]
        for name, value in fixture.env.items():
            cmd += ["--env", f"{name}={value}"]
        r = self.run(cmd, REPO, clean_env())
        if isinstance(r, str):
            return Cell(error=r)
        out = parse_json_line(r.stdout)
        if out is None:
            return Cell(error=f"exit {r.returncode}: {last_line(r.stderr or r.stdout)}")
        detail = {k: out.get(k) for k in ("status", "score", "metrics", "artifacts", "stages")}
        if out.get("status") != "ok" or not isinstance(out.get("score"), (int, float)):
            arts = out.get("artifacts") or {}
            why = arts.get("error") or arts.get("cascade") or "no score"
            return Cell(error=f"{out.get('status')}: {one_line(str(why))}", detail=detail)
        return Cell(value=float(out["score"]), detail=detail)

    def openevolve(self, fixture: Fixture, program: str) -> Cell:
        if self.args.skip_openevolve:
            return Cell(skipped="--skip-openevolve")
        if self.venv_py is None:
            return Cell(error=self.venv_error or "no reference venv")
        folder = self.copy("openevolve", fixture, program)
        out = folder.parent / f"{folder.name}.openevolve.json"
        r = self.run(
            [str(self.venv_py), "-c", OPENEVOLVE_DRIVER, str(folder / program), str(out)],
            folder,
            clean_env(fixture.env),
        )
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
            return Cell(error=f"failed in {where}: {one_line(str(why or metrics))}", detail=got)
        return Cell(value=float(got["score"]), detail=got)

    def row(self, fixture: Fixture, program: str) -> dict:
        self.note(f"{fixture.name}/{program}")
        cells = {
            "direct": self.direct(fixture, program),
            "evolve": self.evolve(fixture, program),
            "openevolve": self.openevolve(fixture, program),
        }
        return {"fixture": fixture.name, "program": program, **cells, "verdict": verdict(cells)}

    def close(self) -> None:
        if self.args.keep:
            self.note(f"kept the copies in {self.work}")
        else:
            shutil.rmtree(self.work, ignore_errors=True)


def verdict(cells: dict[str, Cell]) -> str:
    values = [c.value for c in cells.values() if c.value is not None and c.na is None]
    differ = any(
        not math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)
        for i, a in enumerate(values)
        for b in values[i + 1 :]
    )
    if differ:
        return "DIFFER"
    if any(c.error for c in cells.values()):
        return "ERROR"
    return "AGREE" if len(values) >= 2 else "-"


def parse_json_line(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        try:
            out = json.loads(line)
        except ValueError:
            continue
        if isinstance(out, dict):
            return out
    return None


def evolve_command(given: str | None) -> list[str]:
    if given:
        return [given]
    exe = Path(sys.executable).with_name("evolve")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "evolve.cli"]


def openevolve_version(py: Path) -> str | None:
    code = "import importlib.metadata as m; print(m.version('openevolve'))"
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def importable(py: Path, modules: tuple[str, ...]) -> bool:
    code = "import importlib.util, sys; sys.exit(any(importlib.util.find_spec(m) is None for m in sys.argv[1:]))"
    return subprocess.run([str(py), "-c", code, *modules], capture_output=True).returncode == 0


def pip(py: Path, *args: str) -> None:
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", *args], check=True, capture_output=True, text=True
    )


def show(cell: Cell) -> str:
    if cell.skipped:
        return "skipped"
    if cell.error:
        return f"[red]ERROR[/red] {one_line(cell.error, 48)}"
    if cell.na:
        return f"n/a ({cell.value:.10g})"
    return f"{cell.value:.10g}"


def print_table(rows: list[dict]) -> None:
    console = Console()
    console.width = max(console.width, 140)
    table = Table(title=f"Scores of tests/fixtures/openevolve (equal within {REL_TOL:g} relative)")
    for col in ("fixture", "program", "direct", "evolve", "openevolve 0.4.0", "verdict"):
        table.add_column(col, overflow="fold")
    colors = {"AGREE": "green", "DIFFER": "red", "ERROR": "red"}
    for r in rows:
        v = r["verdict"]
        table.add_row(
            r["fixture"],
            r["program"],
            *(show(r[c]) for c in ("direct", "evolve", "openevolve")),
            f"[{colors[v]}]{v}[/{colors[v]}]" if v in colors else v,
        )
    console.print(table)
    for r in rows:
        for col in ("direct", "evolve", "openevolve"):
            cell: Cell = r[col]
            if cell.error or cell.na:
                kind = "error" if cell.error else "n/a"
                console.print(
                    f"{r['fixture']}/{r['program']} {col} {kind}: {cell.error or cell.na}",
                    highlight=False,
                    markup=False,
                )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--only",
        nargs="+",
        choices=list(BY_NAME),
        metavar="NAME",
        help=f"fixtures to run (default all: {', '.join(BY_NAME)})",
    )
    ap.add_argument(
        "--openevolve-venv",
        default=str(DEFAULT_VENV),
        metavar="PATH",
        help=f"venv with openevolve=={OPENEVOLVE_VERSION} and the fixtures' packages, "
        f"created on first use (default {DEFAULT_VENV})",
    )
    ap.add_argument(
        "--skip-openevolve", action="store_true", help="leave out the OpenEvolve column"
    )
    ap.add_argument(
        "--skip-docker",
        action="store_true",
        help="leave out `evolve eval --sandbox docker` (the scientific and requirements fixtures)",
    )
    ap.add_argument(
        "--evolve", metavar="EXE", help="the evolve command (default: the one beside this python)"
    )
    ap.add_argument(
        "--timeout", type=float, default=300.0, help="limit for each subprocess, in seconds"
    )
    ap.add_argument(
        "--keep", action="store_true", help="keep the fixture copies each column ran in"
    )
    ap.add_argument(
        "--workdir", metavar="DIR", help="where the copies go (default: the system temp)"
    )
    args = ap.parse_args(argv)

    fixtures = [BY_NAME[n] for n in args.only] if args.only else list(ALL)
    bench = Bench(args)
    load_start = os.getloadavg()
    try:
        if not args.skip_openevolve or any(f.imports for f in fixtures):
            bench.ensure_venv(fixtures)
        rows = [bench.row(f, p) for f in fixtures for p in f.programs]
    finally:
        bench.close()
    print_table(rows)

    failed = [r for r in rows if r["verdict"] in ("DIFFER", "ERROR")]
    report = {
        "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "loadavg_start": load_start,
            "loadavg_end": os.getloadavg(),
        },
        "evolve_command": bench.evolve_cmd,
        "openevolve_venv": str(bench.venv),
        "openevolve_version": openevolve_version(bench.venv_py) if bench.venv_py else None,
        "venv_error": bench.venv_error,
        "stand_in_present": (STAND_IN / "openevolve").is_dir(),
        "rel_tol": REL_TOL,
        "rows": [{k: asdict(v) if isinstance(v, Cell) else v for k, v in r.items()} for r in rows],
        "ok": not failed,
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(report, indent=2, default=repr) + "\n")
    print(f"wrote {RESULTS.relative_to(REPO)}")
    if failed:
        print(f"{len(failed)} of {len(rows)} rows DIFFER or have an ERROR")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
