"""evolve's stand-in for the parts of OpenEvolve that evaluators import (see ../README.md).

The controller, database and LLM side of OpenEvolve are not here: an evaluator that
needs them must install OpenEvolve itself (it then shadows this stand-in)."""

__version__ = "0.4.0+evolve-stand-in"
STAND_IN = True  # the real package has no such name
