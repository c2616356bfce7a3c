"""What bench/openevolve_compat.py and bench/shinka_compat.py share: a peer framework's own
score beside `evolve eval` on the local and Docker sandboxes, and one verdict per row.

The peer's reference may run more than once: where its own runs disagree (a program that
draws random numbers from the clock), evolve agrees when it lands within that spread."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
REL_TOL, ABS_TOL = 1e-9, 1e-12  # two zeros (or values within a rounding of zero) agree
SANDBOXES = ("local", "docker")


@dataclass
class Cell:
    """One column on one program: a score, `invalid` (no score, by the evaluator's own
    verdict), an error with its one-line reason, or not run."""

    score: float | None = None
    valid: bool | None = None
    error: str | None = None
    skipped: str | None = None

    def show(self) -> str:
        if self.skipped:
            return "-"
        if self.error:
            return "ERROR"
        return f"{self.score:.10g}" if self.valid else "invalid"


def one_line(text: str, limit: int = 300) -> str:
    line = " ".join((text or "").split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def last_line(text: str) -> str:
    lines = [ln for ln in (text or "").strip().splitlines() if ln.strip()]
    return one_line(lines[-1]) if lines else "no output"


def clean_env(extra: dict[str, str] | None = None, pythonpath: Path | None = None) -> dict:
    """This environment without PYTHON*, EVOLVE_* or OPENAI_* variables, then `extra`."""
    drop = ("PYTHON", "EVOLVE_", "OPENAI_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    cargo = Path.home() / ".cargo" / "bin"  # Rust folders: the toolchain where rustup puts it
    if cargo.is_dir() and str(cargo) not in env.get("PATH", "").split(os.pathsep):
        env["PATH"] = f"{env.get('PATH', '')}{os.pathsep}{cargo}"
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    env.update(extra or {})
    return env


def run(cmd: list[str], cwd: Path, env: dict, timeout: float) -> subprocess.CompletedProcess | str:
    """The finished process, or one line saying why there is none."""
    try:
        return subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return f"no result within {timeout:g} s"
    except OSError as e:
        return f"cannot start {cmd[0]}: {e.strerror or e}"


def ensure_venv(venv: Path, dist: str, version: str, *pip_args: str) -> Path:
    """`venv`'s python with `dist==version` installed (made with `python3 -m venv` and pip
    when missing); raises RuntimeError with one line when it cannot be had."""
    py = venv / "bin" / "python"
    try:
        if not py.exists():
            print(f"making {venv} (pip install {dist}=={version})", file=sys.stderr)
            subprocess.run(["python3", "-m", "venv", str(venv)], check=True, capture_output=True)
        if dist_version(py, dist) != version:
            pip(py, f"{dist}=={version}", *pip_args)
        elif pip_args:
            pip(py, *pip_args)
    except (OSError, subprocess.CalledProcessError) as e:
        why = e.stderr if isinstance(e, subprocess.CalledProcessError) and e.stderr else str(e)
        raise RuntimeError(f"reference venv {venv}: {last_line(str(why))}") from e
    got = dist_version(py, dist)
    if got != version:
        raise RuntimeError(f"{venv} has {dist} {got or 'missing'}, expected {version}")
    return py


def dist_version(py: Path, dist: str) -> str | None:
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    proc = subprocess.run([str(py), "-c", code], capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def pip(py: Path, *args: str) -> None:
    cmd = [str(py), "-m", "pip", "install", "-q", *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def docker_reason() -> str | None:
    """None when a Docker engine answers, else the one-line reason the column is ERROR.
    (A missing sandbox image is left to `evolve eval`, whose own line then names it.)"""
    r = run(["docker", "info", "--format", "{{.ServerVersion}}"], REPO, dict(os.environ), 30)
    if isinstance(r, str):
        return f"docker info: {r}"
    if r.returncode != 0:
        return f"no Docker engine: {last_line(r.stderr or r.stdout)}"
    return None


def evolve_eval(
    folder: Path, program: Path, sandbox: str, extra: list[str], timeout: float
) -> Cell:
    """`evolve eval FOLDER PROGRAM --json --sandbox SANDBOX EXTRA...`: status and score."""
    cmd = [sys.executable, "-m", "evolve.cli", "eval", str(folder), str(program), "--json"]
    r = run([*cmd, "--sandbox", sandbox, *extra], REPO, clean_env(), timeout)
    if isinstance(r, str):
        return Cell(error=r)
    out = None
    for line in reversed(r.stdout.strip().splitlines()):
        try:
            out = json.loads(line)
        except ValueError:
            continue
        if isinstance(out, dict):
            break
    if not isinstance(out, dict):
        return Cell(error=f"exit {r.returncode}: {last_line(r.stderr or r.stdout)}")
    if out.get("status") == "invalid":
        return Cell(valid=False)
    if out.get("status") != "ok" or not isinstance(out.get("score"), (int, float)):
        arts = out.get("artifacts") or {}
        why = arts.get("error") or arts.get("cascade") or "no score"
        return Cell(error=f"{out.get('status')}: {one_line(str(why))}")
    return Cell(score=float(out["score"]), valid=True)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=ABS_TOL)


def verdict(refs: list[Cell], ours: dict[str, Cell], peer: str) -> tuple[str, str]:
    """(AGREE | DIFFER | ERROR | -, the reason) for the peer's runs against evolve's cells."""
    ref_err = next((c.error for c in refs if c.error), None)
    if ref_err:
        return "ERROR", f"{peer}: {ref_err}"
    if len({c.valid for c in refs}) > 1:
        return "ERROR", f"{peer}'s own runs disagree on validity"
    ref = refs[0]
    scores = [c.score for c in refs if c.valid and c.score is not None]
    lo, hi = (min(scores), max(scores)) if scores else (0.0, 0.0)
    spread = hi - lo if not close(lo, hi) else 0.0
    notes, errors = [], []
    for name, cell in ours.items():
        if cell.skipped:
            continue
        if cell.error:
            errors.append(f"{name}: {cell.error}")
        elif cell.valid != ref.valid:
            notes.append(f"{name} says {cell.show()}, {peer} {ref.show()}")
        elif cell.valid and cell.score is not None:
            s = cell.score
            ok = lo - spread <= s <= hi + spread if spread else close(s, lo) and close(s, hi)
            if not ok:
                notes.append(f"{name} {s:.10g} vs {peer} {lo:.10g}..{hi:.10g}")
    if notes:
        return "DIFFER", "; ".join(notes + errors)
    if errors:
        return "ERROR", "; ".join(errors)
    if all(c.skipped for c in ours.values()):
        return "-", "no evolve column ran"
    if spread:
        return "AGREE", f"within {peer}'s own run-to-run spread {lo:.6g}..{hi:.6g}"
    return "AGREE", ""


def print_table(head: tuple[str, ...], body: list[tuple[str, ...]]) -> None:
    """Plain columns (copied into READMEs and reports as they are), the reason column last."""
    widths = [max(len(str(x)) for x in col) for col in zip(head, *body, strict=True)]
    widths[-1] = len(head[-1])  # the reason runs on unpadded
    for line in (head, tuple("-" * w for w in widths), *body):
        print("  ".join(str(x).ljust(w) for x, w in zip(line, widths, strict=True)).rstrip())
