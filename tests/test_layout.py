"""The import arrows of evolve/, evaluators/ and prompts/, read from the source with `ast`.

1. No import cycle anywhere in the three packages together (function-level imports count
   too, and so do imports under `if TYPE_CHECKING:`: a lazy import is still an arrow).
2. The loop (evolve/ outside the front ends: evolve/cli/, the web view evolve/web/ and
   the exports evolve/export/) never imports a front end or a display library: the
   front ends drive or read the loop's work, never the other way round.
3. evaluators/inside/ (the code that runs inside a sandbox) imports only the standard
   library and its own siblings: the Docker image copies that folder alone, the local
   sandbox binds it alone, and a sandbox's interpreter has nothing else. Two exceptions,
   each named in INSIDE_ALSO: records.py imports numpy at first need (an array travels
   only where the problem imported numpy already), and the stand-in `openevolve`
   package (inside/openevolve_compat/), the stand-in `shinka` package
   (inside/shinka_compat/) and the stand-in `gepa` package with its `evolve` front
   (inside/gepa_compat/) import themselves under their own names.
4. Arrows between the two packages run one way, from the loop down to what runs
   candidates: nothing under evaluators/ imports evolve. They meet at the protocol,
   evaluators/sandbox.py (the request, the result, the Status vocabulary, the Sandbox
   interface) with evaluators/backends.py's make_sandbox, which the loop imports; the
   problem kit (`from evaluators import kit`) is the problems' side of it. So what the
   loop and a backend share lies in evaluators/ (the EVOLVE-BLOCK grammar the kit
   needs: evaluators/inside/markers.py), never in evolve/.
5. prompts/ (the prompt templates, a package so the wheel carries them) imports only the
   standard library: it is data the loop reads, so it can bring nothing into the loop, a
   front end or a display least of all.

Importing `evolve.a.b` also runs `evolve/a/__init__.py`; that implicit arrow is not
counted, only the imports a file writes.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("evolve", "evaluators", "prompts")
DISPLAY_LIBRARIES = ("rich", "matplotlib")
FRONT_ENDS = ("evolve.cli", "evolve.web", "evolve.export")
INSIDE = "evaluators.inside"
TEMPLATES = "prompts"  # the prompt templates' package
STAND_IN = "evaluators.inside.openevolve_compat"  # the `openevolve` package, for evaluators
SHINKA_STAND_IN = "evaluators.inside.shinka_compat"  # the `shinka` package, for evaluators
GEPA_STAND_IN = "evaluators.inside.gepa_compat"  # the `gepa` package, for GEPA scripts
INSIDE_ALSO = {  # beyond the stdlib and the siblings
    "evaluators.inside.records": {"numpy"},
    "evaluators.inside.levi_score": {"levi_folder"},  # its sibling, by the name it runs under
    # the stand-in `gepa` package (gepa_compat/), which it puts on its own path first
    "evaluators.inside.gepa_score": {"gepa", "gepa.optimize_anything"},
}


def front_end(mod: str) -> bool:
    return any(mod == f or mod.startswith(f + ".") for f in FRONT_ENDS)


def under(mod: str, package: str) -> bool:
    return mod == package or mod.startswith(package + ".")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(
    root: Path, packages: tuple[str, ...] = PACKAGES
) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> the packages' modules it imports, module -> every name it imports) for
    each .py file under root/package, for each of `packages`."""
    files = {
        module_name(p, root): p
        for package in packages
        for p in sorted((root / package).rglob("*.py"))
    }
    edges: dict[str, set[str]] = {m: set() for m in files}
    names: dict[str, set[str]] = {m: set() for m in files}

    def known(name: str) -> str | None:
        """The longest prefix of name that is one of the packages' modules."""
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            if ".".join(parts[:n]) in files:
                return ".".join(parts[:n])
        return None

    for mod, path in files.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the module's package, up level - 1
                    pkg = mod.split(".") if is_pkg else mod.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (node.level - 1)]
                    base = ".".join([*pkg, base] if base else pkg)
                # `from evolve.cli import run` imports the module evolve.cli.run
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names
                ]
            for t in targets:
                names[mod].add(t)
                k = known(t)
                if k is not None and k != mod:
                    edges[mod].add(k)
    return edges, names


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(edges.get(m, ())):
            if state.get(n) == 1:
                return path[path.index(n) :] + [n]
            if n not in state:
                found = visit(n)
                if found:
                    return found
        path.pop()
        state[m] = 2
        return None

    for m in sorted(edges):
        if m not in state:
            found = visit(m)
            if found:
                return found
    return None


