"""The shape of the code, before and after a restructuring (issue 24's closing note).

    python bench/code_shape.py /tmp/tree_before . [--min-function-lines 80] [--largest 15]

A tree from a commit: `mkdir /tmp/tree_before && git archive 0750607 | tar -x -C /tmp/tree_before`.
A restructuring claims fewer tangles, smaller files and less repetition; this puts numbers
on the claim, the same way for each tree, so two trees compare side by side:
  1. the import graph of evolve/, evaluators/ and prompts/ (where present), one node a
     module, read with `ast` by evolve/testing/layout.py's import_graph (module-level, lazy
     function-level and TYPE_CHECKING imports all count; relative imports resolved): its
     cycles (strongly connected components of more than one module) and its arrows back up;
  2. the largest .py files under evolve/, evaluators/, problems/ and bench/;
  3. the functions and methods longer than --min-function-lines under evolve/ and evaluators/;
  4. the pairs the `duplicates` command (on PATH) finds in the tree, per top-level folder;
  5. the lines and files of tests/.
Prints a Markdown report; writes nothing.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from evolve.testing.layout import PACKAGES, import_graph, inside_violations, upward_imports  # noqa: E402

SIZED = ("evolve", "evaluators", "problems", "bench")  # where the largest files are looked for
LONG = ("evolve", "evaluators")  # where long functions are looked for
FOLDERS = ("evolve", "evaluators", "problems", "tests", "bench")  # duplicates, per folder
SKIP = {"__pycache__", "results", "site-packages", "node_modules"}  # besides dot folders
ROW = re.compile(r"^D\d+ (\S+?):\d+-\d+ ~ (\S+?):\d+-\d+")
BACK_UP = (
    "An arrow back up: a module under evaluators/ importing evolve, or a module under "
    "evaluators/inside/ importing anything but the standard library and evaluators.inside "
    "(the exceptions tests/test_layout.py names aside: numpy in inside/records.py, and the "
    "stand-in packages, `openevolve` and the like, importing themselves). A module importing "
    "a module of its own package or of a package above it in the same top-level package "
    "(evolve.cli.run -> evolve.pipeline.controller) is not one."
)


@dataclass
class Shape:
    """What one tree measures."""

    root: str
    modules: int = 0
    arrows: int = 0
    cycles: list[list[str]] = field(default_factory=list)
    back_up: list[str] = field(default_factory=list)
    largest: list[tuple[int, str]] = field(default_factory=list)
    long_functions: list[tuple[str, str, int]] = field(default_factory=list)  # place, name, lines
    duplicates: Counter[str] = field(default_factory=Counter)
    duplicates_note: str = ""
    test_lines: int = 0
    test_files: int = 0
    test_modules: int = 0  # test_*.py


def py_files(root: Path, folder: str) -> list[Path]:
    """The .py files under root/folder, past dot folders, caches and outputs."""
    return sorted(
        p
        for p in (root / folder).rglob("*.py")
        if not any(part.startswith(".") or part in SKIP for part in p.relative_to(root).parts[:-1])
    )


def lines(path: Path) -> int:
    return len(path.read_text(errors="replace").splitlines())


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module: the modules each
    reaches (a few hundred, so a walk from each is quick), grouped by mutual reach."""
    reach: dict[str, set[str]] = {}
    for m in edges:
        seen, todo = set(), list(edges[m])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(edges.get(n, ()))
        reach[m] = seen
    groups = {frozenset(n for n in reach[m] if m in reach[n]) | {m} for m in edges}
    return sorted(sorted(g) for g in groups if len(g) > 1)


