# ruff: noqa: F821  (only the EVOLVE-BLOCK: the seed's fixed code brings numpy)
"""Reference, not a baseline: the heuristic FunSearch reports for its Weibull datasets
(bin_packing.ipynb in github.com/google-deepmind/funsearch), rewritten here with numpy's
bins.max(); it places every item where the notebook's version does. Published on Weibull 5k:
2001.4 bins, 0.68% excess (split `weibull5k`). Only the EVOLVE-BLOCK; `evolve eval` completes
it with seed.py's fixed code."""


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Quadratic terms in the leftover space; negated where the bin is not an exact fit, then
    differenced along the bin order."""
    v = (bins - bins.max()) ** 2 / item + bins**2 / item**2 + bins**2 / item**3
    loose = bins > item
    v[loose] = -v[loose]
    v[1:] -= v[:-1]
    return v


# EVOLVE-BLOCK-END
