"""From a model's reply to a candidate program: EVOLVE-BLOCK markers, reply parsing,
SEARCH/REPLACE edits, and applying them to the parent."""

from evolve.edits.apply import EditOutcome, apply_reply, normalized_hash, unified_diff
from evolve.edits.blocks import evolvable_text, find_blocks

__all__ = [
    "EditOutcome",
    "apply_reply",
    "evolvable_text",
    "find_blocks",
    "normalized_hash",
    "unified_diff",
]
