"""`from shinka.core import run_shinka_eval`, the one name ShinkaEvolve's evaluators import."""

from shinka.core.wrap_eval import (
    DEFAULT_METRICS_ON_ERROR,
    load_program,
    run_shinka_eval,
    save_json_results,
)

__all__ = ["DEFAULT_METRICS_ON_ERROR", "load_program", "run_shinka_eval", "save_json_results"]


def __getattr__(name: str):
    raise ImportError(
        f"shinka.core.{name} is not in evolve's stand-in for ShinkaEvolve (only "
        "run_shinka_eval is); install shinka-evolve in the sandbox to use it"
    )
