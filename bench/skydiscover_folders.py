"""Issue 44's measure, SkyDiscover half: its containerized benchmark folders, unchanged.

    python bench/skydiscover_folders.py --skydiscover DIR --work SCRATCH [--only PATH ...]
        [--every] [--no-docker] [--timeout S] [--run-timeout S]

DIR is a SkyDiscover checkout fetched for the bench (e.g. `git clone
https://github.com/skydiscover-ai/skydiscover && git -C skydiscover checkout 59643ef`),
never committed here. The folders: ADRS/prism, ADRS/txn_scheduling and
math/signal_processing (the issue's three), or with --every each benchmarks/**/evaluator/
evaluate.sh folder. evolve is a fresh `git clone` of this repository's HEAD run with an
empty HOME. Per folder:

- peer: the seed scored by SkyDiscover's protocol, `/benchmark/evaluate.sh PROGRAM train`
  with evaluator/ at /benchmark as its working directory, stdout's one JSON object's
  combined_score when status is success. SkyDiscover's own path builds evaluator/Dockerfile
  (FROM python:3.12-slim), which no registry serves offline, so the script runs here
  under bubblewrap binding evaluator/ at /benchmark, on this Python or --peer-python's
  (a venv with the folders' evaluator/requirements.txt). Run --peer-runs times (5): a seed
  that draws unseeded random numbers (txn_scheduling's) scores within that spread.
- check: `evolve check FOLDER --sandbox local`.
- local / docker: `evolve eval FOLDER SEED --json --sandbox local|docker`.
- run3: `evolve run FOLDER --iterations 3 --sandbox local` against evolve/testing/scripted_llm.py,
  whose one reply is the seed with a comment appended; the run's best score.

With --plain, DIR is SkyDiscover's first release (@948f448), whose folders hold
`initial_program.py`, `evaluator.py` and `config.yaml` (no evaluator/): the peer column is
that release's own Evaluator (skydiscover.evaluation, run with the folder's config.yaml's
evaluator settings, cascade included) in --peer-python, which needs `pip install --no-deps
DIR` beside the folders' requirements; --every then takes each benchmarks/**/evaluator.py.
A current folder that has both evaluator.py and evaluator/ (math/circle_packing) is scored
the same way, as SkyDiscover's quick start runs it.

Writes bench/results/skydiscover_folders.json and prints a markdown table. Exit 1 when a
row DIFFERs (an evolve score outside the peer's)."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import result_path  # noqa: E402
from peer_common import REPO, Cell, clean_env, last_line, one_line, run, verdict  # noqa: E402

RESULTS = result_path("skydiscover_folders")
DEFAULT = ("benchmarks/ADRS/prism", "benchmarks/ADRS/txn_scheduling",
           "benchmarks/math/signal_processing")  # fmt: skip


class Bench:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.src = Path(args.skydiscover).resolve()
        self.work = Path(args.work).resolve()
        if self.work.exists():
            shutil.rmtree(self.work)
        self.home = self.work / "home"
        for d in (self.home, self.work / "copies"):
            d.mkdir(parents=True)
        self.clone = self.work / "evolve"
        head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True)  # fmt: skip
        self.head = head.stdout.strip()
        subprocess.run(["git", "clone", "-q", str(REPO), str(self.clone)], check=True)
        subprocess.run(["git", "-C", str(self.clone), "checkout", "-q", self.head], check=True)
        self.count = 0

    def copy(self, rel: str, column: str) -> Path:
        self.count += 1
        name = rel.replace("/", "_")
        dest = self.work / "copies" / f"{self.count:03d}-{name}-{column}"
        shutil.copytree(self.src / rel, dest)
        return dest

    def evolve(self, *argv: str, timeout: float) -> subprocess.CompletedProcess | str:
        env = clean_env({"HOME": str(self.home)})
        return run([sys.executable, "-m", "evolve.cli", *argv], self.clone, env, timeout)

    def peer(self, rel: str) -> Cell:
        """A folder with both layouts runs evaluator.py in SkyDiscover's quick start
        (`skydiscover-run SEED evaluator.py`), as in evolve: its Evaluator scores it."""
        plain = self.args.plain or (self.src / rel / "evaluator.py").is_file()
        return self.plain_peer(rel) if plain else self.script_peer(rel)

    def plain_peer(self, rel: str) -> Cell:
        """The first release's Evaluator on the seed, as its runner scores a program."""
        folder = self.copy(rel, "peer")
        cmd = [self.args.peer_python or sys.executable, "-c", PLAIN_DRIVER]
        r = run(cmd, folder, clean_env(), self.args.timeout)
        if isinstance(r, str):
            return Cell(error=r)
        if r.returncode != 0:
            return Cell(error=f"exit {r.returncode}: {last_line(r.stderr)}")
        metrics = json.loads(r.stdout.strip().splitlines()[-1])
        if "combined_score" not in metrics:  # SkyDiscover's failure: {"error": 0.0, ...}
            return Cell(valid=False)
        return Cell(score=float(metrics["combined_score"]), valid=True)

    def script_peer(self, rel: str) -> Cell:
        folder = self.copy(rel, "peer")
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            return Cell(error="no bwrap: cannot show evaluator/ at /benchmark")
        env = clean_env()
        python = Path(self.args.peer_python or sys.executable).parent  # its `python`
        env["PATH"] = f"{python}{os.pathsep}{env.get('PATH', '')}"
        cmd = [bwrap, "--dev-bind", "/", "/", "--ro-bind", str(folder / "evaluator"),
               "/benchmark", "--chdir", "/benchmark", "bash", "/benchmark/evaluate.sh",
               str(folder / "initial_program.py"), "train"]  # fmt: skip
        r = run(cmd, folder, env, self.args.timeout)
        if isinstance(r, str):
            return Cell(error=r)
        if r.returncode != 0:
            return Cell(error=f"exit {r.returncode}: {last_line(r.stderr)}")
        try:
            out = json.loads(r.stdout.strip())
        except ValueError:
            return Cell(error=f"not one JSON object: {last_line(r.stdout)}")
        if out.get("status") != "success":
            return Cell(valid=False)
        metrics = out.get("metrics") or {}
        return Cell(
            score=float(metrics.get("combined_score", out.get("combined_score"))), valid=True
        )

    def check(self, rel: str) -> str:
        r = self.evolve("check", str(self.copy(rel, "check")), "--sandbox", "local",
                        timeout=self.args.timeout)  # fmt: skip
        if isinstance(r, str):
            return f"ERROR: {r}"
        if r.returncode == 0:
            return "ok"
        errors = [ln.strip() for ln in r.stdout.splitlines() if ln.strip().startswith("error:")]
        return f"exit {r.returncode}: {one_line(errors[0]) if errors else last_line(r.stderr)}"

    def eval(self, rel: str, sandbox: str) -> Cell:
        folder = self.copy(rel, sandbox)
        argv = ["eval", str(folder), str(folder / "initial_program.py"), "--json"]
        r = self.evolve(*argv, "--sandbox", sandbox, timeout=self.args.timeout)
        if isinstance(r, str):
            return Cell(error=r)
        for line in reversed(r.stdout.strip().splitlines()):
            try:
                out = json.loads(line)
            except ValueError:
                continue
            if out.get("status") == "ok" and isinstance(out.get("score"), (int, float)):
                return Cell(score=float(out["score"]), valid=True)
            arts = out.get("artifacts") or {}
            return Cell(error=f"{out.get('status')}: {one_line(str(arts.get('error') or arts))}")
        return Cell(error=f"exit {r.returncode}: {last_line(r.stderr or r.stdout)}")

    def run3(self, rel: str) -> str:
        folder = self.copy(rel, "run3")
        code = (folder / "initial_program.py").read_text().rstrip("\n") + "\n# scripted edit\n"
        replies = folder.parent / f"{folder.name}.replies.json"
        replies.write_text(json.dumps([{"content": f"A comment.\n\n```python\n{code}\n```\n"}]))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        llm = subprocess.Popen(
            [sys.executable, "-m", "evolve.testing.scripted_llm", "--port", str(port), "--replies", str(replies)],
            cwd=self.clone, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        runs = folder.parent / f"{folder.name}.runs"
        try:
            assert llm.stdout is not None
            llm.stdout.readline()  # it listens
            r = self.evolve("run", str(folder), "--iterations", "3", "--api-base",
                            f"http://127.0.0.1:{port}/v1", "--model", "scripted",
                            "--no-progress", "--runs-dir", str(runs), "--sandbox", "local",
                            "--edit-format", "full", timeout=self.args.run_timeout)  # fmt: skip
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

    def row(self, rel: str) -> dict:
        print(f"{rel} ...", file=sys.stderr, flush=True)
        t0 = time.monotonic()
        refs = [self.peer(rel) for _ in range(self.args.peer_runs)]
        docker = Cell(skipped="--no-docker") if self.args.no_docker else self.eval(rel, "docker")
        ours = {"local": self.eval(rel, "local"), "docker": docker}
        v, why = verdict(refs, ours, "SkyDiscover")
        return {"folder": rel, "peer_runs": [asdict(c) for c in refs], "check": self.check(rel),
                **{k: asdict(c) for k, c in ours.items()}, "run3": self.run3(rel),
                "verdict": v, "reason": why, "seconds": round(time.monotonic() - t0, 1)}  # fmt: skip


PLAIN_DRIVER = """
import asyncio, json, os
from skydiscover.config import load_config
from skydiscover.evaluation import Evaluator
cfg = load_config("config.yaml" if os.path.isfile("config.yaml") else None).evaluator
cfg.evaluation_file = os.path.abspath("evaluator.py")
result = asyncio.run(Evaluator(cfg).evaluate_program(open("initial_program.py").read(), "seed"))
print(json.dumps({k: v for k, v in result.metrics.items() if isinstance(v, (int, float))}))
"""


def markdown(rows: list[dict]) -> str:
    head = "| folder | SkyDiscover's score | check | evolve local | evolve docker | 3-iteration run | verdict / reason |"
    lines = [head, "|" + "---|" * 7]
    for r in rows:
        peers = [Cell(**c) for c in r["peer_runs"]]
        scores = sorted({c.score for c in peers if c.score is not None})
        peer = peers[0].show() if len(scores) < 2 else f"{scores[0]:.6g}..{scores[-1]:.6g}"
        cells = (r["folder"], peer, r["check"], Cell(**r["local"]).show(),
                 Cell(**r["docker"]).show(), r["run3"], f"{r['verdict']} {r['reason']}".strip())  # fmt: skip
        lines.append(
            "| " + " | ".join(one_line(str(c), 160).replace("|", "/") for c in cells) + " |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--skydiscover", required=True, help="a SkyDiscover checkout (fetched)")
    p.add_argument("--work", required=True, help="a scratch folder (emptied first)")
    p.add_argument("--only", nargs="*", default=None, help="these folders (paths in DIR)")
    p.add_argument("--every", action="store_true", help="every evaluator/evaluate.sh folder")
    p.add_argument("--no-docker", action="store_true", help="leave the Docker column out")
    p.add_argument("--plain", action="store_true",
                   help="DIR is the first release: folders with evaluator.py (its Evaluator)")  # fmt: skip
    p.add_argument("--peer-python", help="the peer column's Python (with the folders' "
                   "evaluator/requirements.txt installed); default: this one")  # fmt: skip
    p.add_argument("--peer-runs", type=int, default=5,
                   help="peer runs per folder: their spread is a random seed's noise")  # fmt: skip
    p.add_argument("--timeout", type=float, default=600, help="per peer/check/eval call")
    p.add_argument("--run-timeout", type=float, default=900, help="per three-iteration run")
    args = p.parse_args(argv)
    src = Path(args.skydiscover)
    if not (src / "benchmarks").is_dir():
        raise SystemExit(f"--skydiscover {src}: no benchmarks/ folder (a SkyDiscover checkout?)")
    folders = list(args.only or DEFAULT)
    if args.every:
        pattern = (
            "benchmarks/**/evaluator.py" if args.plain else "benchmarks/**/evaluator/evaluate.sh"
        )
        found = sorted(f.parent for f in src.glob(pattern))
        folders = [str((f if args.plain else f.parent).relative_to(src)) for f in found]
    global RESULTS
    if args.plain:
        RESULTS = result_path("skydiscover_plain_folders")
    bench = Bench(args)
    rows: list[dict] = []
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    for rel in folders:
        rows.append(bench.row(rel))
        print(markdown(rows[-1:]).splitlines()[-1], file=sys.stderr, flush=True)
        RESULTS.write_text(json.dumps({
            "date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "evolve": bench.head, "skydiscover": str(src), "rows": rows,
        }, indent=1) + "\n")  # fmt: skip
    print(markdown(rows))
    print(f"\nevolve {bench.head}; {RESULTS}")
    return 1 if any(r["verdict"] == "DIFFER" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
