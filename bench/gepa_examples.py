"""Issue 44's GEPA rows: GEPA's own optimize_anything examples, unchanged, through evolve.

    python bench/gepa_examples.py EXAMPLES_DIR [--timeout S] [--sandbox local|docker] [--run3]

EXAMPLES_DIR is the `examples/` folder of a GEPA checkout (e.g. `git archive b265bf9
examples | tar -x -C DIR`, v0.1.4's examples); nothing of it is committed here. Every
`main.py` under it that names optimize_anything is one row:

- check: `evolve check MAIN --sandbox S`: the seed's score, else the one line it refused with;
- eval: `evolve eval MAIN SEED --json --sandbox S` on the seed check captured.

- peer: the seed's score by GEPA's own code, in --peer-venv (made on first use: gepa 0.1.4
  with numpy and scipy, what the offline examples import): the script runs
  with optimize_anything replaced by one call of GEPA's EvaluatorWrapper (as its engine calls
  the evaluator) per valset (else dataset) example, the mean printed. GEPA's optimisation
  itself is not run (it needs a reflection model's API key);
- run3 (with --run3): `evolve run MAIN --iterations 3 --sandbox S` against
  evolve/testing/scripted_llm.py (one reply: the seed with a comment appended), its best score.

Prints a plain table; evolve runs as this checkout, with this process's environment less
PYTHON*, EVOLVE_* and OPENAI_* variables.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_common import REPO, clean_env, ensure_venv, last_line, print_table, run  # noqa: E402

VERSION = "0.1.4"
DEFAULT_VENV = "/tmp/bench-gepa-venv"
PEER_PACKAGES = ("numpy", "scipy")  # what circle_packing's and blackbox's helpers import

SCORE = re.compile(r"seed on train: ok, score ([-+.\dEe]+|nan|inf)")


def scripts(examples: Path) -> list[Path]:
    found = sorted(examples.rglob("main.py"))
    return [p for p in found if b"optimize_anything" in p.read_bytes()]


PEER = """
import json, runpy, sys
import gepa.optimize_anything as oa

def once(seed_candidate=None, *, evaluator=None, dataset=None, valset=None, **_):
    examples = valset if valset is not None else dataset
    str_mode = isinstance(seed_candidate, str)
    wrap = oa.EvaluatorWrapper(evaluator, examples is None, str_candidate_mode=str_mode)
    cand = {"current_candidate": seed_candidate} if str_mode else seed_candidate
    state = oa.OptimizationState(best_example_evals=[])  # the first call: nothing known yet
    scores = [wrap(cand, example=e, opt_state=state)[0] for e in (examples if examples is not None else [None])]
    print("PEER-SCORE", json.dumps(sum(scores) / len(scores)))
    raise SystemExit(0)

