"""A stand-in for the `gepa` package: only what a script calling optimize_anything needs.

Inside the sandbox, `gepa.optimize_anything(...)` and
`gepa.optimize_anything.optimize_anything(...)` do not optimise: they hand what the script
passed to evolve's scorer (evaluators/inside/gepa_score.py) and stop the script there.
"""

from gepa import optimize_anything  # noqa: F401  (the submodule, callable like GEPA's function)
from gepa.optimize_anything import OptimizationState  # noqa: F401