def long_functions(root: Path, least: int) -> list[tuple[str, str, int]]:
    """(file:line, Class.name, lines) of each def, nested ones too, longer than `least` lines."""
    found = []
    for folder in LONG:
        for path in py_files(root, folder):
            rel = path.relative_to(root).as_posix()

            def visit(node: ast.AST, prefix: str, rel: str = rel) -> None:
                for child in ast.iter_child_nodes(node):
                    name = prefix
                    if isinstance(child, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                        name = f"{prefix}{child.name}"
                        if not isinstance(child, ast.ClassDef):
                            n = (child.end_lineno or child.lineno) - child.lineno + 1
                            if n > least:
                                found.append((f"{rel}:{child.lineno}", name, n))
                        name += "."
                    visit(child, name)

            visit(ast.parse(path.read_text(), str(path)), "")
    return sorted(found, key=lambda f: -f[2])


def count_duplicates(root: Path, shape: Shape) -> None:
    """Run `duplicates` over the tree; a pair counts once for each top-level folder it
    touches (within one folder: once; across two: once for each)."""
    if shutil.which("duplicates") is None:
        shape.duplicates_note = "`duplicates` is not on PATH"
        return
    out = subprocess.run(
        ["duplicates", "--repo", str(root), "--most", "200", "--seconds", "300"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    for line in out.splitlines():
        m = ROW.match(line)
        if m:
            tops = {p.split("/")[0] if "/" in p else "(top)" for p in m.groups()}
            shape.duplicates.update(tops)
            shape.duplicates["all pairs"] += 1
        elif line.strip():  # the count line, "(+N more pairs)", "left out:", "incomplete:"
            shape.duplicates_note += ("; " if shape.duplicates_note else "") + line.strip()


def measure(root: Path, label: str, least: int, largest: int) -> Shape:
    shape = Shape(label)
    packages = tuple(p for p in PACKAGES if (root / p).is_dir())
    edges, names = import_graph(root, packages)
    shape.modules, shape.arrows = len(edges), sum(len(e) for e in edges.values())
    shape.cycles = cycles(edges)
    shape.back_up = upward_imports(names) + inside_violations(names)
    sized = [(lines(p), p.relative_to(root).as_posix()) for f in SIZED for p in py_files(root, f)]
    shape.largest = sorted(sized, key=lambda s: (-s[0], s[1]))[:largest]
    shape.long_functions = long_functions(root, least)
    count_duplicates(root, shape)
    tests = py_files(root, "tests")
    shape.test_lines, shape.test_files = sum(lines(p) for p in tests), len(tests)
    shape.test_modules = sum(p.name.startswith("test_") for p in tests)
    return shape


def table(header: list[str], rows: list[list[object]]) -> str:
    out = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out)


def nth_largest(shape: Shape, i: int) -> str:
    return f"{shape.largest[i][0]} `{shape.largest[i][1]}`" if i < len(shape.largest) else "-"


def report(shapes: list[Shape], least: int, largest: int) -> str:
    cols = ["", *(f"`{s.root}`" for s in shapes)]
    summary: list[list[object]] = [
        ["modules in the import graph", *(s.modules for s in shapes)],
        ["import arrows between them", *(s.arrows for s in shapes)],
        ["import cycles (SCCs > 1)", *(len(s.cycles) for s in shapes)],
        ["modules in a cycle", *(sum(map(len, s.cycles)) for s in shapes)],
        ["arrows back up", *(len(s.back_up) for s in shapes)],
        ["largest .py file (lines)", *(nth_largest(s, 0) for s in shapes)],
        [f"functions over {least} lines", *(len(s.long_functions) for s in shapes)],
        *(
            [f"`duplicates` pairs: {f}", *(s.duplicates[f] for s in shapes)]
            for f in ("all pairs", *FOLDERS)
        ),
        ["tests/: lines of .py", *(s.test_lines for s in shapes)],
        ["tests/: .py files (test_*.py)", *(f"{s.test_files} ({s.test_modules})" for s in shapes)],
    ]
    parts = [
        "# Code shape",
        "",
        table(cols, summary),
        "",
        BACK_UP,
        "`duplicates` pairs: a pair counts once for each top-level folder it touches.",
    ]
    for s in shapes:
        if s.duplicates_note:
            parts.append(f"`duplicates` on `{s.root}`: {s.duplicates_note}")
    parts += ["", f"## The {largest} largest .py files (evolve, evaluators, problems, bench)", ""]
    parts.append(
        table(cols, [[i + 1, *(nth_largest(s, i) for s in shapes)] for i in range(largest)])
    )
    for s in shapes:
        parts += ["", f"## `{s.root}`", "", "Import cycles:"]
        parts += [f"- {' <-> '.join(c)}" for c in s.cycles] or ["- none"]
        parts += ["", "Arrows back up:"]
        parts += [f"- {a}" for a in s.back_up] or ["- none"]
        parts += ["", f"Functions over {least} lines (evolve, evaluators):"]
        parts += [f"- `{place}` {name}: {n}" for place, name, n in s.long_functions] or ["- none"]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+", help="source tree roots (each with evolve/)")
    parser.add_argument(
        "--min-function-lines", type=int, default=80, help="list defs longer than this"
    )
    parser.add_argument("--largest", type=int, default=15, help="how many of the largest files")
    args = parser.parse_args(argv)
    if args.min_function_lines < 1 or args.largest < 1:
        parser.error("--min-function-lines and --largest take a whole number of 1 or more")
    shapes = []
    for given in args.roots:
        root = Path(given)
        if not (root / "evolve").is_dir():
            print(f"code_shape: {given}: no evolve/ folder there; expected a source tree root")
            return 2
        try:
            shapes.append(measure(root.resolve(), given, args.min_function_lines, args.largest))
        except SyntaxError as e:
            print(f"code_shape: {e.filename}:{e.lineno}: not Python that parses ({e.msg})")
            return 2
    print(report(shapes, args.min_function_lines, args.largest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
