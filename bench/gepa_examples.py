"""Issue 44's GEPA rows: GEPA's own optimize_anything examples, unchanged, through evolve.

    python bench/gepa_examples.py EXAMPLES_DIR [--timeout S] [--sandbox local|docker]

EXAMPLES_DIR is the `examples/` folder of a GEPA checkout (e.g. `git archive b265bf9
examples | tar -x -C DIR`, v0.1.4's examples); nothing of it is committed here. Every
`main.py` under it that names optimize_anything is one row:

- check: `evolve check MAIN --sandbox S`: the seed's score, else the one line it refused with;
- eval: `evolve eval MAIN SEED --json --sandbox S` on the seed check captured.

GEPA itself is not run (it needs a reflection model's API key for any score of its own), so
the peer column is left to the reader. Prints a plain table; evolve runs as this checkout,
with this process's environment less PYTHON*, EVOLVE_* and OPENAI_* variables.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from peer_common import REPO, clean_env, last_line, print_table, run  # noqa: E402

SCORE = re.compile(r"seed on train: ok, score (\S+)")


def scripts(examples: Path) -> list[Path]:
    found = sorted(examples.rglob("main.py"))
    return [p for p in found if b"optimize_anything" in p.read_bytes()]


def row(main: Path, sandbox: str, timeout: float, examples: Path) -> tuple[str, str, str]:
    env = clean_env(pythonpath=REPO)
    name = str(main.parent.relative_to(examples))
    cli = [sys.executable, "-m", "evolve.cli"]
    r = run([*cli, "check", str(main), "--sandbox", sandbox], REPO, env, timeout)
    if isinstance(r, str):
        return name, r, "-"
    text = r.stdout + r.stderr
    m = SCORE.search(text)
    if r.returncode != 0 or m is None:
        return name, "refused: " + last_line(r.stderr or r.stdout), "-"
    check = f"ok {m.group(1)}"
    sys.path.insert(0, str(REPO))
    from evolve.problem import load_problem
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
        return name, check, e
    try:
        out = json.loads(e.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return name, check, "no JSON: " + last_line(e.stderr)
    return name, check, f"{out.get('status')} {out.get('score')}"


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("examples", type=Path)
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--sandbox", default="local", choices=("local", "docker"))
    a = p.parse_args()
    body = [row(m, a.sandbox, a.timeout, a.examples) for m in scripts(a.examples)]
    print_table(("example", f"evolve check ({a.sandbox})", "evolve eval seed"), body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
