"""Controller overhead per candidate: evolve vs OpenEvolve 0.4.0, with 100 and 5,000 programs.

Every candidate costs the framework's own work only: a scripted, instant LLM
(evolve/testing/scripted_llm.py, a unique whole-program rewrite per call, so nothing is
a duplicate) and a trivial evaluator (bench/fixtures: import the candidate,
hash its constant into a score). Configurations, each resumed from an archive
pre-populated with N programs and timed over the next M candidates:

  evolve, sandbox excluded   the Controller driven from Python, as `evolve resume`
                             wires it, with a bench-only Sandbox that scores
                             without running anything (bench/overhead_ours.py)
  evolve, sandbox included   `evolve resume` (CLI), real LocalSandbox
  OpenEvolve 0.4.0           `openevolve-run --checkpoint` (CLI), in its own venv;
                             it has no sandbox: evaluate() runs in its worker processes

Time per candidate is read from one instrument for all: the arrival times of
LLM requests at the scripted server. Each framework issues a new request when
an earlier candidate finishes, so after the initial burst that fills the
pipeline, one arrival = one finished candidate. Reported: the mean over that
steady-state window (window span / candidates in it), the median gap, and the
CPU time of the tested process tree over the window per candidate (read from
/proc at the window's first and last request; immune to machine load).
Start-up (loading the archive or checkpoint) is outside the window and is
reported separately. See bench/README.md.

    python bench/controller_overhead.py [--sizes 100,5000] [--iterations 40] [--repeats 3]
        [--skip-openevolve] [--openevolve-venv PATH] [--sandbox local|docker] [--keep]
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import itertools
import json
import os
import re
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml
from harness import machine, write_result
from overhead_common import (
    NATIVE_PROBLEM,
    OPENEVOLVE_PROBLEM,
    program_code,
    ratio,
    reply_text,
    score_of,
    steady_state,
    synthetic_programs,
)
from overhead_ours import fill_archive
from rich.console import Console
from rich.table import Table

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
OPENEVOLVE_VERSION = "0.4.0"
DEFAULT_OE_VENV = "/tmp/bench-openevolve-venv"
SETUP_ITERATIONS = 2  # the run is created through the CLI with this many real iterations
OURS_PARALLEL, OURS_LLM_PARALLEL = 2, 4  # evolve's defaults; OpenEvolve gets 2 workers
# One LLM call = one candidate, as in OpenEvolve: no tuned children (they cost evaluations,
# not calls, and would be counted as controller time), no resampling of repeats, no repairs.
OURS_ONE_CALL_PER_CANDIDATE = ("--tune-evals", "0", "--max-resamples", "0", "--repair-attempts", "0")
OE_LOG_LINE = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) - INFO - Iteration (\d+): Program ")
EXCLUDED, INCLUDED, OPENEVOLVE = "evolve, sandbox excluded", "evolve, sandbox included", "OpenEvolve 0.4.0"


class Bench:
    def __init__(self, args):
        self.args = args
        self.console = Console()
        self.console.width = max(self.console.width, 120)  # no wrapping when piped
        if args.workdir:  # a parent named by the user may not exist yet
            Path(args.workdir).mkdir(parents=True, exist_ok=True)
        self.work = Path(tempfile.mkdtemp(prefix="evolve-bench-overhead-", dir=args.workdir))
        self.counter = itertools.count(1)
        self.lock = threading.Lock()
        self.watch: dict | None = None  # the process under test, while one runs
        self.llm = _scripted_llm(self._respond)
        self.base_url = self.llm.start()
        self.env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_BASE")}
        self.env.update(OPENAI_API_KEY="bench-not-needed", PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
        self.evolve_problem = NATIVE_PROBLEM if args.problem_format == "native" else OPENEVOLVE_PROBLEM

    def _respond(self, request: dict) -> str:
        with self.lock:
            k = next(self.counter)
            tag = pid = None
            if self.watch is not None:
                tag = self.watch["at"].get(self.watch["seen"])
                self.watch["seen"] += 1
                pid, marks = self.watch["pid"], self.watch["marks"]
        if tag is not None:
            marks[tag] = _tree_cpu(pid)
        return reply_text(k)

    def note(self, text: str) -> None:
        self.console.print(f"[dim]{time.strftime('%H:%M:%S')}[/dim] {text}", highlight=False)

    # ---- one timed process ---------------------------------------------------
    def timed(self, name: str, cmd: list[str], fill: int, expect: int, log: Path) -> dict:
        """Run cmd with a fresh request log; time per candidate from request arrivals.

        The responder also reads the CPU time of the process tree under test at the
        first and the last request of the steady-state window (cpu_ms: CPU per
        candidate summed over all its processes, the machine's load left out)."""
        self.llm.reset()
        cpu0 = _children_cpu()
        with open(log, "w") as out:
            t0 = time.time()
            proc = subprocess.Popen(cmd, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT)
            with self.lock:
                self.watch = {"pid": proc.pid, "seen": 0, "at": {fill: "start", expect - 1: "end"}, "marks": {}}
            try:
                rc = proc.wait(timeout=self.args.timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                raise RuntimeError(f"{name}: no exit within {self.args.timeout:g} s; log {log}") from None
            finally:
                with self.lock:
                    watch, self.watch = self.watch, None
            t1 = time.time()
        ts = sorted(r["_ts"] for r in self.llm.requests)
        if rc != 0 or len(ts) != expect:
            tail = log.read_text()[-3000:]
            raise RuntimeError(f"{name}: exit {rc}, {len(ts)} LLM requests "
                               f"(expected {expect}); log {log}:\n{tail}")
        r = {
            **steady_state(ts, fill), "wall_s": t1 - t0, "startup_s": ts[0] - t0, "drain_s": t1 - ts[-1],
            "cpu_s": _children_cpu() - cpu0, "requests": len(ts), "fill": fill, "loadavg": os.getloadavg(),
            "arrivals_ms": [round((t - ts[0]) * 1e3, 3) for t in ts],
        }
        marks = watch["marks"]
        r["cpu_ms"] = ((marks["end"] - marks["start"]) / r["candidates"] * 1e3
                       if {"start", "end"} <= marks.keys() else None)
        return r

    # ---- evolve ----------------------------------------------------------------
    def ours_base(self, n: int, synthetic: list[dict]) -> tuple[Path, str, int]:
        """A run created by `evolve run` (seed + SETUP_ITERATIONS), then filled to n programs."""
        runs = self.work / f"ours-{n}-base"
        run_id = f"bench-{n}"
        cmd = [*_evolve_cmd(), "run", str(self.evolve_problem), "--iterations", str(SETUP_ITERATIONS),
               "--api-base", self.base_url, "--model", "scripted", "--run-id", run_id,
               "--runs-dir", str(runs), "--sandbox", self.args.sandbox, "--parallel", str(OURS_PARALLEL),
               "--llm-parallel", str(OURS_LLM_PARALLEL), *OURS_ONE_CALL_PER_CANDIDATE, "--no-progress"]
        log = self.work / f"ours-{n}-setup.log"
        with open(log, "w") as out:
            proc = subprocess.run(cmd, cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                  timeout=self.args.timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"evolve run (setup) failed, exit {proc.returncode}:\n{log.read_text()[-3000:]}")
        done = fill_archive(str(runs), run_id, n, synthetic)
        return runs, run_id, done

    def ours(self, mode: str, n: int, base: tuple[Path, str, int], rep: int) -> dict:
        runs, run_id, done = base
        copy = self.work / f"ours-{n}-{'excl' if mode == EXCLUDED else 'incl'}-{rep}"
        shutil.copytree(runs, copy)
        target = done + self.args.iterations
        if mode == EXCLUDED:
            cmd = [sys.executable, str(BENCH / "overhead_ours.py"), str(copy), run_id, str(target)]
        else:
            cmd = [*_evolve_cmd(), "resume", run_id, "--iterations", str(target), "--runs-dir", str(copy),
                   "--no-progress"]
        r = self.timed(f"{mode} N={n}", cmd, OURS_PARALLEL + OURS_LLM_PARALLEL, self.args.iterations,
                       copy / "bench.log")
        db = sqlite3.connect(copy / "archive.db")
        rows = db.execute("SELECT status, created_at FROM programs WHERE run_id=? AND iteration>?",
                          (run_id, done)).fetchall()
        total = db.execute("SELECT COUNT(*) FROM programs WHERE run_id=?", (run_id,)).fetchone()[0]
        db.close()
        r["ok"] = sum(s == "ok" for s, _ in rows)
        r["programs_before"], r["programs_after"] = n, total
        r["archive_created_at"] = steady_state([c for _, c in rows], r["fill"])
        if mode == INCLUDED and self.args.sandbox != "local":
            r["cpu_ms"] = None  # evaluations run in containers, outside the process tree
        if r["ok"] != self.args.iterations:
            statuses = sorted({s for s, _ in rows})
            raise RuntimeError(f"{mode} N={n}: {r['ok']} of {self.args.iterations} candidates ok ({statuses})")
        return r

    # ---- OpenEvolve --------------------------------------------------------------
    def oe_config(self) -> Path:
        cfg = yaml.safe_load((OPENEVOLVE_PROBLEM / "config.yaml").read_text())
        cfg["llm"]["api_base"] = self.base_url
        path = self.work / "openevolve-config.yaml"
        path.write_text(yaml.safe_dump(cfg, sort_keys=False))
        return path

    def oe_checkpoint(self, py: Path, config: Path, n: int, synthetic: list[dict]) -> Path:
        islands = yaml.safe_load(config.read_text())["database"]["num_islands"]
        specs = [{"code": program_code(0), "score": score_of(0), "iteration": 0, "island": 0}]
        specs += [{**s, "iteration": i, "island": i % islands} for i, s in enumerate(synthetic[:n - 1], 1)]
        programs = self.work / f"openevolve-{n}-programs.json"
        programs.write_text(json.dumps(specs))
        ckpt = self.work / f"openevolve-{n}-checkpoint"
        proc = subprocess.run([str(py), str(BENCH / "overhead_openevolve.py"), str(config), str(programs),
                               str(ckpt)], cwd=REPO, env=self.env, capture_output=True, text=True,
                              timeout=self.args.timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"building the OpenEvolve checkpoint failed:\n{proc.stderr[-3000:]}")
        return ckpt

    def openevolve(self, py: Path, config: Path, ckpt: Path, n: int, rep: int) -> dict:
        cfg = yaml.safe_load(config.read_text())
        workers, islands = cfg["evaluator"]["parallel_evaluations"], cfg["database"]["num_islands"]
        m = self.args.iterations
        fill = islands * max(1, min(2 * workers, m) // islands)  # its initial batch (run_evolution)
        out = self.work / f"openevolve-{n}-{rep}"
        cmd = [str(py.parent / "openevolve-run"), str(OPENEVOLVE_PROBLEM / "initial_program.py"),
               str(OPENEVOLVE_PROBLEM / "evaluator.py"), "--config", str(config), "--output", str(out),
               "--checkpoint", str(ckpt), "--iterations", str(m)]
        out.mkdir()
        log = out / "bench.log"
        r = self.timed(f"OpenEvolve N={n}", cmd, fill, m, log)
        done = [(dt.datetime.strptime(mt.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp(), int(mt.group(2)))
                for mt in map(OE_LOG_LINE.match, log.read_text().splitlines()) if mt]
        r["ok"] = len(done)
        r["errors"] = sum("error:" in line for line in log.read_text().splitlines()
                          if " - WARNING - Iteration " in line)
        if r["ok"] != m:
            raise RuntimeError(f"OpenEvolve N={n}: {r['ok']} of {m} iterations completed; log {log}")
        r["log_completions"] = steady_state([t for t, _ in done], fill)
        return r

    # ---- everything ----------------------------------------------------------------
    def run(self) -> dict:
        a = self.args
        oe_py = None if a.skip_openevolve else ensure_openevolve(Path(a.openevolve_venv), self.note)
        oe_cfg = self.oe_config() if oe_py else None
        results: dict[str, dict[int, list[dict]]] = {}
        for n in a.sizes:
            synthetic = synthetic_programs(n)
            self.note(f"N={n}: creating the evolve run (`evolve run`, {SETUP_ITERATIONS} iterations) "
                      f"and filling it to {n} programs")
            base = self.ours_base(n, synthetic)
            oe_ckpt = None
            if oe_py:
                self.note(f"N={n}: building an OpenEvolve checkpoint with {n} programs")
                oe_ckpt = self.oe_checkpoint(oe_py, oe_cfg, n, synthetic)
            for rep in range(a.repeats):  # interleaved, so drifting machine load hits all alike
                for mode in (EXCLUDED, INCLUDED):
                    r = self.ours(mode, n, base, rep)
                    results.setdefault(mode, {}).setdefault(n, []).append(r)
                    self.note(f"N={n} {mode}: {r['mean_ms']:.2f} ms/candidate (startup {r['startup_s']:.2f} s)")
                if oe_py:
                    r = self.openevolve(oe_py, oe_cfg, oe_ckpt, n, rep)
                    results.setdefault(OPENEVOLVE, {}).setdefault(n, []).append(r)
                    self.note(f"N={n} {OPENEVOLVE}: {r['mean_ms']:.2f} ms/candidate (startup {r['startup_s']:.2f} s)")
        return results

    def close(self) -> None:
        self.llm.stop()
        if not self.args.keep:
            shutil.rmtree(self.work, ignore_errors=True)


def _scripted_llm(responder):
    from evolve.testing.scripted_llm import ScriptedLLM

    return ScriptedLLM(responder)


def _source_fingerprint() -> str:
    """sha256 over evolve's code (the tree may hold uncommitted work): which code was measured."""
    h = hashlib.sha256()
    for path in sorted([*REPO.glob("evolve/**/*.py"), *REPO.glob("evaluators/**/*.py"), *REPO.glob("prompts/*.j2")]):
        h.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def _children_cpu() -> float:
    """User + system CPU seconds of every waited-for descendant so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of a live process tree: each process's own time plus
    that of its exited, waited-for children (so nothing is counted twice)."""
    stats = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                with open(f"/proc/{entry.name}/stat") as f:
                    text = f.read()
            except OSError:
                continue
            fields = text[text.rfind(")") + 2:].split()
            stats[int(entry.name)] = (int(fields[1]), sum(int(x) for x in fields[11:15]))
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        if pid in stats:
            total += stats[pid][1]
            todo.extend(children.get(pid, ()))
    return total / os.sysconf("SC_CLK_TCK")


def _evolve_cmd() -> list[str]:
    """The CLI of this checkout (run with cwd=REPO), not whatever `evolve` is installed."""
    return [sys.executable, "-m", "evolve.cli"]


def _oe_version(py: Path) -> str | None:
    proc = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('openevolve'))"],
                          capture_output=True, text=True)
    return proc.stdout.strip() if proc.returncode == 0 else None


def ensure_openevolve(venv: Path, note) -> Path:
    """OpenEvolve in its own venv (created on first use), so its dependencies never touch ours."""
    py = venv / "bin" / "python"
    if not py.exists():
        note(f"creating {venv} (python3 -m venv)")
        subprocess.run([shutil.which("python3") or sys.executable, "-m", "venv", str(venv)], check=True)
    if _oe_version(py) != OPENEVOLVE_VERSION:
        note(f"installing openevolve=={OPENEVOLVE_VERSION} into {venv}")
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"openevolve=={OPENEVOLVE_VERSION}"], check=True)
    if _oe_version(py) != OPENEVOLVE_VERSION:
        raise RuntimeError(f"{venv}: could not install openevolve=={OPENEVOLVE_VERSION}")
    return py


