"""`evolve new NAME`: a problem folder that passes `evolve check` as written.

The scaffold is a tiny but complete problem (order jobs on one machine to
minimise mean completion time) so every file shows its part of the contract
working, with comments saying what to replace.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from pathlib import Path

from evolve.cli.scaffold_tree import NOTES, PROGRAM, check_parts, write_tree

PROBLEM_TOML = '''# problem.toml: what the controller needs to know about this problem.
[problem]
name = "{name}"
description = "Order jobs on one machine to minimise mean completion time"  # TODO: one line
entry = "{entry}"{entry_note}
metric = "mean_completion"   # headline metric: a key of the metrics evaluator.score returns
direction = "minimize"       # of the headline metric; the score itself is always higher-is-better
# Shown to the LLM in the system prompt: the API, the constraints, what scores well.
domain_notes = """
{notes}
"""
{program}
[evaluation]
timeout_s = 30               # wall-clock limit per evaluation (the sandbox kills it after)
memory_mb = 1024
splits = ["quick", "train", "test"]
train_split = "train"        # what evolution optimises
test_split = "test"          # held out: re-scored for new bests, never shown in a prompt

# Optional cascade: cheap stages first; a candidate continues only if it reaches the threshold.
[[evaluation.cascade]]
split = "quick"
threshold = -1e9

[features]
# MAP-Elites dimensions: "code_length", "diversity", or names of metrics.
dimensions = ["code_length", "diversity"]
bins = 8

# The workload files in data/, checked before every run (a url lets `evolve data fetch` refresh one).
[[data]]
path = "jobs.json"
sha256 = "{sha256}"
'''

SEED = '''"""Seed program: the fixed API lives outside the EVOLVE-BLOCK markers."""


# EVOLVE-BLOCK-START
def schedule(jobs):
    """Return job ids in run order. TODO: replace with your problem's policy."""
    return [job_id for job_id, _ in jobs]  # first come, first served
# EVOLVE-BLOCK-END
'''

EVALUATOR = '''"""Evaluator: trusted code that scores a candidate on a named split.

evaluate() runs inside the sandbox together with the candidate, so it only
collects the candidate's decisions ("outputs"). score() runs in a clean
process without the candidate and computes the score from those outputs, so
a candidate that patches this module in memory gains nothing. The kit
(evaluators/kit.py) loads the candidate, finds data files and reports a
broken rule (kit.Invalid) as an invalid candidate with your message.
"""

from evaluators import kit

# TODO: replace data/jobs.json with your workload (list it in problem.toml [[data]]
# and data/SOURCES.md) or with a documented, seeded generator.
SPLITS = ("quick", "train", "test")


def _instances(split):
    """Lists of (job_id, duration) per instance of the split."""
    return [[tuple(job) for job in jobs] for jobs in kit.read_json(kit.data_path(__file__, "jobs.json"))[split]]


def _run(schedule, split):
    """Sandbox side: one order per instance, from the candidate."""
    orders = []
    for k, jobs in enumerate(_instances(split)):
        order = schedule(list(jobs))
        if not isinstance(order, (list, tuple)) or not all(type(j) is int for j in order):
            raise kit.Invalid(f"instance {{k}}: schedule() must return a list of job ids (ints)")
        orders.append(list(order))
    return {{"orders": orders}}


def evaluate(program_path, split):
    return kit.evaluate(program_path, split, "schedule", _run)


def _judge(outputs, split):
    """Trusted side: check every order, then replay it."""
    instances = _instances(split)
    orders = outputs.get("orders") if isinstance(outputs, dict) else None
    if not isinstance(orders, list) or len(orders) != len(instances):
        raise kit.Invalid(f"expected one order per instance ({{len(instances)}})")
    total = 0.0
    for k, (jobs, order) in enumerate(zip(instances, orders)):
        if sorted(order) != [j for j, _ in jobs]:
            raise kit.Invalid(f"instance {{k}}: every job must appear exactly once")
        duration = dict(jobs)
        t, sum_completion = 0, 0
        for j in order:
            t += duration[j]
            sum_completion += t
        total += sum_completion / len(jobs)
    mean = total / len(instances)
    return {{"score": -mean, "metrics": {{"mean_completion": mean}}}}


