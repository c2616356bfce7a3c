"""Issue 41's measure: the peers' own example folders, unchanged, through evolve.

    python bench/peer_folders.py --work DIR [--only NAME ...] [--openevolve-venv PATH]
        [--shinka-venv PATH] [--openevolve-git DIR] [--shinka-git DIR] [--levi-git DIR]
        [--timeout S] [--run-timeout S]

Sixteen folders: twelve of OpenEvolve's examples (commit 411fb59), three of ShinkaEvolve's
(v0.0.7) and LEVI's examples/ADRS/txn_scheduling (1283dca), each taken with `git archive`
from the peer's repository (bare git dirs, default /work/.mirror/...). evolve itself is a
fresh `git clone` of this repository's HEAD, run with an empty HOME and an empty
CARGO_HOME, so nothing cached on this machine helps it. Per folder:

- peer: the seed scored as the peer does. OpenEvolve 0.4.1: its Evaluator and fitness rule
  (bench/openevolve_compat.py's driver); ShinkaEvolve 0.0.7: `python evaluate.py
  --program_path P --results_dir D`, correct.json and metrics.json's combined_score; LEVI:
  levi/utils/evaluation.py's evaluate_code on SEED_PROGRAM and score_fn, loaded by path.
  Run --peer-runs times (2); where they differ the cell shows the spread.
- check: `evolve check FOLDER --sandbox local` (--run-sandbox): ok, else its error line.
- local / docker: `evolve eval FOLDER PROGRAM --json --sandbox local|docker`.
- run3: `evolve run FOLDER --iterations 3 --sandbox local` (--run-sandbox) against evolve/testing/scripted_llm.py
  whose one reply is the seed with a comment appended; its best score, from `evolve
  archive runs --json`.

Writes bench/results/peer_folders.json and prints a markdown table. Exit 1 when a row
DIFFERs (an evolve score outside the peer's)."""

from __future__ import annotations

import argparse
import ast
import datetime as dt
import json
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import result_path  # noqa: E402
from openevolve_compat import DRIVER  # noqa: E402
from peer_common import (  # noqa: E402
    REPO,
    Cell,
    clean_env,
    last_line,
    one_line,
    run,
    verdict,
)

RESULTS = result_path("peer_folders")
MIRROR = Path("/work/.mirror")
COMMITS = {"openevolve": "411fb59", "shinka": "v0.0.7", "levi": "1283dca"}
GITS = {
    "openevolve": MIRROR / "algorithmicsuperintelligence+openevolve" / "repo",
    "shinka": MIRROR / "SakanaAI+ShinkaEvolve" / "repo",
    "levi": MIRROR / "ttanv+levi" / "repo",
}
COMMENT = {".py": "#", ".r": "#", ".f90": "!", ".go": "//", ".rs": "//"}
FENCE = {".py": "python", ".r": "r", ".f90": "fortran", ".go": "go", ".rs": "rust"}


@dataclass(frozen=True)
class Spec:
    """One peer folder: its name, whose it is, its path in that repository, its seed file
    (None: LEVI's SEED_PROGRAM string)."""

    name: str
    peer: str
    path: str
    seed: str | None


