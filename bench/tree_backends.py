"""Programs of several files on every backend: scripted runs of the two multi-file problems,
killed and resumed, then benchmarked (issue 38's measure).

    .venv/bin/python bench/tree_backends.py [--backends local,docker,ray] [--iterations 6]

For each of problems/dag_modular, problems/llm_serving_modular and a problem just made by
`evolve new scaffold --files 3` (and checked), and each backend, with a
scripted OpenAI-compatible server whose every reply rewrites two modules of the tree (what
evolve/testing/dag_modular_edits.py and evolve/testing/llm_serving_modular_edits.py hold; later replies vary a
constant so each program is new):
  1. `evolve run PROBLEM --sandbox B --data-seed 2023 --tune-evals 0`, SIGKILLed once its
     second program is stored, then `evolve resume` to the end;
  2. checks the archive: the run finished with every iteration once, every program's code
     is the whole tree, no reply was asked for twice; `evolve archive checkout` writes the
     best's tree and `evolve eval PROBLEM DIR` scores it as the run did; `archive show` and
     `archive diff` answer with its files named, and so does `evolve ui`'s program page;
  3. `evolve bench PROBLEM --sandbox B --calls 2 --seeds 1`.
Prints a line per (problem, backend) with the best's train and held-out scores and the wall
time as a ratio against the local backend measured in the same run; writes
bench/results/tree_backends.json.
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import json
import os
import platform
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from harness import result_path  # noqa: E402

from evaluators import tree  # noqa: E402
from evolve.archive import ArchiveReader  # noqa: E402
from evolve.testing import dag_modular_edits as dag  # noqa: E402
from evolve.testing import llm_serving_modular_edits as serving  # noqa: E402
from evolve.testing.scripted_llm import Reply, ScriptedLLM  # noqa: E402

EVOLVE = str(Path(sys.executable).with_name("evolve"))
DATA_SEED = "2023"


def _fenced(path: str, body: str) -> str:
    return f"{path}\n```python\n# EVOLVE-BLOCK-START\n{body.strip()}\n# EVOLVE-BLOCK-END\n```\n"


def _serving_reply(k: int) -> str:
    budget = 512 + 16 * k  # every program new: its own token budget while requests decode
    batching = serving.STALL_FREE_ADAPTIVE.replace("(512 if plan", f"({budget} if plan")
    return (
        f"Finish what has started, then the shortest; stall-free chunks of {budget}.\n\n"
        + _fenced("policy/admission.py", serving.STARTED_THEN_SHORTEST)
        + "\n"
        + _fenced("policy/batching.py", batching)
    )


def _dag_reply(k: int) -> str:
    """dag_scheduling's best_of_rules in two modules, with 8 + k perturbed rank rules."""
    return dag.BEST_OF_RULES.replace("for _ in range(8):", f"for _ in range({8 + k}):")


def _scaffold_reply(k: int) -> str:
    """`evolve new NAME --files 3`'s policy: one module's priority term per reply."""
    part = k % 3 + 1
    term = ("duration", "-job_id", "duration * duration")[k % 3]
    body = f"def priority(job_id, duration):\n    return {term} * {k}\n"
    return f"Weigh part {part} by {term}.\n\n" + _fenced(f"policy/part{part}.py", body)


PROBLEMS = {
    "dag_modular": _dag_reply,
    "llm_serving_modular": _serving_reply,
    "scaffold": _scaffold_reply,  # `evolve new scaffold --files 3`, made in the run's folder
}


def _answers(make):
    counter, lock = iter(range(1, 10**6)), threading.Lock()

    def answer(request: dict) -> Reply:
        with lock:
            k = next(counter)
        return Reply(make(k), delay_s=0.05)

    return answer


def _evolve(*args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        [EVOLVE, *map(str, args)], capture_output=True, text=True, timeout=timeout, env=_env()
    )


def _env() -> dict[str, str]:
    return {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "disabled"}


def _stored(runs: Path, run_id: str) -> int:
    try:
        db = sqlite3.connect(runs / "archive.db")
        try:
            return db.execute(
                "SELECT count(*) FROM programs WHERE run_id=? AND status!='pending'", (run_id,)
            ).fetchone()[0]
        finally:
            db.close()
    except sqlite3.OperationalError:
        return 0


