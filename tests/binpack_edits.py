"""Canned online_binpack edits that the scripted LLM serves (data only).

Mixes improvements and failures so a scripted evolution run exercises both;
each entry is (name, note, priority source) and the source is the whole body
of the EVOLVE block. Expected outcomes on problems/online_binpack:
best_fit / best_fit_tiebreak beat the first-fit seed, worst_fit fails the
quick cascade, syntax_error fails to import, wrong_shape and non_finite are
invalid, runtime_error raises NameError, funsearch_weibull is the strongest.
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
        "The shape of FunSearch's Weibull heuristic: penalize large leftovers.",
        "def priority(item: float, bins: np.ndarray) -> np.ndarray:\n"
        "    score = (bins - bins.max()) ** 2 / item + bins**2 / item**2 + bins**2 / item**3\n"
        "    score[bins > item] = -score[bins > item]\n"
        "    score[1:] -= score[:-1]\n"
        "    return score\n",
    ),
]
