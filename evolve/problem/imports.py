"""Modules a problem folder's code imports that the sandbox running it lacks: `evolve check`
names each, with the line that installs it, before a run fails on an ImportError.

Best effort, from the source (ast, nothing imported): the top-level imports of the seed,
the evaluator, the folder's own modules they reach and the files the problem includes.
Never reported: the standard library, the folder's own modules, what the sandbox itself
provides (the problem kit, the stand-in `openevolve` package), and imports guarded by
`try: ... except ImportError`, which the code expects to fail. The local sandbox runs
this very interpreter; the Docker sandbox runs its image, asked once which of the
names it can import (its problem layer included, so requirements.txt counts).
"""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

import evaluators.inside
from evaluators.sandbox import Sandbox
from evolve.problem.model import Problem

INSIDE = Path(evaluators.inside.__file__).resolve().parent  # the stand-in packages lie here
# import name -> the distribution that provides it, where the two differ
DISTRIBUTIONS = {
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "PIL": "pillow",
    "yaml": "pyyaml",
    "cv2": "opencv-python-headless",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "attr": "attrs",
    "Crypto": "pycryptodome",
    "google": "protobuf",
    "ortools": "ortools",
    "gurobipy": "gurobipy",
}
# what a Docker problem layer cannot simply add (it installs wheels only, offline inside)
DOCKER_NOTES = {
    "pyspark": "PyPI has pyspark as an sdist only and the layer installs wheels only: build "
    "one beside requirements.txt (pip wheel --no-deps pyspark -w .) and name its file there "
    "instead; pyspark also needs a Java runtime (default-jre-headless in "
    "evaluators/docker/packages.txt, which rebuilds the base image)",
    "torch": "PyPI's torch wheels pull several GB of NVIDIA CUDA libraries the sandbox cannot "
    "use: put the line `--extra-index-url https://download.pytorch.org/whl/cpu` above torch "
    "for the CPU-only build",
}
_GUARDS = {"ImportError", "ModuleNotFoundError", "Exception", "BaseException"}
_ASK = """\
import importlib.util, json, sys
print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))
"""


@dataclass(frozen=True)
class MissingModule:
    """A top-level module the folder's code imports and the sandbox cannot import."""

    module: str
    files: tuple[str, ...]  # the files (relative to the folder) that import it
    distribution: str  # what to install


def imported_modules(tree: ast.AST) -> set[str]:
    """Top-level names of the absolute imports in `tree`, less those an `except ImportError`
    guards (optional dependencies)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_guards(h) for h in node.handlers):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _guards(handler: ast.ExceptHandler) -> bool:
    t = handler.type
    if t is None:
        return True
    types = t.elts if isinstance(t, ast.Tuple) else [t]
    return any(isinstance(x, ast.Name) and x.id in _GUARDS for x in types)


def local_modules(folder: Path) -> set[str]:
    """What `import NAME` finds in the folder itself: its modules and packages."""
    names = {p.stem for p in folder.glob("*.py")}
    names |= {p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    return names


def provided() -> set[str]:
    """What every sandbox puts on the evaluator's path: the kit and the stand-in packages."""
    names = {"evaluators"}
    for compat in INSIDE.glob("*_compat"):
        names |= local_modules(compat)
    return names


def folder_imports(problem: Problem) -> dict[str, list[str]]:
    """{module: files importing it} for the seed, the evaluator, the folder's modules they
    reach and the included files; files that do not parse (other languages) add nothing."""
    root = problem.root
    local = local_modules(root) | {p.stem for p in problem.include}
    local |= {Path(f).parts[0].removesuffix(".py") for f in problem.files}  # a tree's own
    seed = [problem.seed_file / f for f in problem.files] or [problem.seed_file]
    # evaluator.py (native, OpenEvolve) or evaluate.py (ShinkaEvolve): whichever is there
    todo = [*seed, root / "evaluator.py", root / "evaluate.py", *problem.include]
    seen: set[Path] = set()
    found: dict[str, list[str]] = {}
    while todo:
        path = todo.pop(0).resolve()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"))
        except (SyntaxError, ValueError):
            continue
        shown = path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path)
        for name in sorted(imported_modules(tree)):
            if name in local:
                todo += [root / f"{name}.py", root / name / "__init__.py"]
            else:
                found.setdefault(name, []).append(shown)
    return found


def candidates(problem: Problem) -> dict[str, list[str]]:
    """The imports a sandbox may lack: not stdlib, not the folder's, not provided."""
    skip = set(sys.stdlib_module_names) | set(sys.builtin_module_names) | provided()
    return {m: f for m, f in folder_imports(problem).items() if m not in skip}


def _missing(found: dict[str, list[str]], absent: Iterable[str]) -> list[MissingModule]:
    return [MissingModule(m, tuple(found[m]), DISTRIBUTIONS.get(m, m)) for m in sorted(absent)]


def missing_here(problem: Problem) -> list[MissingModule]:
    """The local sandbox's view: what this interpreter cannot import."""
    found = candidates(problem)
    return _missing(found, [m for m in found if importlib.util.find_spec(m) is None])


def missing_in_image(problem: Problem, client, image: str) -> list[MissingModule]:
    """The Docker sandbox's view: what `image` cannot import (one container, offline)."""
    found = candidates(problem)
    if not found:
        return []
    out = client.containers.run(
        image,
        ["python3", "-s", "-I", "-c", _ASK, *sorted(found)],
        network_mode="none",
        remove=True,
        user="10001:10001",
        read_only=True,
    )
    return _missing(found, json.loads(out))


def _declared(root: Path) -> set[str]:
    """The canonical names requirements.txt lists."""
    from evaluators.docker.image_layers import REQUIREMENTS, requirement_lines

    path = root / REQUIREMENTS
    return set(requirement_lines(path)[0]) if path.is_file() else set()


def missing_lines(problem: Problem, sandbox: Sandbox) -> list[str]:
    """`evolve check`'s warnings for the sandbox it uses (local or Docker; [] for others)."""
    from evaluators.docker.sandbox import DockerSandbox

    sandbox = getattr(sandbox, "inner", sandbox)  # a GEPA script's workers: their backend
    if sandbox.name == "local":
        declared = _declared(problem.root)  # missing ones: the requirements.txt warning says so
        return [
            f"  warning: {m.module} (imported by {', '.join(m.files)}) is not installed for the "
            f"local sandbox ({sys.executable}): pip install {m.distribution}"
            for m in missing_here(problem)
            if canonicalize_name(m.distribution) not in declared
        ]
    if not isinstance(sandbox, DockerSandbox) or sandbox.image is None:
        return []
    image = sandbox.image
    try:
        missing = missing_in_image(problem, sandbox.client, image)
    except Exception as e:  # the check's own question failed: say so, score the seed anyway
        return [f"  warning: could not ask {image} which imports it lacks: {e}"]
    return docker_lines(problem, missing, image)


def docker_lines(problem: Problem, missing: list[MissingModule], image: str) -> list[str]:
    """One warning per module the image lacks: the requirements.txt line that layers it on
    the image, and what stands in the way where something does (no wheel, CUDA's size)."""
    requirements = problem.root / "requirements.txt"
    lines = []
    for m in missing:
        line = (
            f"  warning: {m.module} (imported by {', '.join(m.files)}) is not in the sandbox "
            f"image {image}: add a line `{m.distribution}` to {requirements} "
            "(the Docker sandbox layers it on the image)"
        )
        note = DOCKER_NOTES.get(m.distribution)
        lines.append(line + (f"; {note}" if note else ""))
    return lines
