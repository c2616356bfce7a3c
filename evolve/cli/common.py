"""What every command shares: the usage error (evolve.pipeline.api raises it too) and where the runs live."""

from __future__ import annotations

from pathlib import Path

from evolve.settings.errors import UsageError
from evolve.settings.flags import new_run_id
from evolve.settings.flags import runs_dir as _runs_dir

__all__ = ["UsageError", "given", "new_run_id", "runs_dir"]


def runs_dir(args) -> Path:
    return _runs_dir(getattr(args, "runs_dir", None))


def given(args, names: tuple[str, ...]) -> dict:
    """The flags among `names` given on the command line (argparse leaves the others None):
    the keyword arguments for evolve.pipeline.api, where a setting given wins over the folder's."""
    return {n: v for n in names if (v := getattr(args, n, None)) is not None}
