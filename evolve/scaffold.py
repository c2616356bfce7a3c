"""`evolve new NAME`: a problem folder that passes `evolve check` as written.

The scaffold is a tiny but complete problem (order jobs on one machine to
minimise mean completion time) so every file shows its part of the contract
working, with comments saying what to replace.
"""

from __future__ import annotations

import re
from pathlib import Path

PROBLEM_TOML = '''# problem.toml: what the controller needs to know about this problem.
[problem]
name = "{name}"
description = "Order jobs on one machine to minimise mean completion time"  # TODO: one line
entry = "seed.py"            # the seed program; evolution starts from it
metric = "mean_completion"   # headline metric: a key of the metrics evaluator.score returns
direction = "minimize"       # of the headline metric; the score itself is always higher-is-better
# Shown to the LLM in the system prompt: the API, the constraints, what scores well.
domain_notes = """
schedule(jobs) receives a list of (job_id, duration) pairs and returns the job ids in
the order they run on one machine. Every job must appear exactly once.
"""

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
a candidate that patches this module in memory gains nothing.
"""

import importlib.util
import random

# TODO: replace the generator with your workload data (read it from
# os.environ["EVOLVE_DATA_DIR"]) or a documented, seeded generator.
SPLITS = {{"quick": (1, 20, 11), "train": (5, 200, 12), "test": (5, 400, 13)}}


def _instances(split):
    count, size, seed = SPLITS[split]
    rng = random.Random(seed)
    return [[(j, rng.randint(1, 100)) for j in range(size)] for _ in range(count)]


def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("candidate", program_path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    orders = []
    for jobs in _instances(split):
        order = module.schedule(list(jobs))
        orders.append([int(j) for j in order])
    return {{"outputs": {{"orders": orders}}}}


def score(outputs, split):
    total = 0.0
    instances = _instances(split)
    orders = outputs.get("orders") if isinstance(outputs, dict) else None
    if not isinstance(orders, list) or len(orders) != len(instances):
        return {{"valid": False, "artifacts": {{"error": "expected one order per instance"}}}}
    for jobs, order in zip(instances, orders):
        if sorted(order) != [j for j, _ in jobs]:
            return {{"valid": False, "artifacts": {{"error": "every job must appear exactly once"}}}}
        duration = dict(jobs)
        t, sum_completion = 0, 0
        for j in order:
            t += duration[j]
            sum_completion += t
        total += sum_completion / len(jobs)
    mean = total / len(instances)
    return {{"score": -mean, "metrics": {{"mean_completion": mean}}}}
'''

BASELINE = SEED.replace(
    "return [job_id for job_id, _ in jobs]  # first come, first served",
    "return [job_id for job_id, _ in sorted(jobs, key=lambda j: j[1])]  # shortest first",
).replace("TODO: replace with your problem's policy.", "Shortest processing time first.")

README = """# {name}

TODO: the problem, the policy API, the simulator's rules, the metric and how the
score is built from it, the data and its source, the splits, and published
reference numbers beside ours (`evolve eval {name} baselines/spt.py --split test --json`).
"""


def scaffold(target: str) -> Path:
    path = Path(target)
    name = re.sub(r"[^A-Za-z0-9_]+", "_", path.name).strip("_")
    if not name:
        raise ValueError(f"{target}: a problem needs a name made of letters, digits or '_'")
    if path.exists():
        raise ValueError(f"{target}: already exists; choose a new folder")
    (path / "baselines").mkdir(parents=True)
    (path / "problem.toml").write_text(PROBLEM_TOML.format(name=name))
    (path / "seed.py").write_text(SEED)
    (path / "evaluator.py").write_text(EVALUATOR.format())
    (path / "baselines" / "spt.py").write_text(BASELINE)
    (path / "README.md").write_text(README.format(name=name))
    return path
