"""The packages a SkyDiscover evaluator/Dockerfile installs by name (`RUN pip install PKG ...`).

SkyDiscover builds that Dockerfile; evolve layers the same packages on its sandbox image
instead, beside the folder's requirements.txt (evaluators/docker/image_layers.py). Only
plain requirements are honoured (a name, a pin, extras, markers) with the options that
change nothing about what gets installed; anything else (an index, a path, `-e`, a URL)
is refused by the loader (evolve/problem/skydiscover_dockerfile.py), in one line naming it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

PIP = re.compile(r"^(?:pip3?|python3?(?:\.\d+)?\s+-m\s+pip)\s+install\s+(.*)$")
HARMLESS = {  # options that change how pip runs, not what it installs
    "--no-cache-dir",
    "--upgrade",
    "-U",
    "-q",
    "--quiet",
    "--no-input",
    "--disable-pip-version-check",
    "--root-user-action=ignore",
    "--break-system-packages",
}
REQUIREMENTS_FILES = ("requirements.txt", "./requirements.txt")


class PipError(ValueError):
    """A `pip install` that evolve cannot honour: the message names the word."""


def parts(command: str) -> list[str]:
    """A RUN's shell command split at `&&` and `;`."""
    return [p for p in re.split(r"\s*(?:&&|;)\s*", command.strip()) if p]


def requirements_of(part: str) -> list[str] | None:
    """The plain requirements one `pip install ...` names ([] for `-r requirements.txt`,
    which the layer installs anyway); None when `part` is no pip install; PipError when it
    asks for what a layer of requirements cannot give."""
    from packaging.requirements import InvalidRequirement, Requirement

    pip = PIP.match(part.strip())
    if pip is None:
        return None
    words = [w for w in shlex.split(pip.group(1)) if w not in HARMLESS]
    if words in (["-r", f] for f in REQUIREMENTS_FILES):
        return []
    out = []
    for word in words:
        if word.startswith("-"):
            raise PipError(f"the option {word} (only plain package names and pins are honoured)")
        try:
            req = Requirement(word)
        except InvalidRequirement:
            raise PipError(f"{word!r} is no plain requirement (a name or a pin)") from None
        if req.url:
            raise PipError(f"{word!r} installs from a URL (only plain names and pins)")
        out.append(word)
    return out


def instructions(text: str) -> list[tuple[int, str, str]]:
    """(line number, INSTRUCTION, arguments), continuation lines joined, comments dropped."""
    out: list[tuple[int, str, str]] = []
    pending, start = "", 0
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if pending and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = n
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        word, _, args = whole.partition(" ")
        out.append((start, word.upper(), args.strip()))
    if pending.strip():
        word, _, args = pending.strip().partition(" ")
        out.append((start, word.upper(), args.strip()))
    return out


def dockerfile_packages(evaluator_dir: str | Path) -> tuple[str, ...]:
    """The requirements evaluator/Dockerfile's `RUN pip install PKG ...` lines name, in order
    (none when it has no Dockerfile). Lines the loader refuses are skipped here: a problem
    that loads has none."""
    path = Path(evaluator_dir) / "Dockerfile"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return ()
    found: list[str] = []
    for _, word, args in instructions(text):
        if word != "RUN":
            continue
        for part in parts(args):
            try:
                found += requirements_of(part) or []
            except PipError:
                continue
    return tuple(dict.fromkeys(found))


def layer_requirements(
    requirements: Path | None, packages: tuple[str, ...], folder: str | Path
) -> Path | None:
    """The file pip installs a layer from: the problem's requirements.txt, or, with the
    Dockerfile's packages, a file in `folder` that includes it (`-r`, by its absolute path)
    and lists them after it."""
    if not packages:
        return requirements
    lines = [f"-r {requirements.resolve()}"] if requirements else []
    path = Path(folder) / "requirements-layer.txt"
    path.write_text("\n".join([*lines, *packages]) + "\n", encoding="utf-8")
    return path