def _killed_and_resumed(problem: Path, backend: str, runs: Path, url: str, n: int) -> dict:
    """The run, SIGKILLed once two programs are stored, resumed to its end."""
    args = ["run", problem, "--iterations", n, "--api-base", url, "--model", "scripted",
            "--runs-dir", runs, "--no-progress", "--sandbox", backend, "--data-seed", DATA_SEED,
            "--tune-evals", "0", "--run-id", "t", "--llm-backoff", "0.05"]  # fmt: skip
    proc = subprocess.Popen([EVOLVE, *map(str, args)], env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline, killed = time.monotonic() + 900, False
    while proc.poll() is None and time.monotonic() < deadline:
        if _stored(runs, "t") >= 2:
            proc.send_signal(signal.SIGKILL)
            killed = True
            break
        time.sleep(0.05)
    proc.wait()
    resumed = _evolve("resume", "t", "--runs-dir", runs, "--no-progress")
    if resumed.returncode != 0:
        raise SystemExit(f"{problem.name} on {backend}: resume failed: {resumed.stderr[-800:]}")
    return {"killed": killed}


def _check(problem: Path, runs: Path, n: int, work: Path) -> dict:
    reader = ArchiveReader(runs)
    [run] = [r for r in reader.runs() if r.run_id == "t"]
    programs = reader.programs("t", code=True)
    mutations = [p for p in programs if p.kind != "tune"]
    iterations = collections.Counter(p.iteration for p in mutations)
    trees = all(p.code is not None and tree.is_tree(p.code) for p in programs)
    db = sqlite3.connect(runs / "archive.db")
    asked = collections.Counter(
        r[0] for r in db.execute("SELECT iteration FROM llm_calls WHERE run_id='t' AND reply IS NOT NULL")
    )
    db.close()
    best = reader.best(run_id="t")
    assert best is not None
    out = work / "best"
    r = _evolve("archive", "checkout", best.program_id, out, "--runs-dir", runs)
    if r.returncode != 0:
        raise SystemExit(f"checkout failed: {r.stderr[-500:]}")
    ev = _evolve("eval", problem, out, "--data-seed", DATA_SEED, "--json")
    scored = json.loads(ev.stdout) if ev.returncode == 0 else {"error": ev.stderr[-300:]}
    paths = list(tree.decode(best.code or "", ""))
    shown = _evolve("archive", "show", best.program_id, "--runs-dir", runs)
    diff = _evolve("archive", "diff", best.program_id, "--runs-dir", runs)
    return {
        "status": getattr(run, "status", None),
        "iterations_once": sorted(iterations) == list(range(n + 1)) and max(iterations.values()) == 1,
        "programs": len(programs),
        "all_trees": trees,
        "no_reply_asked_twice": not asked or max(asked.values()) == 1,
        "best": best.program_id,
        "best_train": best.score,
        "best_test": best.test_score,
        "eval_train": scored.get("score"),
        "eval_matches_run": scored.get("score") == best.score,
        "show_and_diff_name_files": shown.returncode == diff.returncode == 0
        and all(p in shown.stdout for p in paths),
        "web_page_shows_files": _web_shows(runs, best.program_id, paths),
    }


def _web_shows(runs: Path, program_id: str, paths: list[str]) -> bool:
    """`evolve ui`'s program page names every file of the tree."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ui = subprocess.Popen([EVOLVE, "ui", "--runs-dir", str(runs), "--port", str(port),
                           "--no-baselines"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, env=_env())  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}/programs/{urllib.parse.quote(program_id)}"
        for _ in range(600):
            try:
                with urllib.request.urlopen(url, timeout=10) as page:
                    html = page.read().decode()
                return all(p in html for p in paths)
            except OSError:
                time.sleep(0.1)
        return False
    finally:
        ui.terminate()
        ui.wait()


def _bench(problem: Path, backend: str, runs: Path, url: str) -> dict:
    r = _evolve("bench", problem, "--model", "scripted", "--api-base", url, "--calls", "2",
                "--seeds", "1", "--sandbox", backend, "--runs-dir", runs,
                "--data-seed", DATA_SEED, "--run-arg=--tune-evals=0", "--json")  # fmt: skip
    if r.returncode != 0:
        return {"ok": False, "error": r.stderr[-500:]}
    return {"ok": True, "summary": json.loads(r.stdout)}


def measure(name: str, backend: str, n: int) -> dict:
    work = Path(tempfile.mkdtemp(prefix=f"tree-{name}-{backend}-"))
    t0 = time.monotonic()
    problem = ROOT / "problems" / name
    if name == "scaffold":
        problem = work / name
        made = subprocess.run([EVOLVE, "new", name, "--files", "3"], cwd=work, env=_env(),
                              capture_output=True, text=True)  # fmt: skip
        checked = _evolve("check", problem, "--sandbox", "local")
        if made.returncode or checked.returncode:
            raise SystemExit(f"evolve new --files 3: {made.stderr}{checked.stderr[-800:]}")
    with ScriptedLLM(_answers(PROBLEMS[name])) as srv:
        row = _killed_and_resumed(problem, backend, work / "runs", srv.base_url, n)
        row.update(_check(problem, work / "runs", n, work))
        row["run_s"] = time.monotonic() - t0
        row["bench"] = _bench(problem, backend, work / "bench", srv.base_url)
    row["wall_s"] = time.monotonic() - t0
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--backends", default="local,docker,ray")
    ap.add_argument("--iterations", type=int, default=6)
    ap.add_argument("--problems", default=",".join(PROBLEMS))
    args = ap.parse_args()
    rows = []
    for name in args.problems.split(","):
        local_s = None
        for backend in args.backends.split(","):
            row = measure(name, backend, args.iterations)
            local_s = row["wall_s"] if backend == "local" else local_s
            ratio = f"{row['wall_s'] / local_s:.2f}x local" if local_s else "-"
            bench = "bench ok" if row["bench"]["ok"] else f"bench FAILED {row['bench']['error']}"
            print(
                f"{name:20} {backend:6} {row['status']}, killed {row['killed']}, iterations once "
                f"{row['iterations_once']}, trees {row['all_trees']}, replies once "
                f"{row['no_reply_asked_twice']}; best {row['best_train']:.4f} held-out "
                f"{row['best_test']}; eval of its checkout {row['eval_train']} "
                f"(same: {row['eval_matches_run']}); show/diff {row['show_and_diff_name_files']}, "
                f"web {row['web_page_shows_files']}; {bench}; {row['wall_s']:.0f} s ({ratio})",
                flush=True,
            )
            rows.append({"problem": name, "backend": backend, **row})
    out = result_path("tree_backends")
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"date": dt.datetime.now(dt.UTC).isoformat(), "machine": platform.platform(),
            "cpus": os.cpu_count(), "iterations": args.iterations}  # fmt: skip
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=str))
    print(f"written: {out}")
    ok = all(r["status"] == "finished" and r["iterations_once"] and r["all_trees"]
             and r["eval_matches_run"] and r["no_reply_asked_twice"] and r["bench"]["ok"]
             and r["show_and_diff_name_files"] and r["web_page_shows_files"] for r in rows)  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
