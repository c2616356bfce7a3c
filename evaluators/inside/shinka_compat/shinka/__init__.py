"""evolve's stand-in for the parts of ShinkaEvolve that evaluators import (see ../README.md).

The runner, database and LLM side of ShinkaEvolve are not here: an evaluator that needs
them must install ShinkaEvolve itself (it then shadows this stand-in)."""

__version__ = "0.0.7+evolve-stand-in"
STAND_IN = True  # the real package has no such name


def __getattr__(name: str):
    raise ImportError(
        f"shinka.{name} is not in evolve's stand-in for ShinkaEvolve (only "
        "shinka.core.run_shinka_eval is); install shinka-evolve in the sandbox to use it"
    )