def score(outputs, split):
    return kit.score(outputs, split, _judge)


if __name__ == "__main__":  # python evaluator.py PROGRAM [SPLIT ...]
    raise SystemExit(kit.main(__name__, SPLITS))
'''

BASELINE = '''"""Baseline: shortest processing time first. Only the EVOLVE-BLOCK: the loader
completes it with seed.py's fixed code, so fixed code is written once."""

# EVOLVE-BLOCK-START
def schedule(jobs):
    """Shortest processing time first."""
    return [job_id for job_id, _ in sorted(jobs, key=lambda j: j[1])]
# EVOLVE-BLOCK-END
'''

SOURCES = """# Data sources

| file | what | source | licence | SHA-256 |
| --- | --- | --- | --- | --- |
| jobs.json | job durations per split (quick: 1 x 20 jobs, train: 5 x 200, test: 5 x 400), uniform 1..100 | generated by `evolve new` (random.Random(11/12/13)) | public domain | {sha256} |

TODO: replace with your workload's public URL, licence and how the file was derived.
"""


def _jobs() -> str:
    """A small seeded workload, so the scaffold shows data flowing from data/ to the evaluator."""
    sizes = {"quick": (1, 20, 11), "train": (5, 200, 12), "test": (5, 400, 13)}
    out = {}
    for split, (count, size, seed) in sizes.items():
        rng = random.Random(seed)
        out[split] = [[[j, rng.randint(1, 100)] for j in range(size)] for _ in range(count)]
    return json.dumps(out, separators=(",", ":")) + "\n"


README = """# {name}

TODO: the problem, the policy API, the simulator's rules, the metric and how the
score is built from it, the data and its source, the splits, and published
reference numbers beside ours (from where `evolve new` ran:
`evolve eval {where} {where}/baselines/spt.py --split test --json`).
"""


ENTRY_NOTE = "            # the seed program; evolution starts from it"
TREE_ENTRY = "  # the tree's file the evaluator loads (kit.load)"
ONE_FILE_NOTES = """schedule(jobs) receives a list of (job_id, duration) pairs and returns the job ids in
the order they run on one machine. Every job must appear exactly once."""


def scaffold(target: str, files: int = 1) -> Path:
    """The problem folder; `files` > 1: its policy a tree of that many evolving files and a
    fixed entry (scaffold_tree.py)."""
    check_parts(files)
    path = Path(target)
    name = re.sub(r"[^A-Za-z0-9_]+", "_", path.name).strip("_")
    if not name:
        raise ValueError(f"{target}: a problem needs a name made of letters, digits or '_'")
    if path.exists():
        raise ValueError(f"{target}: already exists; choose a new folder")
    (path / "baselines").mkdir(parents=True)
    (path / "data").mkdir()
    jobs = _jobs()
    sha256 = hashlib.sha256(jobs.encode()).hexdigest()
    (path / "data" / "jobs.json").write_text(jobs)
    (path / "data" / "SOURCES.md").write_text(SOURCES.format(sha256=sha256))
    (path / "evaluator.py").write_text(EVALUATOR.format())
    if files > 1:
        toml = dict(entry="policy/__init__.py", entry_note=TREE_ENTRY, notes=NOTES, program=PROGRAM)
        write_tree(path, name, files)
    else:
        toml = dict(entry="seed.py", entry_note=ENTRY_NOTE, notes=ONE_FILE_NOTES, program="")
        (path / "seed.py").write_text(SEED)
        (path / "baselines" / "spt.py").write_text(BASELINE)
        (path / "README.md").write_text(README.format(name=name, where=path.as_posix()))
    (path / "problem.toml").write_text(PROBLEM_TOML.format(name=name, sha256=sha256, **toml))
    return path
