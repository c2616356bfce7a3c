"""Online bin packing heuristic (seed: first fit).

Fixed API (the code outside the EVOLVE block): the evaluator calls
priority(item, bins) once per arriving item. `item` is the item's size (a
float holding an integer 1..100). `bins` is a float array with the remaining
capacity of every bin the item fits in (remaining >= item), in ascending bin
index order; still-empty bins (remaining == 100) are included, so opening a
new bin means choosing one of them. Return one finite priority per entry of
`bins`; the item goes to the highest-priority bin, ties to the earliest one.
priority() must be a pure function of (item, bins).
"""

import numpy as np


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """First fit: the earliest bin the item fits in (priority falls with bin order)."""
    return -np.arange(len(bins), dtype=float)


# EVOLVE-BLOCK-END
