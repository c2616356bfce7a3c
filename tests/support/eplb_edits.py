"""Canned eplb edits that the scripted LLM serves.

Each entry is (name, note, the whole EVOLVE block). `vectorised_packing` is the seed
(DeepSeek's greedy) with its packing loop vectorised over layers and nodes: identical
placements, far less time per call (the ADRS result, in small; README.md's last row).
"""

from __future__ import annotations

from pathlib import Path

PROBLEM = Path(__file__).resolve().parents[2] / "problems" / "eplb"

VECTORISED_PACKING = '''
def balanced_packing(weight: np.ndarray, num_packs: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy packing (heaviest item to the lightest pack with room), all rows at once."""
    rows, n = weight.shape
    per_pack = n // num_packs
    order = np.argsort(-weight, axis=1, kind="stable")
    loads = np.zeros((rows, num_packs))
    counts = np.zeros((rows, num_packs), dtype=np.int64)
    pack_index = np.empty((rows, n), dtype=np.int64)
    rank_in_pack = np.empty((rows, n), dtype=np.int64)
    r = np.arange(rows)
    for j in range(n):
        item = order[:, j]
        best = np.argmin(np.where(counts < per_pack, loads, np.inf), axis=1)
        pack_index[r, item] = best
        rank_in_pack[r, item] = counts[r, best]
        loads[r, best] += weight[r, item]
        counts[r, best] += 1
    return pack_index, rank_in_pack
'''


def vectorised_seed() -> str:
    """The seed's block with balanced_packing replaced by VECTORISED_PACKING."""
    text = (PROBLEM / "seed.py").read_text()
    body = text.split("# EVOLVE-BLOCK-START")[1].split("# EVOLVE-BLOCK-END")[0].strip("\n") + "\n"
    start = body.index("def balanced_packing")
    end = body.index("def replicate_experts")
    return body[:start] + VECTORISED_PACKING.strip() + "\n\n\n" + body[end:]


EPLB_VARIANTS: list[tuple[str, str, str]] = [
    (
        "vectorised_packing",
        "Vectorise the packing loop over layers and nodes.",
        vectorised_seed(),
    ),
]
