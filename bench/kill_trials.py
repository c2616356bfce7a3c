"""kill -9 trials: SIGKILL the controller at a random moment, resume, count the damage.

    .venv/bin/python bench/kill_trials.py [--trials 10] [--iterations 30] [--seed 0]
                                          [--sandbox local|docker] [--eval-timeout 3]

Each trial starts `evolve run` on the toy problem (evolve/testing/toy_problem.py) with a scripted
OpenAI-compatible server (evolve/testing/scripted_llm.py), kills the controller with SIGKILL at a
random moment of the run (a seeded RNG; uniform over the span an uninterrupted reference
run took from its run row to its exit), waits until the evaluation deadline of everything
that was in flight has passed, looks for what of the killed run is still alive, then
`evolve resume`s the run to completion and reads the archive. Every eighth reply is a
candidate that sleeps far past the deadline (and forks a child that sleeps too), so a kill
often lands while one is being evaluated.

Counted per trial:
- lost: iterations missing at the end (fewer than --iterations finished programs);
- repeated: work done twice: a program finished before the kill whose row changed
  afterwards (re-evaluated or rewritten), an iteration with more than one LLM reply
  stored, an iteration number archived twice;
- orphaned: processes of the killed run still alive after its evaluation deadline
  (found by the process tree at the kill, by the sandbox token of each evaluation and
  by a marker in the controller's environment; with docker, also the processes other
  than the agent in the run's labeled containers). They are killed, by pid, once counted.

Also shown: the programs finished and in flight (pending) at the kill, how many of those
were sleepers, the run's processes at the kill (its process tree), and how many of them
were still alive right after it (before the deadline: these may still be on their way out).

Writes bench/results/kill_trials.json (kill_trials_docker.json with --sandbox docker).
"""

from __future__ import annotations

import argparse
import itertools
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

from harness import machine, write_result
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parent.parent

from evaluators.local.process_tree import TOKEN_VAR  # noqa: E402
from evolve.testing.scripted_llm import Reply, ScriptedLLM  # noqa: E402
from evolve.testing.toy_problem import toy_problem  # noqa: E402

try:
    import psutil
except ImportError:  # read /proc instead
    psutil = None

MARK_VAR = "EVOLVE_KILL_TRIAL_MARK"  # set on the controller: inherited by what it starts
SLEEPER_EVERY = 8
GRACE_S = 3.0  # after the evaluation deadline, for the kill and its teardown


# ---- the scripted model ----------------------------------------------------------------


def responder():
    """Unique answers (no duplicates); every SLEEPER_EVERY-th sleeps past any deadline."""
    counter, lock = itertools.count(1), threading.Lock()

    def answer(request: dict) -> Reply:
        with lock:
            k = next(counter)
        if k % SLEEPER_EVERY == 0:
            body = (f"def f(x):\n    import os, time\n    if os.fork() == 0:\n        time.sleep(600)\n"
                    f"    time.sleep(600)\n    return x + {k} * 1e-6\n")
        else:
            body = f"def f(x):\n    return x + {k % 9} * 0.5 + {k} * 1e-6\n"
        return Reply(f"```python\n# EVOLVE-BLOCK-START\n{body}# EVOLVE-BLOCK-END\n```", delay_s=0.05)

    return answer


# ---- processes -------------------------------------------------------------------------


def _proc_table() -> dict[int, dict]:
    """pid -> {ppid, start, zombie, env} of every process we can read."""
    out: dict[int, dict] = {}
    if psutil is not None:
        for p in psutil.process_iter(["pid", "ppid", "create_time", "status"]):
            try:
                env = p.environ()
            except (psutil.Error, OSError):
                env = {}
            i = p.info
            out[i["pid"]] = {"ppid": i["ppid"], "start": i["create_time"],
                             "zombie": i["status"] == psutil.STATUS_ZOMBIE, "env": env}
        return out
    for name in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            raw = Path(f"/proc/{name}/environ").read_bytes()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) "
        env = dict(v.split("=", 1) for v in raw.decode("utf-8", "replace").split("\0") if "=" in v)
        out[int(name)] = {"ppid": int(fields[1]), "start": float(fields[19]),
                          "zombie": fields[0] == "Z", "env": env}
    return out


