"""Re-export: the toy problem lives in evolve/testing/toy_problem.py."""

from evolve.testing.toy_problem import EVALUATOR, SEED, toy_problem

__all__ = ["EVALUATOR", "SEED", "toy_problem"]
