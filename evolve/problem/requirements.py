"""Which lines of a problem's requirements.txt this interpreter does not satisfy.

The local sandbox runs evaluators on the host's Python, so `evolve check` warns about
what is missing here before a run fails on an ImportError. (The Docker sandbox layers
the file on its image instead: evaluators/docker/image_layers.py.)
"""

from __future__ import annotations

import re
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

REQUIREMENTS = "requirements.txt"
_OPTION = re.compile(r"\s--?\w")  # `pkg==1 --hash=...`: per-requirement options end the spec


def missing_requirements(problem_dir: str | Path) -> list[str]:
    """The requirement lines of DIR/requirements.txt (as written, less comments) that the
    current environment lacks, or has at a version outside the specifier. Lines whose
    markers do not apply here are satisfied. Not checked: option lines (`-r`, `-c`,
    `--index-url`, ...: pip's business, not a package) and lines that are no PEP 508
    requirement (a path or a bare URL, whose name pip learns only by building it)."""
    path = Path(problem_dir) / REQUIREMENTS
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8", errors="replace").replace("\\\n", "")
    return missing_lines(text.splitlines())


def missing_lines(lines: list[str] | tuple[str, ...]) -> list[str]:
    """The requirement lines (as written, less comments) this environment lacks."""
    missing = []
    for raw in lines:
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if not line or line.startswith("-"):
            continue
        spec = _OPTION.split(line, maxsplit=1)[0]
        try:
            req = Requirement(spec)
        except InvalidRequirement:
            continue
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            missing.append(line)
            continue
        if not req.specifier.contains(version, prereleases=True):
            missing.append(line)
    return missing
