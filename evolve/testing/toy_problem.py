"""A native problem whose candidates take milliseconds (f(3) should be 10), for tests of
the controller, the archive and the LLM client rather than of a real problem."""

from __future__ import annotations

from pathlib import Path

EVALUATOR = """
import importlib.util

def evaluate(program_path, split):
    spec = importlib.util.spec_from_file_location("cand", program_path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return {"outputs": {"value": float(m.f(3))}}

def score(outputs, split):
    return {"score": -abs(outputs["value"] - 10.0), "metrics": {"value": outputs["value"]}}
"""
SEED = "# EVOLVE-BLOCK-START\ndef f(x):\n    return x\n# EVOLVE-BLOCK-END\n"


def toy_problem(root: Path, timeout_s: int = 30) -> Path:
    root.mkdir()
    (root / "problem.toml").write_text(
        '[problem]\nname = "toy"\nentry = "seed.py"\n'
        f'[evaluation]\ntimeout_s = {timeout_s}\nsplits = ["train"]\n'
    )
    (root / "seed.py").write_text(SEED)
    (root / "evaluator.py").write_text(EVALUATOR)
    return root