MATH = "examples/alphaevolve_math_problems"
FOLDERS = (
    Spec("circle_packing_rect", "openevolve", f"{MATH}/circle_packing_rect", "initial_program.py"),
    Spec("hexagon_packing_11", "openevolve", f"{MATH}/hexagon_packing/11", "initial_program.py"),
    Spec("kissing_number", "openevolve", f"{MATH}/kissing_number", "initial_program.py"),
    Spec(
        "minimizing_max_min_dist_3",
        "openevolve",
        f"{MATH}/minimizing_max_min_dist/3",
        "initial_program.py",
    ),  # fmt: skip
    Spec("heilbronn_convex_13", "openevolve", f"{MATH}/heilbronn_convex/13", "initial_program.py"),
    Spec("erdos_min_overlap", "openevolve", f"{MATH}/erdos_min_overlap", "initial_program.py"),
    Spec("uncertainty_ineq", "openevolve", f"{MATH}/uncertainty_ineq", "initial_program.py"),
    Spec("web_scraper_optillm", "openevolve", "examples/web_scraper_optillm", "initial_program.py"),
    Spec(
        "online_judge_programming",
        "openevolve",
        "examples/online_judge_programming",
        "initial_program.py",
    ),  # fmt: skip
    Spec(
        "attention_optimization",
        "openevolve",
        "examples/attention_optimization",
        "initial_program.py",
    ),  # fmt: skip
    Spec("r_robust_regression", "openevolve", "examples/r_robust_regression", "initial_program.r"),
    Spec(
        "sums_diffs_finite_sets",
        "openevolve",
        f"{MATH}/sums_diffs_finite_sets",
        "initial_program.py",
    ),  # fmt: skip
    Spec("rust_adaptive_sort", "openevolve", "examples/rust_adaptive_sort", "initial_program.rs"),
    Spec("fortran_heat_diffusion", "shinka", "examples/fortran_heat_diffusion", "initial.f90"),
    Spec("go_collatz_steps", "shinka", "examples/go_collatz_steps", "initial.go"),
    Spec("novelty_generator", "shinka", "examples/novelty_generator", "initial.py"),
    Spec("txn_scheduling", "levi", "examples/ADRS/txn_scheduling", None),
)

# Run by the bench's python in the folder's copy: LEVI's own scoring of SEED_PROGRAM.
LEVI_DRIVER = """
import importlib.util, json, re, sys
sys.path.insert(0, ".")
spec = importlib.util.spec_from_file_location("levi_evaluation", sys.argv[1])
ev = importlib.util.module_from_spec(spec); spec.loader.exec_module(ev)
import problem
name = re.search(r"def\\s+(\\w+)\\s*\\(", problem.FUNCTION_SIGNATURE).group(1)
result = ev.evaluate_code(problem.SEED_PROGRAM, problem.score_fn, None, name)
score, error = ev.coerce_score(result)
print(json.dumps({"score": score, "error": error}))
"""


