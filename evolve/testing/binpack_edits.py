"""Canned binpack edits that the scripted LLM serves (data only).

Mixes improvements and failures so a scripted evolution run exercises both;
each entry is (name, note, priority source) and the source is the whole body
of the EVOLVE block. Expected outcomes on problems/binpack, whose seed is best
fit (train score -3.884): best_fit and best_fit_tiebreak score the same as
the seed (best_fit's block is the seed's own code), worst_fit fails the quick
cascade, syntax_error fails to import, wrong_shape and non_finite are invalid,
runtime_error raises NameError, and funsearch_weibull (FunSearch's evolved
Weibull heuristic, as in problems/binpack/reference/funsearch_weibull.py) is
the one that beats the seed (train -0.736).
"""

BINPACK_VARIANTS: list[tuple[str, str, str]] = [
    (
        "best_fit",
        "Best fit: put the item where it leaves the least free space.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n    return -(bins - item)\n",
    ),
    (
        "best_fit_tiebreak",
        "Best fit, breaking ties toward the earliest bin explicitly.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        "    return -(bins - item) - 1e-6 * np.arange(len(bins))\n",
    ),
    (
        "worst_fit",
        "Worst fit: keep bins balanced by choosing the emptiest one.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n    return bins - item\n",
    ),
    (
        "syntax_error",
        "Tighter fits first.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n    return -(bins - item\n",
    ),
    (
        "wrong_shape",
        "Add a virtual entry for opening a new bin.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        "    return np.append(-(bins - item), 0.0)\n",
    ),
    (
        "runtime_error",
        "Normalize the gap by the bin capacity.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        "    return -(bins - item) / CAPACITY\n",
    ),
    (
        "non_finite",
        "Inverse gap, so exact fits win.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        "    return 1.0 / (bins - item)\n",
    ),
    (
        "funsearch_weibull",
        "FunSearch's Weibull heuristic: shape priorities around the leftover gap.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        "    v = (bins - bins.max()) ** 2 / item + bins**2 / item**2 + bins**2 / item**3\n"
        "    loose = bins > item\n"
        "    v[loose] = -v[loose]\n"
        "    v[1:] -= v[:-1]\n"
        "    return v\n",
    ),
]
