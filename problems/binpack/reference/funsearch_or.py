# ruff: noqa: F821  (only the EVOLVE-BLOCK: the seed's fixed code brings numpy)
"""Reference, not a baseline: the heuristic FunSearch reports for the OR datasets
(bin_packing.ipynb in github.com/google-deepmind/funsearch), rewritten here as a table lookup
on the gap left in the bin; it gives every bin the notebook's priority. Published on OR3:
207.45 bins, 3.11% excess (split `or3`). Only the EVOLVE-BLOCK; `evolve eval` completes it
with seed.py's fixed code."""

# EVOLVE-BLOCK-START
GAP_UPPER = np.array([2, 3, 5, 7, 9, 12, 15, 21])  # gap <= GAP_UPPER[i] scores SCORES[i]
SCORES = np.array([4, 3, 2, 1, 0.9, 0.95, 0.97, 0.98, 0.99])  # the last: any larger gap


def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """A step function of the gap the item leaves: near-exact fits first, then (oddly) large gaps
    before medium ones."""
    return SCORES[np.searchsorted(GAP_UPPER, bins - item, side="left")]


# EVOLVE-BLOCK-END