def descendants(pid: int, table: dict[int, dict]) -> set[int]:
    mine, found = {pid}, set()
    while True:
        more = {p for p, info in table.items() if info["ppid"] in mine} - found - {pid}
        if not more:
            return found
        found |= more
        mine |= more


def survivors(tree: dict[int, float], tokens: set[str], mark: str) -> list[int]:
    """Live processes of the killed run: from its tree at the kill (same pid and start
    time), with one of its evaluations' sandbox tokens, or with its marker."""
    alive = []
    for pid, info in _proc_table().items():
        if info["zombie"] or pid == os.getpid():
            continue
        env = info["env"]
        if (tree.get(pid) == info["start"] or env.get(TOKEN_VAR) in tokens
                or env.get(MARK_VAR) == mark):
            alive.append(pid)
    return sorted(alive)


def kill_pids(pids: list[int]) -> None:
    for pid in pids:  # only what the killed run left behind, each by its pid
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class Containers:
    """The Docker sandbox's containers of a run (label = run id)."""

    def __init__(self) -> None:
        import docker

        from evaluators.docker.sandbox import LABEL

        self.client, self.label = docker.from_env(timeout=120), LABEL

    def of(self, run_id: str) -> list[str]:
        return [c["Id"] for c in self.client.api.containers(filters={"label": f"{self.label}={run_id}"})]

    def busy_processes(self, run_id: str) -> int:
        """Processes other than the agent in the run's running containers."""
        n = 0
        for cid in self.of(run_id):
            try:
                n += max(0, len(self.client.api.top(cid)["Processes"] or []) - 1)
            except Exception:  # gone meanwhile
                pass
        return n


# ---- the archive -----------------------------------------------------------------------