def loop_violations(edges: dict[str, set[str]], names: dict[str, set[str]]) -> list[str]:
    """'module -> what' for each import of a front end or a display library by the loop."""
    out = []
    for mod in sorted(edges):
        if not under(mod, "evolve") or front_end(mod):
            continue
        for t in sorted(edges[mod]):
            if front_end(t):
                out.append(f"{mod} -> {t}")
        for t in sorted(names[mod]):
            if t.split(".")[0] in DISPLAY_LIBRARIES:
                out.append(f"{mod} -> {t}")
    return out


def inside_violations(names: dict[str, set[str]]) -> list[str]:
    """'module -> what' for each import under evaluators/inside/ of anything but the standard
    library, a sibling, or what INSIDE_ALSO allows."""
    out = []
    for mod in sorted(names):
        if not under(mod, INSIDE):
            continue
        allowed = INSIDE_ALSO.get(mod, set()) | ({"openevolve"} if under(mod, STAND_IN) else set())
        allowed |= {"shinka"} if under(mod, SHINKA_STAND_IN) else set()
        allowed |= {"gepa"} if under(mod, GEPA_STAND_IN) else set()
        for t in sorted(names[mod]):
            top = t.split(".")[0]
            if top in sys.stdlib_module_names or under(t, INSIDE) or top in allowed:
                continue
            out.append(f"{mod} -> {t}")
    return out


def template_violations(names: dict[str, set[str]]) -> list[str]:
    """'module -> what' for each import under prompts/ of anything but the standard library."""
    return [
        f"{mod} -> {t}"
        for mod in sorted(names)
        if under(mod, TEMPLATES)
        for t in sorted(names[mod])
        if t.split(".")[0] not in sys.stdlib_module_names
    ]


def upward_imports(names: dict[str, set[str]]) -> list[str]:
    """'module -> what' for each import of evolve by a module under evaluators/."""
    return [
        f"{mod} -> {t}"
        for mod in sorted(names)
        if under(mod, "evaluators")
        for t in sorted(names[mod])
        if under(t, "evolve")
    ]


def test_no_import_cycle_in_evolve_evaluators_and_prompts():
    edges, _ = import_graph(ROOT)
    # the walk found the three packages and the wings
    assert {
        "prompts",
        "evolve.controller",
        "evolve.cli.run",
        "evaluators.sandbox",
        "evaluators.inside.harness",
        "evaluators.local.sandbox",
        "evaluators.docker.sandbox",
        "evaluators.ray.node",
    } <= set(edges)
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_loop_never_imports_a_front_end_or_a_display():
    edges, names = import_graph(ROOT)
    assert loop_violations(edges, names) == []


def test_inside_imports_only_the_stdlib_and_its_siblings():
    _, names = import_graph(ROOT)
    assert inside_violations(names) == []


def test_the_templates_package_imports_only_the_stdlib():
    edges, names = import_graph(ROOT)
    assert "prompts" in edges["evolve.prompts"]  # the loop finds its templates by import
    assert template_violations(names) == []


def test_evaluators_never_import_evolve():
    _, names = import_graph(ROOT)
    assert upward_imports(names) == []


def test_only_tests_and_benchmarks_use_the_test_doubles():
    """evolve.testing (the scripted server, the toy problem) ships so bench/ need not import
    tests/; the packages themselves never lean on it, but for `evolve demo`, whose scripted
    run says that it is one."""
    edges, _ = import_graph(ROOT)
    users = sorted(m for m, to in edges.items() if not under(m, "evolve.testing")
                   and any(under(t, "evolve.testing") for t in to))  # fmt: skip
    assert users == ["evolve.cli.demo"]


# bench/ scripts that still import tests/ helpers not yet moved to evolve/testing/ (issue
# 40): the layout checks, the Ray loopback cluster, the multi-file edits, the web server.
# The list only shrinks; a new import of tests/ from bench/ fails.
KNOWN_BENCH_IMPORTS_OF_TESTS = [
    "bench/code_shape.py",
    "bench/ray_throughput.py",
    "bench/tree_backends.py",
    "bench/ui_render.py",
]


