"""Where evolve keeps what it can make again (model weights, fetched crates, baseline
scores): one folder, so one variable moves or clears all of it."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """$EVOLVE_CACHE_DIR, else $XDG_CACHE_HOME/evolve, else ~/.cache/evolve."""
    env = os.environ.get("EVOLVE_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "evolve"
