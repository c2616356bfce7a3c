"""A stand-in for `evolve` inside the sandbox: a script written for evolve.optimize_anything
(GEPA's script with one import changed) is captured exactly as GEPA's call is."""

from gepa.optimize_anything import OptimizationState, optimize_anything  # noqa: F401