def summarize(results: dict[str, dict[int, list[dict]]], sizes: list[int]) -> dict:
    """Per configuration and size: the median over repeats of each statistic."""
    out: dict = {}
    for name, by_size in results.items():
        out[name] = {}
        for n, reps in by_size.items():
            keys = ("mean_ms", "median_ms", "p10_ms", "p90_ms", "cpu_ms", "startup_s", "wall_s")
            out[name][n] = {k: _median([r[k] for r in reps]) for k in keys}
            out[name][n]["repeats_mean_ms"] = [r["mean_ms"] for r in reps]
    lo, hi = min(sizes), max(sizes)

    def get(name, n, key):
        return out.get(name, {}).get(n, {}).get(key)

    growth, vs = {}, {}
    for key in ("mean_ms", "cpu_ms"):
        if lo != hi:
            growth[key] = {name: ratio(get(name, hi, key), get(name, lo, key)) for name in out}
        if OPENEVOLVE in out:
            vs[key] = {n: {mode: ratio(get(OPENEVOLVE, n, key), get(mode, n, key)) for mode in (EXCLUDED, INCLUDED)}
                       for n in sizes}
    return {"per_candidate": out, "growth": growth, "openevolve_over_evolve": vs, "sizes": [lo, hi]}


def _median(xs: list) -> float | None:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def oe_machine(oe_venv: Path | None, load_start: tuple) -> dict:
    info = machine(loadavg_start=load_start)
    if oe_venv is not None:
        py = oe_venv / "bin" / "python"
        info["openevolve_python"] = subprocess.run([str(py), "-c", "import platform; print(platform.python_version())"],
                                                   capture_output=True, text=True).stdout.strip()
        info["openevolve_version"] = _oe_version(py)
    return info


