"""Per-evaluation cost of the Docker sandbox's warm pool against the alternatives.

The same trivial candidate and evaluator as bench/sandbox_overhead.py (import the
candidate, return a constant), so the sandbox's own work is the whole cost:

- local backend: LocalSandbox, a fresh confined process per evaluation;
- docker warm pool: DockerSandbox, one warm container, the agent forks the harness;
- docker exec per evaluation: a warm container of the same image and policy, one
  `docker exec` of the harness per evaluation (the design the pool avoids);
- docker run per evaluation: a fresh container of the same image and policy per
  evaluation (create, start, wait, remove), as `docker run --rm` does.

Every evaluation is checked to have scored. Targets: the warm pool within 2x of
the local backend and at least 5x faster than a fresh container per evaluation.

    python bench/docker_overhead.py [--n 50] [--image TAG]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from harness import machine, write_result
from rich.console import Console
from rich.table import Table

from evaluators.docker.image import find_image
from evaluators.docker.sandbox import DockerSandbox
from evaluators.local.sandbox import LocalSandbox
from evaluators.sandbox import EvalRequest, Limits, Status

CANDIDATE = "def solve():\n    return 1\n"
EVALUATOR = '''import importlib.util


def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {"score": 1.0, "outputs": module.solve()}
'''
SCORE_FN = '''

def score(outputs, split):
    return {"score": float(outputs)}
'''
LIMITS = Limits(timeout_s=30)
HARNESS = ["python3", "-s", "/opt/evolve/harness.py", "run", "/in/REQ.json", "/out/RESULT.json"]
LOCAL, WARM, EXEC, FRESH = ("local backend", "docker warm pool", "docker exec per evaluation",
                            "docker run per evaluation")


def _stats(xs: list[float]) -> dict[str, float]:
    q = statistics.quantiles(xs, n=10, method="inclusive")
    return {"median_ms": statistics.median(xs) * 1e3, "p10_ms": q[0] * 1e3, "p90_ms": q[-1] * 1e3}


def _time(fn, n: int, warmup: int = 3) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def _problem(root: Path, name: str, with_score: bool) -> str:
    d = root / name
    d.mkdir()
    (d / "evaluator.py").write_text(EVALUATOR + (SCORE_FN if with_score else ""))
    os.chmod(d, 0o755)
    return str(d)


def _sandboxed(sandbox, problem: str):
    req = EvalRequest(problem_dir=problem, program_code=CANDIDATE, program_name="candidate.py",
                      split="train", limits=LIMITS)

    def call() -> None:
        res = sandbox.evaluate(req)
        if res.status != Status.OK:
            raise RuntimeError(f"benchmark evaluation failed: {res.status} {res.artifacts}")

    return call


def _policy(client, problem: str, in_dir: str, out_dir: str) -> dict:
    """The warm pool's container policy, with /out a host folder so the result can be read."""
    from docker.types import LogConfig, Mount

    mem = f"{LIMITS.memory_mb + 128}m"
    return client.api.create_host_config(
        network_mode="none", read_only=True, cap_drop=["ALL"], security_opt=["no-new-privileges"],
        mem_limit=mem, memswap_limit=mem, nano_cpus=10**9, pids_limit=LIMITS.max_procs + 2,
        ipc_mode="private", log_config=LogConfig(type="none"),
        tmpfs={"/scratch": "rw,nosuid,nodev,noexec,size=256m,uid=10001,gid=10001,mode=0700",
               "/tmp": "rw,nosuid,nodev,noexec,size=64m"},
        mounts=[Mount("/problem", problem, type="bind", read_only=True),
                Mount("/in", in_dir, type="bind", read_only=True),
                Mount("/out", out_dir, type="bind", read_only=False)])


def _io_dirs(root: Path, name: str) -> tuple[str, str]:
    in_dir, out_dir = root / f"{name}-in", root / f"{name}-out"
    in_dir.mkdir()
    out_dir.mkdir()
    os.chmod(in_dir, 0o755)
    os.chmod(out_dir, 0o777)
    req = EvalRequest(problem_dir="/problem", program_code=CANDIDATE, program_name="/in/candidate.py",
                      split="train", limits=LIMITS)
    (in_dir / "REQ.json").write_text(json.dumps(req.to_json()))
    (in_dir / "candidate.py").write_text(CANDIDATE)
    os.chmod(in_dir / "REQ.json", 0o644)
    os.chmod(in_dir / "candidate.py", 0o644)
    return str(in_dir), str(out_dir)


def _check(out_dir: str) -> None:
    path = os.path.join(out_dir, "RESULT.json")
    with open(path) as f:
        data = json.load(f)
    os.unlink(path)
    if data.get("status") != Status.OK:
        raise RuntimeError(f"benchmark evaluation failed: {data}")


