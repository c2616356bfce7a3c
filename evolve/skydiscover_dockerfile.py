"""What a SkyDiscover folder's evaluator/Dockerfile asks for, and whether our sandbox gives it.

SkyDiscover builds the Dockerfile and runs evaluate.sh in it. evolve runs evaluate.sh in
its own sandbox image (or on the host's Python, locally) instead, which gives: a Python
(FROM python:TAG: our Python stands in, whatever TAG's version), the folder's
requirements.txt installed (RUN pip install -r requirements.txt: layered on the Docker
image, checked locally, as any folder's requirements), ENV variables, WORKDIR /benchmark,
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

from evolve.problem_model import ProblemError

WORKDIR = "/benchmark"
NO_EFFECT = {"LABEL", "EXPOSE", "STOPSIGNAL", "MAINTAINER"}
_PYTHON_FROM = re.compile(r"^(?:docker\.io/)?(?:library/)?python(?::([\w.-]+))?(?:@\S+)?$")
_PIP = re.compile(r"^(?:pip3?|python3?\s+-m\s+pip)\s+install\s+(.*)$")


@dataclass(frozen=True)
class DockerPlan:
    """What the Dockerfile asks that our sandbox gives: its ENV and what to tell the user."""

    env: dict[str, str] = field(default_factory=dict)
    base: str | None = None  # FROM's image, as written
    notes: tuple[str, ...] = ()


def _instructions(text: str) -> list[tuple[int, str, str]]:
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


def _run_ok(command: str) -> bool:
    """A RUN our sandbox already does: pip install -r requirements.txt, or a chmod."""
    for part in re.split(r"\s*(?:&&|;)\s*", command.strip()):
        if not part:
            continue
        pip = _PIP.match(part)
        if pip:
            words = [w for w in shlex.split(pip.group(1)) if not w.startswith("--no-cache")]
            words = [w for w in words if w not in ("--upgrade", "-U", "-q", "--quiet")]
            if words not in (["-r", "requirements.txt"], ["-r", "./requirements.txt"]):
                return False
        elif not part.startswith("chmod "):
            return False
    return True


def _pip_packages(command: str) -> list[str]:
    """The packages a lone `pip install PKG ...` names (not a requirements file)."""
    pip = _PIP.match(command.strip())
    if pip is None or re.search(r"&&|;|\|", command):
        return []
    words = shlex.split(pip.group(1))
    if any(w.startswith("-") and not w.startswith("--no-cache") for w in words):
        return []
    return [w for w in words if not w.startswith("-")]


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
    for n, word, args in _instructions(text):
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
            packages = _pip_packages(args)
            if packages:
                raise refuse(
                    "evolve installs only evaluator/requirements.txt (as any folder's "
                    f"requirements): list {' '.join(packages)} there"
                )
            if not _run_ok(args):
                raise refuse(
                    "evolve's sandbox runs no build commands; only `pip install -r "
                    "requirements.txt` (installed as any folder's requirements) and chmod"
                )
        elif word == "ENV":
            env.update(_env(args))
        elif word in ("ENTRYPOINT", "CMD"):
            words = _words(args)
            if not words or Path(words[0]).name != "evaluate.sh":
                raise refuse("evolve runs evaluate.sh PROGRAM MODE; another entry point is not")
        elif word not in NO_EFFECT:
            raise refuse("not supported by evolve's sandbox")
    return DockerPlan(env=env, base=base, notes=tuple(notes))