def _times(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}x"


def print_tables(console: Console, summary: dict, args) -> None:
    t = Table(title=f"Controller overhead per candidate (steady state over {args.iterations} candidates, "
                    f"median of {args.repeats} repeat(s); instant LLM, trivial evaluator; "
                    f"'sandbox included' = {args.sandbox} sandbox)")
    cols = ("configuration", "programs", "mean ms", "median gap ms", "p10 ms", "p90 ms", "CPU ms", "start-up s")
    for col in cols:
        t.add_column(col, justify="left" if col == "configuration" else "right", no_wrap=True)
    for name, by_size in summary["per_candidate"].items():
        for n, s in sorted(by_size.items()):
            t.add_row(name, f"{n:,}", *(_num(s[k]) for k in ("mean_ms", "median_ms", "p10_ms", "p90_ms", "cpu_ms")),
                      f"{s['startup_s']:.2f}")
    console.print(t)
    c = Table(title="Ratios (wall: mean ms per candidate; CPU: CPU ms per candidate)")
    for col in ("what", "wall", "CPU"):
        c.add_column(col, justify="left" if col == "what" else "right", no_wrap=True)
    vs, growth = summary["openevolve_over_evolve"], summary["growth"]
    for n in summary["sizes"] if vs else ():
        for mode in (EXCLUDED, INCLUDED):
            c.add_row(f"OpenEvolve / {mode}, {n:,} programs",
                      *(_times(vs[k].get(n, {}).get(mode)) for k in ("mean_ms", "cpu_ms")))
    lo, hi = summary["sizes"]
    for name in growth.get("mean_ms", {}):
        c.add_row(f"growth {lo:,} -> {hi:,} programs: {name}",
                  *(_times(growth[k].get(name)) for k in ("mean_ms", "cpu_ms")))
    console.print(c)


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,5000", help="archive sizes, comma-separated (default 100,5000)")
    ap.add_argument("--iterations", type=int, default=40, help="timed candidates per configuration (default 40)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per configuration and size (default 3)")
    ap.add_argument("--skip-openevolve", action="store_true", help="measure evolve only")
    ap.add_argument("--openevolve-venv", default=DEFAULT_OE_VENV,
                    help=f"venv for openevolve=={OPENEVOLVE_VERSION}, created on first use (default {DEFAULT_OE_VENV})")
    ap.add_argument("--problem-format", choices=["openevolve", "native"], default="openevolve",
                    help="fixture evolve runs (OpenEvolve always runs the OpenEvolve-format one)")
    ap.add_argument("--sandbox", choices=["local", "docker"], default="local",
                    help="evolve's sandbox for the 'sandbox included' row (default local: LocalSandbox)")
    ap.add_argument("--timeout", type=float, default=600, help="limit per subprocess, seconds")
    ap.add_argument("--workdir", help="parent of the scratch directory (default: system temp)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch directory (archives, logs)")
    args = ap.parse_args(argv)
    args.sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    if args.iterations < 20 or args.repeats < 1 or not args.sizes or min(args.sizes) < SETUP_ITERATIONS + 2:
        ap.error("need --iterations >= 20, --repeats >= 1 and sizes >= 4")
    load_start, source = os.getloadavg(), _source_fingerprint()
    bench = Bench(args)
    try:
        results = bench.run()
    finally:
        bench.close()
    oe_venv = None if args.skip_openevolve else Path(args.openevolve_venv)
    summary = summarize(results, args.sizes)
    report = {
        "machine": oe_machine(oe_venv, load_start),
        "settings": {
            "iterations": args.iterations, "repeats": args.repeats, "sizes": args.sizes,
            "evolve_problem": args.problem_format, "evolve_sandbox_included": args.sandbox,
            "evolve_source_sha256": source, "evolve_parallel": OURS_PARALLEL,
            "evolve_llm_parallel": OURS_LLM_PARALLEL, "evolve_flags": list(OURS_ONE_CALL_PER_CANDIDATE),
            "openevolve": None if oe_venv is None else yaml.safe_load((OPENEVOLVE_PROBLEM / "config.yaml").read_text()),
            "statistic": "mean_ms = (last - first request arrival in the steady-state window) / candidates "
                         "in it; the headline number. median_ms = median gap between arrivals. cpu_ms = CPU "
                         "time of the tested process tree over the same window / candidates. Medians over "
                         "repeats.",
        },
        **summary,
        "runs": {name: {str(n): reps for n, reps in by.items()} for name, by in results.items()},
    }
    print_tables(bench.console, summary, args)
    if args.keep:
        print(f"scratch kept in {bench.work}")
    write_result("controller_overhead", report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
