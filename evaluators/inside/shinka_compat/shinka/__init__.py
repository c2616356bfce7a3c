"""evolve's stand-in for the parts of ShinkaEvolve that evaluators import (see ../README.md).

The runner and database of ShinkaEvolve are not here, and of its LLM side only the client
an evaluator uses as a judge (shinka.llm.LLMClient): an evaluator that needs more must
install ShinkaEvolve itself (it then shadows this stand-in)."""

__version__ = "0.0.7+evolve-stand-in"
STAND_IN = True  # the real package has no such name


def __getattr__(name: str):
    raise ImportError(
        f"shinka.{name} is not in evolve's stand-in for ShinkaEvolve (only "
        "shinka.core.run_shinka_eval and shinka.llm.LLMClient are); install shinka-evolve in the sandbox to use it"
    )
