"""The import arrows inside evolve/, read from the source with `ast`.

1. No import cycle among evolve's modules (function-level imports count too: a
   lazy import is still an arrow).
2. The loop (evolve/ outside the front ends: evolve/cli/, the web view evolve/web/ and
   the exports evolve/export/) never imports a front end or a display library: the
   front ends drive or read the loop's work, never the other way round.

Importing `evolve.a.b` also runs `evolve/a/__init__.py`; that implicit arrow is not
counted, only the imports a file writes.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DISPLAY_LIBRARIES = ("rich", "matplotlib")
FRONT_ENDS = ("evolve.cli", "evolve.web", "evolve.export")


def front_end(mod: str) -> bool:
    return any(mod == f or mod.startswith(f + ".") for f in FRONT_ENDS)


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(root: Path, package: str = "evolve") -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module -> the package's modules it imports, module -> every name it imports) for
    each .py file under root/package."""
    files = {module_name(p, root): p for p in sorted((root / package).rglob("*.py"))}
    edges: dict[str, set[str]] = {m: set() for m in files}
    names: dict[str, set[str]] = {m: set() for m in files}

    def known(name: str) -> str | None:
        """The longest prefix of name that is one of the package's modules."""
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
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in files else base for a in node.names]
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
                return path[path.index(n):] + [n]
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
    """'module -> what' for each import of a front end or a display library outside them."""
    out = []
    for mod in sorted(edges):
        if front_end(mod):
            continue
        for t in sorted(edges[mod]):
            if front_end(t):
                out.append(f"{mod} -> {t}")
        for t in sorted(names[mod]):
            if t.split(".")[0] in DISPLAY_LIBRARIES:
                out.append(f"{mod} -> {t}")
    return out


def test_evolve_has_no_import_cycle():
    edges, _ = import_graph(ROOT)
    assert "evolve.controller" in edges and "evolve.cli.run" in edges  # the walk found the package
    cycle = find_cycle(edges)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_loop_never_imports_a_front_end_or_a_display():
    edges, names = import_graph(ROOT)
    assert loop_violations(edges, names) == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The same checks on a small package that breaks both rules."""
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
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges, names = import_graph(tmp_path)
    assert edges["evolve.cli.run"] == {"evolve.cli", "evolve.controller"}
    assert find_cycle(edges) == ["evolve.cli", "evolve.cli.run", "evolve.cli"]
    assert loop_violations(edges, names) == ["evolve.controller -> evolve.cli.progress",
                                             "evolve.llm.client -> rich.console",
                                             "evolve.population -> evolve.web.charts"]


def test_the_image_carries_every_module_the_harness_needs():
    """The harness, the kit and the worker run in the container from /opt/evolve: every
    evaluators module they import (transitively) is in SANDBOX_FILES, which both Dockerfiles
    copy. A module missing there fails only inside Docker."""
    from evaluators.image import DOCKER_DIR, SANDBOX_FILES

    edges, _ = import_graph(ROOT, "evaluators")
    needed, todo = set(), ["evaluators.harness", "evaluators.kit", "evaluators.worker"]
    while todo:
        m = todo.pop()
        if m not in needed:
            needed.add(m)
            todo.extend(edges[m])
    carried = {f"evaluators.{f.removesuffix('.py')}" for f in SANDBOX_FILES}
    assert needed <= carried, sorted(needed - carried)
    for dockerfile in ("Dockerfile", "Dockerfile.layer"):
        copy = next(
            line for line in (DOCKER_DIR / dockerfile).read_text().splitlines()
            if line.startswith("COPY") and "agent.py" in line
        )
        assert set(copy.split()[1:-1]) == {*SANDBOX_FILES, "docker/agent.py"}, dockerfile
