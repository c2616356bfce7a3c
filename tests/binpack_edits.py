"""Re-export: binpack's canned edits live in evolve/testing/binpack_edits.py."""

from evolve.testing.binpack_edits import BINPACK_VARIANTS

__all__ = ["BINPACK_VARIANTS"]