def levi_seed(problem_py: Path) -> str:
    """SEED_PROGRAM's literal, read with ast (importing problem.py runs its workloads)."""
    for node in ast.parse(problem_py.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "SEED_PROGRAM" for t in node.targets
        ):
            return ast.literal_eval(node.value)
    raise SystemExit(f"{problem_py}: no SEED_PROGRAM literal")


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.work = Path(args.work).resolve()
        if self.work.exists():
            shutil.rmtree(self.work)
        self.home, self.cargo = self.work / "home", self.work / "cargo"
        for d in (self.home, self.cargo, self.work / "src", self.work / "copies"):
            d.mkdir(parents=True)
        self.clone = self.work / "evolve"
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        self.head = head.stdout.strip()  # what is committed: a clone has nothing else
        subprocess.run(
            ["git", "clone", "-q", "--no-checkout", str(REPO), str(self.clone)], check=True
        )
        subprocess.run(["git", "-C", str(self.clone), "checkout", "-q", self.head], check=True)
        self.count = 0
        self.levi_eval = self.work / "levi_evaluation.py"
        blob = f"{COMMITS['levi']}:levi/utils/evaluation.py"
        git = ["git", f"--git-dir={args.levi_git}", "show", blob]
        self.levi_eval.write_text(subprocess.run(git, capture_output=True, text=True).stdout)

    def earlier(self, name: str) -> list[dict] | None:
        """The peer's cells for `name` in --peer-from's file, read now (not at start)."""
        if not self.args.peer_from:
            return None
        rows = json.loads(Path(self.args.peer_from).read_text())["rows"]
        return next((r["peer_runs"] for r in rows if r["name"] == name), None)

    def source(self, spec: Spec) -> Path:
        """The folder as the peer's repository has it at the pinned commit."""
        dest = self.work / "src" / spec.peer
        if not (dest / spec.path).is_dir():
            git = getattr(self.args, f"{spec.peer}_git")
            archive = ["git", f"--git-dir={git}", "archive", COMMITS[spec.peer], spec.path]
            tar = subprocess.run(archive, capture_output=True, check=True).stdout
            dest.mkdir(exist_ok=True)
            subprocess.run(["tar", "-x", "-C", str(dest)], input=tar, check=True)
        return dest / spec.path

    def copy(self, spec: Spec, column: str) -> tuple[Path, Path]:
        """A fresh copy of the folder and its seed's path in it (LEVI's: written out)."""
        self.count += 1
        dest = self.work / "copies" / f"{self.count:03d}-{spec.name}-{column}"
        shutil.copytree(self.source(spec), dest)
        if spec.seed is None:
            seed = dest.parent / f"{dest.name}.seed.py"
            seed.write_text(levi_seed(dest / "problem.py"))
            return dest, seed
        return dest, dest / spec.seed

    def env(self) -> dict[str, str]:
        """evolve's environment: an empty HOME and CARGO_HOME, this bench's Python."""
        return clean_env({"HOME": str(self.home), "CARGO_HOME": str(self.cargo)})

    def evolve(self, *argv: str, timeout: float) -> subprocess.CompletedProcess | str:
        return run([sys.executable, "-m", "evolve.cli", *argv], self.clone, self.env(), timeout)

    # ------------------------------------------------------------------ the columns
    def peer(self, spec: Spec) -> Cell:
        folder, seed = self.copy(spec, "peer")
        env = clean_env()
        if spec.peer == "openevolve":
            out = folder.parent / f"{folder.name}.json"
            config = "config.yaml" if (folder / "config.yaml").is_file() else ""  # as run with it
            cmd = [
                self.args.openevolve_venv + "/bin/python",
                "-c",
                DRIVER,
                seed.name,
                config,
                str(out),
            ]
            r = run(cmd, folder, env, self.args.timeout)
            if isinstance(r, str):
                return Cell(error=r)
            if r.returncode != 0 or not out.is_file():
                return Cell(error=f"the driver failed: {last_line(r.stderr)}")
            got = json.loads(out.read_text())
            arts, metrics = got["artifacts"], got["metrics"]
            if "failure_stage" in arts or metrics.get("timeout") is True or "error" in metrics:
                why = arts.get("error_message") or arts.get("stderr") or metrics.get("error")
                return Cell(error=f"failed: {one_line(str(why or metrics))}")
            return Cell(score=float(got["score"]), valid=True)
        if spec.peer == "shinka":
            results = folder.parent / f"{folder.name}.results"
            cmd = [self.args.shinka_venv + "/bin/python", "evaluate.py", "--program_path",
                   seed.name, "--results_dir", str(results)]  # fmt: skip
            r = run(cmd, folder, env, self.args.timeout)
            if isinstance(r, str):
                return Cell(error=r)
            correct, metrics = results / "correct.json", results / "metrics.json"
            if not correct.is_file():
                return Cell(error=f"exit {r.returncode}, no correct.json: {last_line(r.stderr)}")
            ok = json.loads(correct.read_text()).get("correct") is True
            score = (json.loads(metrics.read_text()) if metrics.is_file() else {}).get(
                "combined_score"
            )
            return Cell(score=float(score) if ok and score is not None else None, valid=ok)
        r = run([sys.executable, "-c", LEVI_DRIVER, str(self.levi_eval)], folder, env,
                self.args.timeout)  # fmt: skip
        if isinstance(r, str):
            return Cell(error=r)
        if r.returncode != 0:
            return Cell(error=f"exit {r.returncode}: {last_line(r.stderr)}")
        got = json.loads(r.stdout.strip().splitlines()[-1])
        if got["error"]:
            return Cell(valid=False)
        return Cell(score=float(got["score"]), valid=True)

    def check(self, spec: Spec) -> str:
        folder, _ = self.copy(spec, "check")
        r = self.evolve("check", str(folder), "--sandbox", self.args.run_sandbox,
                        timeout=self.args.timeout)  # fmt: skip
        if isinstance(r, str):
            return f"ERROR: {r}"
        if r.returncode == 0:
            return "ok"
        errors = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("error:")]
        why = one_line(errors[0]) if errors else last_line(r.stderr or r.stdout)  # the cause
        return f"exit {r.returncode}: {why}"

    def eval(self, spec: Spec, sandbox: str) -> Cell:
        folder, seed = self.copy(spec, sandbox)
        argv = ["eval", str(folder), str(seed), "--json", "--sandbox", sandbox]
        r = self.evolve(*argv, timeout=self.args.timeout)
        if isinstance(r, str):
            return Cell(error=r)
        for line in reversed(r.stdout.strip().splitlines()):
            try:
                out = json.loads(line)
            except ValueError:
                continue
            if out.get("status") == "invalid":
                return Cell(valid=False)
            if out.get("status") == "ok" and isinstance(out.get("score"), (int, float)):
                return Cell(score=float(out["score"]), valid=True)
            arts = out.get("artifacts") or {}
            return Cell(error=f"{out.get('status')}: {one_line(str(arts.get('error') or arts))}")
        return Cell(error=f"exit {r.returncode}: {last_line(r.stderr or r.stdout)}")

    def run3(self, spec: Spec) -> str:
        """Three iterations against a scripted endpoint whose reply is the seed plus a
        comment: the run's best score, or the one line saying why there is none."""
        folder, seed = self.copy(spec, "run3")
        code = seed.read_text().rstrip("\n") + f"\n{COMMENT[seed.suffix]} scripted edit\n"
        reply = f"Appending a comment.\n\n```{FENCE[seed.suffix]}\n{code}\n```\n"
        replies = folder.parent / f"{folder.name}.replies.json"
        replies.write_text(json.dumps([{"content": reply}]))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        llm = subprocess.Popen(
            [sys.executable, "-m", "evolve.testing.scripted_llm", "--port", str(port), "--replies", str(replies)],
            cwd=self.clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        try:
            assert llm.stdout is not None
            llm.stdout.readline()  # "ScriptedLLM serving ..." once it listens
            runs = folder.parent / f"{folder.name}.runs"
            argv = ["run", str(folder), "--iterations", "3", "--api-base",
                    f"http://127.0.0.1:{port}/v1", "--model", "scripted", "--no-progress",
                    "--runs-dir", str(runs), "--sandbox", self.args.run_sandbox]  # fmt: skip
            r = self.evolve(*argv, timeout=self.args.run_timeout)
        finally:
            llm.terminate()
            llm.wait()
        if isinstance(r, str):
            return f"ERROR: {r}"
        if r.returncode != 0:
            return f"exit {r.returncode}: {last_line(r.stderr or r.stdout)}"
        q = self.evolve("archive", "runs", "--runs-dir", str(runs), "--json", timeout=60)
        if isinstance(q, str) or q.returncode != 0:
            return f"archive runs: {q if isinstance(q, str) else last_line(q.stderr)}"
        row = json.loads(q.stdout)[0]
        best = row.get("best_score")
        done = row.get("iterations_done")
        return (
            f"{best:.6g} ({done} it.)"
            if isinstance(best, (int, float))
            else f"no best ({done} it.)"
        )

    def row(self, spec: Spec) -> dict:
        print(f"{spec.name} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        earlier = self.earlier(spec.name)
        refs = [Cell(**c) for c in earlier] if earlier else [self.peer(spec) for _ in range(self.args.peer_runs)]
        docker = Cell(skipped="--no-docker") if self.args.no_docker else self.eval(spec, "docker")
        ours = {"local": self.eval(spec, "local"), "docker": docker}
        v, why = verdict(refs, ours, spec.peer)
        return {"name": spec.name, "peer": spec.peer, "path": spec.path, "seed": spec.seed,
                "peer_runs": [asdict(c) for c in refs], "check": self.check(spec),
                **{k: asdict(c) for k, c in ours.items()}, "run3": self.run3(spec),
                "verdict": v, "reason": why, "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip


def show(cell: dict) -> str:
    c = Cell(**cell)
    return c.show()


def peer_cell(runs: list[dict]) -> str:
    cells = [Cell(**c) for c in runs]
    if any(c.error for c in cells):
        return "ERROR"
    scores = sorted(c.score for c in cells if c.score is not None)
    if len(set(scores)) > 1:
        return f"{scores[0]:.6g}..{scores[-1]:.6g}"
    return cells[0].show()


def markdown(rows: list[dict]) -> str:
    head = "| folder | peer | peer's score | check | evolve local | evolve docker | 3-iteration run | verdict / reason |"
    lines = [head, "|" + "---|" * 8]
    for r in rows:
        peer = {"openevolve": "OpenEvolve 0.4.1", "shinka": "ShinkaEvolve 0.0.7", "levi": "LEVI"}
        cells = (r["name"], peer[r["peer"]], peer_cell(r["peer_runs"]), r["check"],
                 show(r["local"]), show(r["docker"]), r["run3"],
                 f"{r['verdict']} {r['reason']}".strip())  # fmt: skip
        lines.append(
            "| " + " | ".join(one_line(str(c), 160).replace("|", "/") for c in cells) + " |"
        )
    return "\n".join(lines)


def repeer(results: Path, peers: Path) -> int:
    """A table whose peer column was measured apart (the peer's runs take minutes and do
    not change with evolve's commits): RESULTS's evolve cells, PEERS's peer cells."""
    got = json.loads(results.read_text())
    cells = {r["name"]: r["peer_runs"] for r in json.loads(peers.read_text())["rows"]}
    for row in got["rows"]:
        row["peer_runs"] = cells.get(row["name"], row["peer_runs"])
        ours = {k: Cell(**row[k]) for k in ("local", "docker")}
        refs = [Cell(**c) for c in row["peer_runs"]]
        row["verdict"], row["reason"] = verdict(refs, ours, row["peer"])
    got["peer_from"] = str(peers)
    RESULTS.write_text(json.dumps(got, indent=1) + "\n")
    print(markdown(got["rows"]))
    print(f"\ntools on PATH: {got['tools_on_path']}; evolve {got['evolve']}; {RESULTS}")
    return 1 if any(r["verdict"] == "DIFFER" for r in got["rows"]) else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--work", required=True, help="a scratch folder (emptied first)")
    p.add_argument("--only", nargs="*", default=None, help="these folders alone")
    p.add_argument("--openevolve-venv", default="/tmp/oe-venv", help="has openevolve==0.4.1")
    p.add_argument("--shinka-venv", default="/tmp/shinka-venv", help="has shinka-evolve==0.0.7")
    for peer, git in GITS.items():
        p.add_argument(f"--{peer}-git", default=str(git), help=f"{peer}'s bare git dir")
    p.add_argument("--no-docker", action="store_true", help="leave the Docker column out")
    p.add_argument("--run-sandbox", default="local", choices=("local", "docker", "auto"),
                   help="the sandbox of the check and run3 columns")  # fmt: skip
    p.add_argument("--peer-runs", type=int, default=2,
                   help="peer runs per folder (more where the score counts seconds)")  # fmt: skip
    p.add_argument("--peer-from", help="a previous results JSON: take the peer's cells from it")
    p.add_argument("--timeout", type=float, default=600, help="per peer/check/eval call")
    p.add_argument("--run-timeout", type=float, default=900, help="per three-iteration run")
    p.add_argument("--repeer", metavar="RESULTS",
                   help="run nothing: RESULTS's rows with --peer-from's peer cells, verdicts anew")  # fmt: skip
    args = p.parse_args(argv)
    if args.repeer:
        return repeer(Path(args.repeer), Path(args.peer_from))
    specs = [s for s in FOLDERS if args.only is None or s.name in args.only]
    bench = Bench(args)
    rows: list[dict] = []
    tools = {t: shutil.which(t) is not None for t in ("gfortran", "go", "Rscript", "cargo")}
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for spec in specs:
        rows.append(bench.row(spec))
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
        RESULTS.write_text(json.dumps({  # after every row: a long run stopped keeps its rows
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "evolve": bench.head, "commits": COMMITS, "tools_on_path": tools, "rows": rows,
        }, indent=1) + "\n")  # fmt: skip
    print(markdown(rows))
    print(f"\ntools on PATH: {tools}; evolve {bench.head}; {RESULTS}")
    return 1 if any(r["verdict"] == "DIFFER" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