_ENV = {"HOME": "/scratch", "TMPDIR": "/scratch", "PYTHONPATH": "/problem", "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1", "PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8"}


def _fresh_run(client, image: str, problem: str, root: Path):
    in_dir, out_dir = _io_dirs(root, "fresh")
    api = client.api

    def call() -> None:
        cid = api.create_container(image, HARNESS, user="10001:10001", environment=_ENV,
                                   working_dir="/scratch", labels={"evolve": "bench-fresh"},
                                   host_config=_policy(client, problem, in_dir, out_dir))["Id"]
        try:
            api.start(cid)
            api.wait(cid)
        finally:
            api.remove_container(cid, force=True)
        _check(out_dir)

    return call


def _exec_per_eval(client, image: str, problem: str, root: Path):
    in_dir, out_dir = _io_dirs(root, "exec")
    api = client.api
    cid = api.create_container(image, ["sleep", "infinity"], user="10001:10001", environment=_ENV,
                               working_dir="/scratch", labels={"evolve": "bench-exec"},
                               host_config=_policy(client, problem, in_dir, out_dir))["Id"]
    api.start(cid)

    def call() -> None:
        ex = api.exec_create(cid, HARNESS, user="10001:10001", environment=_ENV, workdir="/scratch")
        output = api.exec_start(ex["Id"])
        if api.exec_inspect(ex["Id"])["ExitCode"] != 0:
            raise RuntimeError(f"the harness failed: {output[-2000:].decode(errors='replace')}")
        _check(out_dir)

    def stop() -> None:
        api.remove_container(cid, force=True)

    return call, stop


def main(argv: list[str] | None = None) -> int:
    import docker

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="timed evaluations per row (default 50)")
    ap.add_argument("--image", help="sandbox image (default: the one `evolve sandbox build` made)")
    args = ap.parse_args(argv)
    client = docker.from_env(timeout=120)
    image = args.image or find_image(client)
    if image is None:
        print("no sandbox image: run `evolve sandbox build` first", file=sys.stderr)
        return 2
    root = Path(tempfile.mkdtemp(prefix="evolve-bench-docker-"))
    os.chmod(root, 0o755)
    local, warm = LocalSandbox(max_parallel=1), DockerSandbox(max_parallel=1, image=image,
                                                             run_id="bench-docker-overhead")
    exec_call, exec_stop = None, None
    try:
        plain, scored = _problem(root, "plain", False), _problem(root, "scored", True)
        exec_call, exec_stop = _exec_per_eval(client, image, plain, root)
        rows = {
            LOCAL: _time(_sandboxed(local, plain), args.n),
            WARM: _time(_sandboxed(warm, plain), args.n),
            EXEC: _time(exec_call, args.n),
            FRESH: _time(_fresh_run(client, image, plain, root), args.n),
            f"{LOCAL}, native + score()": _time(_sandboxed(local, scored), args.n),
            f"{WARM}, native + score()": _time(_sandboxed(warm, scored), args.n),
        }
    finally:
        if exec_stop:
            exec_stop()
        local.close()
        warm.close()
        shutil.rmtree(root, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in rows.items()}
    ratios = {"warm_over_local": med[WARM] / med[LOCAL], "fresh_over_warm": med[FRESH] / med[WARM],
              "exec_over_warm": med[EXEC] / med[WARM]}
    report = {
        "n": args.n, "image": image,
        "machine": machine(docker=client.version().get("Version"), storage_driver=client.info().get("Driver")),
        "rows": {name: _stats(xs) for name, xs in rows.items()},
        "ratios": ratios,
        "targets_met": {"warm within 2x of local": ratios["warm_over_local"] <= 2.0,
                        "warm at least 5x faster than a fresh container": ratios["fresh_over_warm"] >= 5.0},
    }
    table = Table(title=f"Per-evaluation cost, trivial candidate (n={args.n}, {image})")
    for i, col in enumerate(("ms per evaluation", "median", "p10", "p90")):
        table.add_column(col, justify="right" if i else "left", no_wrap=True)
    for name, r in report["rows"].items():
        table.add_row(name, *(f"{r[k]:.1f}" for k in ("median_ms", "p10_ms", "p90_ms")))
    console = Console()
    console.width = max(console.width, 100)
    console.print(table)
    console.print(f"warm pool / local = {ratios['warm_over_local']:.2f} (target <= 2); "
                  f"fresh container / warm pool = {ratios['fresh_over_warm']:.1f} (target >= 5); "
                  f"exec / warm pool = {ratios['exec_over_warm']:.1f}")
    write_result("docker_overhead", report)
    return 0 if all(report["targets_met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
