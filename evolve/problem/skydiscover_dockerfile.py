"""What a SkyDiscover folder's evaluator/Dockerfile asks for, and whether our sandbox gives it.

SkyDiscover builds the Dockerfile and runs evaluate.sh in it. evolve runs evaluate.sh in
its own sandbox image (or on the host's Python, locally) instead, which gives: a Python
(FROM python:TAG: our Python stands in, whatever TAG's version), the folder's
requirements.txt installed (RUN pip install -r requirements.txt: layered on the Docker
image, checked locally, as any folder's requirements), the packages a `RUN pip install PKG
...` names (plain names and pins: the same layer; evaluators/docker/dockerfile_pip.py), ENV
variables, WORKDIR /benchmark,
COPY of the folder's files to /benchmark (the folder is shown there), `RUN chmod` (the
script runs through bash) and an ENTRYPOINT or CMD of evaluate.sh. Anything else (RUN
apt-get, another base image, USER, ...) is refused in one line naming the instruction:
the evaluator would need what our image lacks.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.docker.dockerfile_pip import PipError, instructions, parts, requirements_of
from evolve.problem.model import ProblemError

WORKDIR = "/benchmark"
NO_EFFECT = {"LABEL", "EXPOSE", "STOPSIGNAL", "MAINTAINER"}
_PYTHON_FROM = re.compile(r"^(?:docker\.io/)?(?:library/)?python(?::([\w.-]+))?(?:@\S+)?$")


@dataclass(frozen=True)
class DockerPlan:
    """What the Dockerfile asks that our sandbox gives: its ENV and what to tell the user."""

    env: dict[str, str] = field(default_factory=dict)
    packages: tuple[str, ...] = ()  # RUN pip install's, layered beside requirements.txt
    base: str | None = None  # FROM's image, as written
    notes: tuple[str, ...] = ()


def _words(args: str) -> list[str]:
    """A JSON-array (exec form) or shell-form argument list, as words."""
    if args.startswith("["):
        import json

        try:
            value = json.loads(args)
        except ValueError:
            return shlex.split(args.strip("[]").replace(",", " "))
        return [str(v) for v in value] if isinstance(value, list) else []
    return shlex.split(args)


def _env(args: str) -> dict[str, str]:
    words = shlex.split(args)
    if words and "=" not in words[0]:  # ENV NAME value with spaces
        return {words[0]: " ".join(words[1:])}
    return dict(w.split("=", 1) for w in words if "=" in w)


def _run_ok(command: str) -> list[str]:
    """The packages a RUN our sandbox can give installs: pip install of plain requirements
    (or -r requirements.txt: [] more), chmod; PipError, or ValueError for a build command."""
    packages: list[str] = []
    for part in parts(command):
        found = requirements_of(part)
        if found is not None:
            packages += found
        elif not part.startswith("chmod "):
            raise ValueError(part)
    return packages


def _copy_ok(args: str) -> bool:
    """COPY of the folder's own files into /benchmark (the folder is shown there)."""
    words = [w for w in _words(args) if not w.startswith("--chown") and w != "--link"]
    if len(words) < 2 or any(w.startswith("--") for w in words):
        return False  # --from=another stage, --chmod, ...
    *sources, dest = words
    inside = dest in (".", "./") or dest.rstrip("/") == WORKDIR or dest.startswith(WORKDIR + "/")
    local = all("://" not in s and not s.startswith("/") and ".." not in s for s in sources)
    return inside and local


def read_dockerfile(path: Path, shown: Path) -> DockerPlan:
    """The plan of evaluator/Dockerfile, or ProblemError (one line: the file, its line,
    the instruction and why our sandbox cannot give it)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ProblemError(f"{shown}: cannot read it: {e}") from None
    env: dict[str, str] = {}
    notes: list[str] = []
    base = None
    packages: list[str] = []
    for n, word, args in instructions(text):
        where = f"{shown}:{n}: {word} {args}"[:200]

        def refuse(why: str, where: str = where) -> ProblemError:
            return ProblemError(f"{where}: {why}")

        if word == "FROM":
            image = args.split()[0] if args else ""
            if base is not None:
                raise refuse("a second FROM (a multi-stage build) is not supported")
            if not _PYTHON_FROM.match(image):
                raise refuse(
                    "evolve evaluates in its own sandbox image (Python on Debian); "
                    "another base image is not supported"
                )
            base = image
            notes.append(f"{shown}: FROM {image}: the sandbox's own Python stands in for it")
        elif word == "WORKDIR":
            if args.rstrip("/") != WORKDIR:
                raise refuse(f"evaluate.sh runs in {WORKDIR}; another WORKDIR is not supported")
        elif word in ("COPY", "ADD"):
            if not _copy_ok(args):
                raise refuse(f"only a COPY of the folder's own files to {WORKDIR} is supported")
        elif word == "RUN":
            try:
                packages += _run_ok(args)
            except PipError as e:
                raise refuse(f"evolve layers plain requirements only: {e}") from None
            except ValueError:
                raise refuse(
                    "evolve's sandbox runs no build commands; only pip install of plain "
                    "requirements (layered on its image as any folder's) and chmod"
                ) from None
        elif word == "ENV":
            env.update(_env(args))
        elif word in ("ENTRYPOINT", "CMD"):
            words = _words(args)
            if not words or Path(words[0]).name != "evaluate.sh":
                raise refuse("evolve runs evaluate.sh PROGRAM MODE; another entry point is not")
        elif word not in NO_EFFECT:
            raise refuse("not supported by evolve's sandbox")
    return DockerPlan(
        env=env, packages=tuple(dict.fromkeys(packages)), base=base, notes=tuple(notes)
    )