def test_bench_never_imports_tests():
    bench = sorted((ROOT / "bench").rglob("*.py"))
    assert bench
    offenders = [str(p.relative_to(ROOT)) for p in bench
                 if re.search(r"^\s*(from tests[ .]|import tests\b)", p.read_text(), re.M)]  # fmt: skip
    assert offenders == KNOWN_BENCH_IMPORTS_OF_TESTS


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The same checks on small packages that break every rule."""
    files = {
        "evolve/__init__.py": "",
        "evolve/controller.py": "from evolve.cli.progress import RunProgress\n",
        "evolve/llm/__init__.py": "",
        "evolve/llm/client.py": "def f():\n    import rich.console\n",
        "evolve/population.py": "from evolve.web import charts\n",
        "evolve/web/__init__.py": "",
        "evolve/web/charts.py": "import evolve.population\nimport matplotlib\n",
        "evolve/cli/__init__.py": "def main():\n    from evolve.cli import run\n",
        "evolve/cli/run.py": "from . import main\nimport evolve.controller\n",
        "evolve/cli/progress.py": "import rich\n",
        "prompts/__init__.py": "from pathlib import Path\nfrom evolve.cli import main\nimport rich\n",
        "evaluators/__init__.py": "",
        "evaluators/sandbox.py": "",
        "evaluators/inside/__init__.py": "",
        "evaluators/inside/harness.py": "import os, json\nfrom evaluators.inside import kit\n",
        "evaluators/inside/kit.py": "from . import records\nimport numpy\n",
        "evaluators/inside/records.py": "def f():\n    import numpy\n",
        "evaluators/inside/openevolve_compat/openevolve/__init__.py": "from openevolve.utils import x\n",
        "evaluators/inside/worker.py": "from evaluators import sandbox\nimport psutil\n",
        "evaluators/local/__init__.py": "",
        "evaluators/local/sandbox.py": "from evaluators.ray import node\nimport psutil\n",
        "evaluators/ray/__init__.py": "",
        "evaluators/ray/node.py": "def make():\n    from evolve.controller import Controller\n",
        "evaluators/ray/sandbox.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evolve.problem import Problem\n"
            "from evaluators.ray import node\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges, names = import_graph(tmp_path)
    assert edges["evolve.cli.run"] == {"evolve.cli", "evolve.controller"}
    assert find_cycle(edges) == ["evolve.cli", "evolve.cli.run", "evolve.cli"]
    assert loop_violations(edges, names) == [
        "evolve.controller -> evolve.cli.progress",
        "evolve.llm.client -> rich.console",
        "evolve.population -> evolve.web.charts",
    ]
    assert inside_violations(names) == [
        "evaluators.inside.kit -> numpy",
        "evaluators.inside.worker -> evaluators.sandbox",
        "evaluators.inside.worker -> psutil",
    ]
    assert template_violations(names) == ["prompts -> evolve.cli", "prompts -> rich"]
    assert upward_imports(names) == [
        "evaluators.ray.node -> evolve.controller",
        "evaluators.ray.sandbox -> evolve.problem",
    ]


def test_a_planted_cycle_across_the_packages_is_found(tmp_path):
    """A cycle through both packages and a lazy import, as the two this test first caught
    (docker_sandbox <-> leftovers; ray_node -> evolve.sandboxes -> ray_sandbox -> ray_node)."""
    files = {
        "evolve/__init__.py": "",
        "evolve/sandboxes.py": "def make():\n    from evaluators.ray.sandbox import RaySandbox\n",
        "evaluators/__init__.py": "",
        "evaluators/ray/__init__.py": "",
        "evaluators/ray/sandbox.py": "from evaluators.ray.node import run\n",
        "evaluators/ray/node.py": "def run():\n    from evolve.sandboxes import make\n",
        "evaluators/local/__init__.py": "",
        "evaluators/local/leftovers.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges, _ = import_graph(tmp_path)
    assert find_cycle(edges) == [
        "evaluators.ray.node",
        "evolve.sandboxes",
        "evaluators.ray.sandbox",
        "evaluators.ray.node",
    ]
    (tmp_path / "evaluators/ray/node.py").write_text("def run():\n    pass\n")  # the arrow gone
    assert find_cycle(import_graph(tmp_path)[0]) is None


def test_the_image_carries_every_module_the_harness_needs():
    """The harness, the kit and the worker run in the container from /opt/evolve: every
    evaluators module they import (transitively) lies in evaluators/inside/, which both
    Dockerfiles copy whole (and image.py hashes into the tag). A module missing there fails
    only inside Docker."""
    from evaluators.docker.image import DOCKER_DIR, sandbox_files
    from evaluators.docker.image import INSIDE as INSIDE_DIR

    edges, _ = import_graph(ROOT)
    needed, todo = set(), [f"{INSIDE}.{m}" for m in ("harness", "kit", "worker")]
    while todo:
        m = todo.pop()
        if m not in needed:
            needed.add(m)
            todo.extend(edges[m])
    assert all(under(m, INSIDE) for m in needed), sorted(needed)
    carried = {
        module_name(p, INSIDE_DIR.parent.parent) for p in sandbox_files() if p.suffix == ".py"
    }
    assert needed <= carried, sorted(needed - carried)
    for dockerfile in ("Dockerfile", "Dockerfile.layer"):
        copy = next(
            line
            for line in (DOCKER_DIR / dockerfile).read_text().splitlines()
            if line.startswith("COPY") and "agent.py" in line
        )
        assert copy.split()[1:] == ["inside/", "docker/agent.py", "/opt/evolve/"], dockerfile
