"""The import graph of evolve/, evaluators/ and prompts/, read from the source with `ast`,
and the checks of the rules tests/test_layout.py states: here so that bench/code_shape.py,
which measures checkouts with them, never imports tests/.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout (the package is installed editable)
PACKAGES = ("evolve", "evaluators", "prompts")
DISPLAY_LIBRARIES = ("rich", "matplotlib")
FRONT_ENDS = ("evolve.cli", "evolve.web", "evolve.export")
INSIDE = "evaluators.inside"
TEMPLATES = "evolve.prompt_templates"  # the prompt templates' package, as installed
INSTALLED_AS = {"prompts": TEMPLATES}  # a folder installed under another name (pyproject.toml)
STAND_IN = "evaluators.inside.openevolve_compat"  # the `openevolve` package, for evaluators
SHINKA_STAND_IN = "evaluators.inside.shinka_compat"  # the `shinka` package, for evaluators
GEPA_STAND_IN = "evaluators.inside.gepa_compat"  # the `gepa` package, for GEPA scripts
INSIDE_ALSO = {  # beyond the stdlib and the siblings
    "evaluators.inside.records": {"numpy"},
    "evaluators.inside.levi_score": {"levi_folder"},  # its sibling, by the name it runs under
    # the stand-in `gepa` package (gepa_compat/), which it puts on its own path first
    "evaluators.inside.gepa_score": {"gepa", "gepa.optimize_anything"},
    "evaluators.inside.gepa_serve": {"gepa_score"},  # its sibling, by the name it runs under
}


def front_end(mod: str) -> bool:
    return any(mod == f or mod.startswith(f + ".") for f in FRONT_ENDS)


def under(mod: str, package: str) -> bool:
    return mod == package or mod.startswith(package + ".")


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([INSTALLED_AS.get(parts[0], parts[0]), *parts[1:]])


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
        if not under(mod, "evolve") or front_end(mod) or under(mod, TEMPLATES):
            continue  # the templates: template_violations, stricter
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
    """'module -> what' for each import under prompts/ (evolve.prompt_templates) of anything
    but the standard library."""
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
