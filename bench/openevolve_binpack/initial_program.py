"""Online 1-D bin packing heuristic, FunSearch's skeleton (seed: best fit).

Fixed API (the code outside the EVOLVE block): for each arriving item the
evaluator calls priority(item, bins) and puts the item into the bin with the
highest priority, as FunSearch's `online_binpack` does. `item` is the item's
size (a float holding an integer). `bins` is a float array with the remaining
capacity of every bin the item fits in (remaining - item >= 0), in ascending
bin-index order. Every instance starts with as many bins as it has items, all
empty (remaining == capacity: 100 on the Weibull sets, 150 on OR3), so the
still-empty bins are always included and opening a new bin means choosing one
of them. Return one finite priority per entry of `bins`; ties go to the
earliest bin (np.argmax). priority() must be a pure function of (item, bins).
"""

import numpy as np


# EVOLVE-BLOCK-START
def priority(item: float, bins: np.ndarray) -> np.ndarray:
    """Best fit: the bin left with the least free space after placing the item."""
    return -(bins - item)


# EVOLVE-BLOCK-END
