"""`evolve new NAME --files N`: the scaffold's problem with its policy as a tree of N files.

The same job-ordering problem as the one-file scaffold (evolve/cli/scaffold.py), its policy
split the way a systems policy is: N evolving modules in a package, each one term of a
job's priority, and a fixed entry that composes them. The tree lives in `seed/`
(problem.toml's `[program] folder`), so the problem folder itself holds no `policy`
package that could shadow a candidate's.
"""

from __future__ import annotations

from pathlib import Path

from evaluators.tree import MAX_FILES

MAX_PARTS = MAX_FILES - 1  # the entry is a file of the tree too

PROGRAM = """
# The program is a tree of files: every file under seed/ (paths relative to it), laid out at
# those paths for each evaluation. The entry composes the modules and never changes; every
# other file evolves (inside its EVOLVE-BLOCK markers).
[program]
folder = "seed"
fixed = ["policy/__init__.py"]
"""

NOTES = """schedule(jobs) (policy/__init__.py, fixed) receives a list of (job_id, duration) pairs and
returns the job ids in the order they run on one machine: jobs sorted by the sum of the
modules' priority terms, lowest first, ties in arrival order. Each module policy/partK.py
defines priority(job_id, duration) -> a number: one term. Every job appears exactly once."""

ENTRY = '''"""The policy the evaluator calls (fixed): jobs run in order of the sum of the modules'
priority terms, lowest first, ties in arrival order. The modules evolve; this file composes
them and never changes. TODO: compose your problem's modules."""

from policy import {imports}

PARTS = ({parts})


def schedule(jobs):
    return [job for job, _ in sorted(jobs, key=lambda j: sum(p.priority(*j) for p in PARTS))]
'''

PART = '''"""Part {k} of {n} of the policy: one term of a job's priority (lower runs first).
TODO: make each module one concern of your policy (admission, placement, ordering, ...)."""


# EVOLVE-BLOCK-START
def priority(job_id, duration):
    """This module's term of the job's priority. TODO: replace with your policy's."""
    return 0  # every term 0: first come, first served
# EVOLVE-BLOCK-END
'''

BASELINE = '''"""Baseline: shortest processing time first, in part 1 (the other parts are the seed's:
`evolve eval` takes this folder as the program)."""


# EVOLVE-BLOCK-START
def priority(job_id, duration):
    """Shortest processing time first."""
    return duration
# EVOLVE-BLOCK-END
'''

README = """# {name}

TODO: the problem, the policy API, the simulator's rules, the metric and how the
score is built from it, the data and its source, the splits, and published
reference numbers beside ours.

The policy is a tree of {n} evolving modules and a fixed entry, under `seed/`:
`seed/policy/__init__.py` (fixed) composes `seed/policy/part1.py` .. `part{n}.py`.
A baseline is a folder of the files it changes at their tree paths (from where
`evolve new` ran: `evolve eval {where} {where}/baselines/spt --split test --json`).
"""


def check_parts(n: int) -> int:
    if not 1 <= n <= MAX_PARTS:
        raise ValueError(f"--files {n}: expected a number of evolving files from 1 to {MAX_PARTS}")
    return n


def write_tree(path: Path, name: str, n: int) -> None:
    """The seed tree, its baseline and README for a policy of `n` >= 2 evolving files."""
    policy = path / "seed" / "policy"
    policy.mkdir(parents=True)
    names = [f"part{k}" for k in range(1, n + 1)]
    (policy / "__init__.py").write_text(
        ENTRY.format(imports=", ".join(names), parts=", ".join(names))
    )
    for k in range(1, n + 1):
        (policy / f"part{k}.py").write_text(PART.format(k=k, n=n))
    (path / "baselines" / "spt" / "policy").mkdir(parents=True)
    (path / "baselines" / "spt" / "policy" / "part1.py").write_text(BASELINE)
    (path / "README.md").write_text(README.format(name=name, n=n, where=path.as_posix()))