oa.optimize_anything = once
sys.argv = [sys.argv[1]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def peer(main: Path, examples: Path, timeout: float, py: Path | str) -> str:
    """The seed's score by GEPA's own EvaluatorWrapper, from GEPA's root (as its README runs it)."""
    root = examples.parent
    env = clean_env(pythonpath=root)
    r = run([str(py), "-c", PEER, str(main)], root, env, timeout)
    if isinstance(r, str):
        return r
    m = re.search(r"PEER-SCORE (\S+)", r.stdout)
    return m.group(1) if m else "no score: " + last_line(r.stderr or r.stdout)


def run3(main: Path, seed_code: str, sandbox: str, timeout: float, tmp: Path) -> str:
    """Three scripted iterations; the best score the archive keeps."""
    env = clean_env(pythonpath=REPO)
    cli = [sys.executable, "-m", "evolve.cli"]
    code = seed_code.rstrip("\n") + "\n# scripted edit\n"
    replies = tmp / "replies.json"
    replies.write_text(json.dumps([{"content": f"A comment.\n\n```python\n{code}\n```\n"}]))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    llm = subprocess.Popen(
        [sys.executable, "-m", "evolve.testing.scripted_llm", "--port", str(port), "--replies", str(replies)],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    runs = tmp / "runs"
    try:
        assert llm.stdout is not None
        llm.stdout.readline()  # it listens
        r = run([*cli, "run", str(main), "--iterations", "3", "--api-base",
                 f"http://127.0.0.1:{port}/v1", "--model", "scripted", "--no-progress",
                 "--runs-dir", str(runs), "--sandbox", sandbox, "--edit-format", "full"],
                REPO, env, timeout)  # fmt: skip
    finally:
        llm.terminate()
        llm.wait()
    if isinstance(r, str):
        return r
    if r.returncode != 0:
        return f"exit {r.returncode}: {last_line(r.stderr or r.stdout)}"
    q = run([*cli, "archive", "runs", "--runs-dir", str(runs), "--json"], REPO, env, 60)
    if isinstance(q, str) or q.returncode != 0:
        return f"archive runs: {q if isinstance(q, str) else last_line(q.stderr)}"
    best, done = (
        json.loads(q.stdout)[0].get("best_score"),
        json.loads(q.stdout)[0].get("iterations_done"),
    )
    return f"{best:.6g} ({done} it.)" if isinstance(best, int | float) else f"no best ({done} it.)"


def row(
    main: Path, sandbox: str, timeout: float, examples: Path, three: bool, py: Path | str
) -> tuple[str, ...]:
    env = clean_env(pythonpath=REPO)
    name = str(main.parent.relative_to(examples))
    cli = [sys.executable, "-m", "evolve.cli"]
    r = run([*cli, "check", str(main), "--sandbox", sandbox], REPO, env, timeout)
    if isinstance(r, str):
        return name, "-", r, "-", "-"
    text = r.stdout + r.stderr
    m = SCORE.search(text)
    if r.returncode != 0 or m is None:
        return name, "-", "refused: " + last_line(r.stderr or r.stdout), "-", "-"
    check = f"ok {m.group(1)}"
    own = peer(main, examples, timeout, py)
    sys.path.insert(0, str(REPO))
    from evolve.problem.load import load_problem
    from evolve.settings.overrides import Overrides

    problem = load_problem(main, Overrides(sandbox=sandbox))  # cached by the check above
    from evaluators.tree import decode

    with tempfile.TemporaryDirectory() as tmp:
        seed = Path(tmp) / ("seed" if problem.files else problem.entry)
        for rel, text in decode(problem.seed_code, problem.entry).items():
            path = seed / rel if problem.files else seed
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        e = run(
            [*cli, "eval", str(main), str(seed), "--json", "--sandbox", sandbox], REPO, env, timeout
        )
        if isinstance(e, str):
            return name, own, check, e, "-"
        try:
            out = json.loads(e.stdout.strip().splitlines()[-1])
            evaluated = f"{out.get('status')} {out.get('score')}"
        except (ValueError, IndexError):
            evaluated = "no JSON: " + last_line(e.stderr)
        ran = run3(main, problem.seed_code, sandbox, timeout, Path(tmp)) if three else "-"
    return name, own, check, evaluated, ran


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("examples", type=Path)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--sandbox", default="local", choices=("local", "docker"))
    p.add_argument("--run3", action="store_true", help="three scripted iterations per example")
    p.add_argument("--peer-venv", type=Path, default=Path(DEFAULT_VENV))
    a = p.parse_args()
    examples = a.examples.resolve()
    try:
        py: Path | str = ensure_venv(a.peer_venv, "gepa", VERSION, *PEER_PACKAGES)
    except RuntimeError as e:
        print(f"gepa_examples: {e}", file=sys.stderr)
        return 2
    body = [row(m, a.sandbox, a.timeout, examples, a.run3, py) for m in scripts(examples)]
    head = ("example", "GEPA's seed score", f"evolve check ({a.sandbox})", "evolve eval seed")
    print_table((*head, "3-iteration run"), body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
