"""The bundled local model on the shipped example: evolve vs OpenEvolve 0.4.0.

For each seed, from problems/binpack's seed program and with the same
iteration budget:

  evolve      `evolve run problems/binpack --model local --iterations N --seed S`
              (the user's command; it joins the server this script started, so
              both frameworks talk to one llama-cpp-python server process)
  OpenEvolve  `openevolve-run` on bench/openevolve_binpack (an OpenEvolve-format
              wrapper of the same evaluator: combined_score = the native score),
              pointed at the same server through a counting proxy

and reports wall time, generation speed (completion tokens / request time,
as the server reports usage), the share of replies that became a valid,
evaluated candidate, and the best score against the seed's. OpenEvolve runs in
its own venv (created on first use; bench/controller_overhead.py uses the same).

    python bench/local_model.py [--iterations 30] [--seeds 0 1 2] [--skip-openevolve]
                                [--openevolve-venv /tmp/bench-openevolve-venv]

Results: bench/results/local_model.json and a table on stdout.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from harness import result_path  # noqa: E402

from evolve.llm import local_model as lm  # noqa: E402
from evolve.llm.local_server import LocalServer, default_threads  # noqa: E402
from evolve.llm.local_weights import DEFAULT_WEIGHTS, WEIGHTS  # noqa: E402
from evolve.llm.profiles import LOCAL_SMALL  # noqa: E402
from evolve.problem.load import load_problem  # noqa: E402

PROBLEM = ROOT / "problems" / "binpack"
OE_PROBLEM = ROOT / "bench" / "openevolve_binpack"
RESULTS = result_path("local_model")
OPENEVOLVE_VERSION = "0.4.0"
DEFAULT_OE_VENV = "/tmp/bench-openevolve-venv"
INVALID = -100.0  # the wrapper's score for a failed candidate


# ---- a counting proxy in front of the server (OpenEvolve's side) ---------------------------
class CountingProxy:
    """Forwards HTTP to the server and records usage and time of each chat completion."""

    def __init__(self, upstream_port: int):
        self.upstream = upstream_port
        self.calls: list[dict] = []
        self.lock = threading.Lock()
        proxy = self

        class H(BaseHTTPRequestHandler):
            def _forward(self, method: str):
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                t0 = time.monotonic()
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream, timeout=3600)
                try:
                    hdrs = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                    conn.request(method, self.path, body=body, headers=hdrs)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                dt = time.monotonic() - t0
                if method == "POST" and self.path.endswith("/chat/completions"):
                    rec = {"status": resp.status, "latency_s": dt, "prompt_tokens": 0, "completion_tokens": 0}
                    try:
                        usage = json.loads(data).get("usage") or {}
                        rec["prompt_tokens"] = int(usage.get("prompt_tokens") or 0)
                        rec["completion_tokens"] = int(usage.get("completion_tokens") or 0)
                    except (ValueError, AttributeError):
                        pass
                    with proxy.lock:
                        proxy.calls.append(rec)
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def take(self) -> list[dict]:
        with self.lock:
            out, self.calls = self.calls, []
        return out

    def close(self):
        self.httpd.shutdown()


# ---- one evolve run -------------------------------------------------------------------------
def run_evolve(work: Path, seed: int, iterations: int, env: dict, note) -> dict:
    runs = work / "evolve"
    run_id = f"bench-local-seed{seed}"
    cmd = [sys.executable, "-m", "evolve.cli", "run", str(PROBLEM), "--model", "local", "--iterations",
           str(iterations), "--seed", str(seed), "--runs-dir", str(runs), "--run-id", run_id, "--no-progress"]
    note("evolve: " + " ".join(cmd[2:]))
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"evolve run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    db = sqlite3.connect(runs / "archive.db")
    calls = db.execute("SELECT reply, prompt_tokens, completion_tokens, latency_s FROM llm_calls "
                       "WHERE run_id=? AND reply IS NOT NULL", (run_id,)).fetchall()
    progs = db.execute("SELECT iteration, status, score, test_score FROM programs WHERE run_id=?",
                       (run_id,)).fetchall()
    db.close()
    seed_score = next(p[2] for p in progs if p[0] == 0)
    children = [p for p in progs if p[0] > 0]
    valid = [p for p in children if p[1] == "ok"]
    statuses: dict[str, int] = {}
    for p in children:
        statuses[p[1]] = statuses.get(p[1], 0) + 1
    best = max([p[2] for p in valid] + [seed_score])
    return {
        "framework": "evolve", "seed": seed, "iterations": iterations, "wall_s": wall,
        "replies": len(calls), "valid": len(valid), "valid_share": len(valid) / max(1, len(calls)),
        "statuses": statuses, "seed_score": seed_score, "best_score": best,
        "improved": best > seed_score, **_speed([(c[1], c[2], c[3]) for c in calls]),
    }


# ---- one OpenEvolve run ---------------------------------------------------------------------
def oe_config(path: Path, api_base: str, seed: int, iterations: int) -> None:
    import yaml

    problem = load_problem(PROBLEM)
    system = (f"You are improving a Python program for: {problem.description}\n\n{problem.domain_notes.strip()}\n\n"
              "Change only the code between the EVOLVE-BLOCK-START and EVOLVE-BLOCK-END markers.")
    cfg = {
        "max_iterations": iterations,
        "checkpoint_interval": iterations,
        "log_level": "INFO",
        "random_seed": seed,
        "llm": {
            "models": [{"name": "local", "weight": 1.0}],
            "api_base": api_base, "api_key": "not-needed",
            "temperature": LOCAL_SMALL.temperature, "max_tokens": LOCAL_SMALL.max_tokens,
            "timeout": 900, "retries": 1,
        },
        "prompt": {"system_message": system},
        "database": {"num_islands": 3},
        "evaluator": {"timeout": 60, "cascade_evaluation": False, "parallel_evaluations": 2},
    }
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))


def run_openevolve(work: Path, py: Path, seed: int, iterations: int, proxy: CountingProxy, note) -> dict:
    out = work / f"openevolve-seed{seed}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    cfg = out / "config.yaml"
    oe_config(cfg, f"http://127.0.0.1:{proxy.port}/v1", seed, iterations)
    evals = out / "evals.jsonl"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(EVOLVE_BENCH_EVAL_LOG=str(evals), OPENAI_API_KEY="not-needed", PYTHONUNBUFFERED="1")
    cmd = [str(py.parent / "openevolve-run"), str(OE_PROBLEM / "initial_program.py"),
           str(OE_PROBLEM / "evaluator.py"), "--config", str(cfg), "--output", str(out / "out"),
           "--iterations", str(iterations)]
    note("openevolve: " + " ".join(cmd))
    proxy.take()
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=out, env=env, capture_output=True, text=True)
    wall = time.monotonic() - t0
    (out / "stdout.log").write_text(proc.stdout + "\n--- stderr\n" + proc.stderr)
    if proc.returncode != 0:
        raise RuntimeError(f"openevolve-run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    calls = proxy.take()
    rows = [json.loads(ln) for ln in evals.read_text().splitlines() if ln.strip()] if evals.exists() else []
    seed_row, children = (rows[0], rows[1:]) if rows else ({"score": None, "valid": False}, [])
    valid = [r for r in children if r["valid"]]
    seed_score = seed_row["score"]
    best = max([r["score"] for r in valid] + [seed_score])
    replies = [c for c in calls if c["status"] == 200]
    return {
        "framework": "openevolve", "seed": seed, "iterations": iterations, "wall_s": wall,
        "replies": len(replies), "requests_failed": len(calls) - len(replies), "evaluations": len(children),
        "valid": len(valid), "valid_share": len(valid) / max(1, iterations),
        "seed_score": seed_score, "best_score": best, "improved": best > seed_score,
        **_speed([(c["prompt_tokens"], c["completion_tokens"], c["latency_s"]) for c in replies]),
    }


def _speed(calls: list[tuple[int, int, float]]) -> dict:
    pt = sum(c[0] for c in calls)
    ct = sum(c[1] for c in calls)
    lat = sum(c[2] for c in calls)
    return {"prompt_tokens": pt, "completion_tokens": ct, "llm_s": lat,
            "tokens_per_s": ct / lat if lat else 0.0}


def ensure_openevolve(venv: Path, note) -> Path:
    py = venv / "bin" / "python"
    if not py.exists():
        note(f"creating {venv}")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    ok = subprocess.run([str(py), "-c", f"import importlib.metadata as m; assert m.version('openevolve') == "
                         f"'{OPENEVOLVE_VERSION}'"], capture_output=True)
    if ok.returncode != 0:
        note(f"installing openevolve=={OPENEVOLVE_VERSION} into {venv}")
        subprocess.run([str(py), "-m", "pip", "install", "-q", f"openevolve=={OPENEVOLVE_VERSION}"], check=True)
    return py


# ---- report ---------------------------------------------------------------------------------
def table(rows: list[dict]) -> str:
    """Markdown. tokens/s: completion tokens over the run's wall time (the server's output
    rate as the run used it); per request: over the summed request times (queueing included)."""
    head = ("| framework | seed | iterations | wall s | tokens/s | tokens/s per request | valid / replies "
            "| valid share | seed score | best score |\n|---|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        lines.append(f"| {r['framework']} | {r['seed']} | {r['iterations']} | {r['wall_s']:.0f} | "
                     f"{r['completion_tokens'] / r['wall_s']:.1f} | {r['tokens_per_s']:.1f} | "
                     f"{r['valid']} / {r['replies']} | {100 * r['valid_share']:.0f}% | "
                     f"{r['seed_score']:.4g} | {r['best_score']:.4g} |")
    for fw in sorted({r["framework"] for r in rows}):
        rs = [r for r in rows if r["framework"] == fw]
        n = len(rs)
        lines.append(f"| **{fw} mean** | {n} seeds | | {sum(r['wall_s'] for r in rs) / n:.0f} | "
                     f"{sum(r['completion_tokens'] / r['wall_s'] for r in rs) / n:.1f} | "
                     f"{sum(r['tokens_per_s'] for r in rs) / n:.1f} | "
                     f"{sum(r['valid'] for r in rs)} / {sum(r['replies'] for r in rs)} | "
                     f"{100 * sum(r['valid_share'] for r in rs) / n:.0f}% | | "
                     f"{sum(r['best_score'] for r in rs) / n:.4g} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--iterations", type=int, default=30)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--skip-openevolve", action="store_true")
    ap.add_argument("--skip-evolve", action="store_true")
    ap.add_argument("--openevolve-venv", default=DEFAULT_OE_VENV)
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--work", help="keep runs here (default: a temporary directory)")
    ap.add_argument("--table", metavar="JSON", nargs="+", help="only print the table of saved results")
    a = ap.parse_args(argv)
    if a.table:
        print(table([r for f in a.table for r in json.loads(Path(f).read_text())["runs"]]))
        return 0

    def note(msg: str) -> None:
        print(f"[bench] {msg}", file=sys.stderr, flush=True)

    if (OE_PROBLEM / "initial_program.py").read_bytes() != (PROBLEM / "seed.py").read_bytes():
        raise SystemExit("bench/openevolve_binpack/initial_program.py differs from problems/binpack/seed.py")
    oe_py = None if a.skip_openevolve else ensure_openevolve(Path(a.openevolve_venv), note)
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="bench-local-"))
    work.mkdir(parents=True, exist_ok=True)
    path = lm.prepare(lm.parse_local("local"))
    # evolve's `--model local` joins this server: same file, alias and window
    server = LocalServer(path, "local", LOCAL_SMALL.context_window).start()
    proxy = CountingProxy(server.port)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    rows: list[dict] = []
    try:
        for seed in a.seeds:
            if not a.skip_evolve:
                rows.append(run_evolve(work, seed, a.iterations, env, note))
                note(json.dumps(rows[-1]))
            if oe_py is not None:
                rows.append(run_openevolve(work, oe_py, seed, a.iterations, proxy, note))
                note(json.dumps(rows[-1]))
            _save(a.out, rows, path)
    finally:
        proxy.close()
        server.stop()
    print(table(rows))
    return 0


def _save(out: str, rows: list[dict], model: Path) -> None:
    info = {
        "model": str(model), "model_sha256": WEIGHTS[DEFAULT_WEIGHTS].sha256,
        "context_window": LOCAL_SMALL.context_window, "max_tokens": LOCAL_SMALL.max_tokens,
        "python": platform.python_version(), "cpus": os.cpu_count(), "machine": platform.machine(),
        "llama_cpp_python": _version("llama-cpp-python"), "openevolve": OPENEVOLVE_VERSION,
        "server_threads": default_threads(), "when": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(json.dumps({"info": info, "runs": rows}, indent=2) + "\n")


def _version(dist: str) -> str | None:
    import importlib.metadata

    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


if __name__ == "__main__":
    sys.exit(main())