def _db(runs: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{runs / 'archive.db'}?mode=ro", uri=True, timeout=30)


def has_run(runs: Path, run_id: str) -> bool:
    if not (runs / "archive.db").exists():
        return False
    try:
        with _db(runs) as db:
            return db.execute("SELECT 1 FROM runs WHERE run_id=?", (run_id,)).fetchone() is not None
    except sqlite3.Error:  # the schema is being created
        return False


def programs(runs: Path, run_id: str) -> list[tuple]:
    with _db(runs) as db:
        return db.execute(
            "SELECT iteration, status, score, eval_s, code_hash, created_at FROM programs WHERE run_id=?",
            (run_id,),
        ).fetchall()


def pending_sleepers(runs: Path, run_id: str) -> int:
    with _db(runs) as db:
        return db.execute("SELECT COUNT(*) FROM programs WHERE run_id=? AND status='pending' "
                          "AND code LIKE '%time.sleep(600)%'", (run_id,)).fetchone()[0]


def llm_calls(runs: Path, run_id: str) -> list[tuple]:
    with _db(runs) as db:
        return db.execute("SELECT iteration, reply IS NOT NULL FROM llm_calls WHERE run_id=?",
                          (run_id,)).fetchall()


def run_status(runs: Path, run_id: str) -> str:
    with _db(runs) as db:
        return db.execute("SELECT status FROM runs WHERE run_id=?", (run_id,)).fetchone()[0]


# ---- one run, one trial ----------------------------------------------------------------


class Bench:
    def __init__(self, args: argparse.Namespace, work: Path, url: str) -> None:
        self.args, self.work, self.url = args, work, url
        self.problem = toy_problem(work / "toy", timeout_s=args.eval_timeout)
        self.containers = Containers() if args.sandbox == "docker" else None

    def env(self, mark: str) -> dict[str, str]:
        e = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVOLVE_"))}
        return {**e, "PYTHONUNBUFFERED": "1", MARK_VAR: mark}

    def start(self, runs: Path, run_id: str, mark: str) -> subprocess.Popen:
        cmd = [sys.executable, "-m", "evolve.cli", "run", str(self.problem),
               "--iterations", str(self.args.iterations), "--api-base", self.url, "--model", "scripted",
               "--runs-dir", str(runs), "--no-progress", "--llm-backoff", "0.05",
               "--sandbox", self.args.sandbox, "--run-id", run_id, "--parallel", "2", "--llm-parallel", "2"]
        log = open(runs.parent / f"{run_id}.run.log", "w")  # noqa: SIM115 (closed with the process)
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env(mark), cwd=ROOT,
                                start_new_session=True)
        log.close()
        return proc

    def wait_for_run_row(self, proc: subprocess.Popen, runs: Path, run_id: str) -> float:
        end = time.monotonic() + 300
        while not has_run(runs, run_id):
            if proc.poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"{run_id}: the run never started (see {runs.parent / run_id}.run.log)")
            time.sleep(0.02)
        return time.monotonic()

    def reference(self) -> dict:
        """An uninterrupted run: the span that kill moments are drawn from."""
        runs, run_id = self.work / "ref" / "runs", "ref"
        runs.mkdir(parents=True)
        t0 = time.monotonic()
        proc = self.start(runs, run_id, uuid.uuid4().hex)
        t_row = self.wait_for_run_row(proc, runs, run_id)
        rc = proc.wait(timeout=self.args.timeout)
        t_end = time.monotonic()
        if rc != 0:
            raise RuntimeError(f"the reference run failed (exit {rc}): see {runs.parent}/ref.run.log")
        return {"startup_s": t_row - t0, "span_s": t_end - t_row}

    def trial(self, i: int, delay_s: float) -> dict:
        runs, run_id, mark = self.work / f"t{i}" / "runs", f"kill{i}", uuid.uuid4().hex
        runs.mkdir(parents=True)
        t0 = time.monotonic()
        proc = self.start(runs, run_id, mark)
        t_row = self.wait_for_run_row(proc, runs, run_id)
        while time.monotonic() < t_row + delay_s and proc.poll() is None:
            time.sleep(0.01)
        out: dict = {"trial": i, "delay_s": round(delay_s, 2), "killed": proc.poll() is None}
        tree: dict[int, float] = {}
        tokens: set[str] = set()
        in_containers = 0  # with docker: the candidates' processes in the run's containers
        if out["killed"]:
            if self.containers is not None:
                in_containers = self.containers.busy_processes(run_id)
            table = _proc_table()
            tree = {p: table[p]["start"] for p in descendants(proc.pid, table)}
            tokens = {t for p in tree if (t := table[p]["env"].get(TOKEN_VAR))}
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t_kill = time.monotonic()
        before = {r[0]: r for r in programs(runs, run_id)}
        finished_before = {it: r for it, r in before.items() if r[1] != "pending"}
        out["done_at_kill"] = sum(1 for it in finished_before if it > 0)
        out["in_flight_at_kill"] = sum(1 for r in before.values() if r[1] == "pending")
        out["sleepers_in_flight"] = pending_sleepers(runs, run_id)
        out["procs_at_kill"] = len(tree) + in_containers
        out["left_at_kill"] = len(survivors(tree, tokens, mark))
        if self.containers is not None:
            out["left_at_kill"] += self.containers.busy_processes(run_id)
        # everything in flight started before the kill: its deadline is at most this far off
        time.sleep(max(0.0, t_kill + self.args.eval_timeout + GRACE_S - time.monotonic()))
        orphans = survivors(tree, tokens, mark)
        out["orphaned"] = len(orphans)
        if self.containers is not None:
            out["orphaned"] += self.containers.busy_processes(run_id)
            out["containers_left"] = len(self.containers.of(run_id))
        kill_pids(orphans)
        resume = subprocess.run(
            [sys.executable, "-m", "evolve.cli", "resume", run_id, "--runs-dir", str(runs), "--no-progress"],
            capture_output=True, text=True, env=self.env(mark), cwd=ROOT, timeout=self.args.timeout,
        )
        out["resume_rc"] = resume.returncode
        if resume.returncode != 0:
            out["resume_stderr"] = resume.stderr[-2000:]
        after = programs(runs, run_id)
        by_it: dict[int, list[tuple]] = {}
        for r in after:
            by_it.setdefault(r[0], []).append(r)
        finished = {it for it, rows in by_it.items() if it > 0 and any(r[1] != "pending" for r in rows)}
        out["lost"] = max(0, self.args.iterations - len(finished))
        changed = sum(1 for it, r in finished_before.items() if by_it.get(it, [None])[0] != r)
        dup_rows = sum(len(rows) - 1 for rows in by_it.values())
        replies: dict[int, int] = {}
        calls = llm_calls(runs, run_id)
        for it, has_reply in calls:
            replies[it] = replies.get(it, 0) + has_reply
        dup_replies = sum(max(0, n - 1) for n in replies.values())
        out["repeated"] = changed + dup_rows + dup_replies
        out["repeated_detail"] = {"finished_rows_changed": changed, "iterations_archived_twice": dup_rows,
                                  "iterations_with_two_replies": dup_replies}
        out["llm_calls"] = len(calls)
        out["llm_failed_attempts"] = sum(1 for _, has_reply in calls if not has_reply)
        out["final_status"] = run_status(runs, run_id)
        out["wall_s"] = round(time.monotonic() - t0, 1)
        return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--iterations", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0, help="seed of the kill moments")
    parser.add_argument("--sandbox", choices=("local", "docker"), default="local")
    parser.add_argument("--eval-timeout", type=int, default=3, help="the toy problem's timeout_s")
    parser.add_argument("--timeout", type=float, default=600, help="limit for each subprocess, s")
    parser.add_argument("--keep", action="store_true", help="keep the scratch folder (archives, logs)")
    args = parser.parse_args(argv)
    console = Console(width=max(Console().width, 150))
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="kill-trials-"))
    results: list[dict] = []
    with ScriptedLLM(responder()) as srv:
        bench = Bench(args, work, srv.base_url)
        ref = bench.reference()
        console.print(f"reference run: {ref['startup_s']:.1f} s to its run row, then {ref['span_s']:.1f} s "
                      f"for {args.iterations} iterations")
        for i in range(1, args.trials + 1):
            r = bench.trial(i, rng.uniform(0.0, ref["span_s"]))
            results.append(r)
            console.print(f"trial {i}: killed at {r['delay_s']} s, {r['done_at_kill']} done, "
                          f"lost {r['lost']}, repeated {r['repeated']}, orphaned {r['orphaned']}, "
                          f"resume exit {r['resume_rc']}")
    table = Table(title=f"kill -9 trials ({args.sandbox} sandbox, {args.iterations} iterations, seed {args.seed})")
    cols = ["trial", "killed at s", "done at kill", "in flight (sleepers)", "procs at kill", "left at kill",
            "lost", "repeated", "orphaned", "resume exit", "LLM calls", "final status"]
    for c in cols:
        table.add_column(c, justify="left" if c == "final status" else "right")
    for r in results:
        table.add_row(str(r["trial"]), f"{r['delay_s']:.2f}" if r["killed"] else f"{r['delay_s']:.2f} (ended first)",
                      str(r["done_at_kill"]), f"{r['in_flight_at_kill']} ({r['sleepers_in_flight']})",
                      str(r["procs_at_kill"]), str(r["left_at_kill"]),
                      str(r["lost"]), str(r["repeated"]), str(r["orphaned"]), str(r["resume_rc"]),
                      str(r["llm_calls"]), r["final_status"])
    killed = [r for r in results if r["killed"]]
    total = {k: sum(r[k] for r in results) for k in ("lost", "repeated", "orphaned")}
    table.add_row("total", f"{len(killed)} killed", "", "", "", "", str(total["lost"]), str(total["repeated"]),
                  str(total["orphaned"]), str(sum(r["resume_rc"] != 0 for r in results)) + " failed", "", "")
    console.print(table)
    report = {
        "args": vars(args),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": machine(psutil=psutil is not None),
        "reference": ref,
        "totals": {**total, "trials": len(results), "killed": len(killed),
                   "resume_failed": sum(r["resume_rc"] != 0 for r in results)},
        "trials": results,
        "scratch": str(work) if args.keep else None,
    }
    write_result("kill_trials" if args.sandbox == "local" else f"kill_trials_{args.sandbox}", report)
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0 if all(r["resume_rc"] == 0 for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
