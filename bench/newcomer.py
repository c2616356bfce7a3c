"""A newcomer's first hour, timed: clone, install, a first result, a first problem of their own.

    python bench/newcomer.py [--repo PATH] [--work DIR] [--hogs N] [--keep] [--python PATH]
        [--iterations N]

Each step is what the docs tell a new user to type (README.md, docs/getting-started.md,
docs/guide/adding-a-problem.md), run in a fresh `git clone` of `--repo` (this checkout's
HEAD by default) with HOME pointing at an empty folder, so pip's cache, evolve's cache and
runs folder start empty as on a new machine:

1. `python3 -m venv .venv && .venv/bin/pip install -q -e .` (the base install: nothing
   compiled; the `local` extra, which compiles llama.cpp, is the README's other path);
2. `evolve demo` (the first result: a scripted run of problems/binpack, real evaluations);
3. `evolve archive best --json` (what it found);
4. `evolve new problems/my_scheduler` then `evolve check problems/my_scheduler` (a first
   problem of one's own: the scaffold passes check before any edit).

`--python PATH` skips step 1 and runs the clone's commands with that interpreter's evolve
(`PATH -m evolve.cli`): the suite's smoke run, which must not reach PyPI.
`--hogs N` keeps N busy-looping processes beside it (users run us on loaded machines).
Times are wall seconds of each step; the install step carries the network's speed. A
person reading the docs takes longer than the commands: this is the machine's share.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import ROOT, machine, write_result


def _hog() -> None:
    while True:
        pass


def step(name: str, cmd: str, cwd: Path, env: dict[str, str], timeout: float) -> dict:
    t0 = time.monotonic()
    proc = subprocess.run(cmd, shell=True, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip
    took = time.monotonic() - t0
    tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
    print(f"{name:<28} {took:7.1f} s  exit {proc.returncode}", flush=True)
    if proc.returncode != 0:
        print("\n".join(tail), file=sys.stderr)
    return {"step": name, "command": cmd, "seconds": round(took, 1), "exit": proc.returncode,
            "tail": tail}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repo", type=Path, default=ROOT, help="the repository to clone (default: this one)")
    ap.add_argument("--work", type=Path, help="where to clone (default: a temporary folder)")
    ap.add_argument("--hogs", type=int, default=0, help="busy-looping processes kept beside the steps")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per step at most")
    ap.add_argument("--keep", action="store_true", help="keep the clone and its HOME")
    ap.add_argument("--python", help="skip the install: run evolve with this interpreter")
    ap.add_argument("--iterations", type=int, default=10, help="the demo's (default 10, its own)")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="evolve-newcomer-"))
    if work.exists() and any(work.iterdir()):
        print(f"--work {work}: the folder is not empty", file=sys.stderr)
        return 2
    home, clone = work / "home", work / "evolve"
    home.mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVOLVE_", "PIP_", "VIRTUAL_ENV"))}
    env.update(HOME=str(home), PATH=os.defpath if "PATH" not in env else env["PATH"])
    env.pop("OPENAI_API_KEY", None)
    hogs = [multiprocessing.Process(target=_hog, daemon=True) for _ in range(args.hogs)]
    for h in hogs:
        h.start()
    steps: list[dict] = []
    try:
        python = os.path.abspath(args.python) if args.python else None
        evolve = f"{python} -m evolve.cli" if python else ".venv/bin/evolve"
        install = "python3 -m venv .venv && .venv/bin/pip install -q -e ."
        plan = [
            ("clone", f"git clone -q {args.repo} {clone}", work),
            *([] if args.python else [("install (base, no compile)", install, clone)]),
            ("first result: evolve demo", f"{evolve} demo --no-progress --iterations {args.iterations}", clone),
            ("archive best", f"{evolve} archive best --json", clone),
            ("own problem: new + check", f"{evolve} new problems/my_scheduler && "
             f"{evolve} check problems/my_scheduler", clone),  # fmt: skip
        ]
        for name, cmd, cwd in plan:
            steps.append(step(name, cmd, cwd, env, args.timeout))
            if steps[-1]["exit"] != 0:
                break
    finally:
        for h in hogs:
            h.terminate()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    names = [s["step"] for s in steps]
    upto = names.index("first result: evolve demo") + 1 if "first result: evolve demo" in names else 0
    report = {
        "machine": machine(hogs=args.hogs, install_skipped=bool(args.python)),
        "steps": steps,
        "clone_to_first_result_s": round(sum(s["seconds"] for s in steps[:upto]), 1),
        "ok": all(s["exit"] == 0 for s in steps) and len(steps) == len(plan),
    }
    print(json.dumps({k: v for k, v in report.items() if k not in ("steps", "machine")}))
    write_result("newcomer", report)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
