"""The import arrows of evolve/, evaluators/ and prompts/, read from the source with `ast`
(evolve/testing/layout.py: the graph and the checks, shared with bench/code_shape.py).

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
5. prompts/ (the prompt templates, a package so the wheel carries them; installed as
   evolve.prompt_templates, the name the loop imports and the graph gives it) imports only the
   standard library: it is data the loop reads, so it can bring nothing into the loop, a
   front end or a display least of all.

6. The archive (evolve/archive/) and the LLM layer (evolve/llm/) import no sandbox backend
   (evaluators/local/, docker/, ray/): the locks and the liveness checks they share with
   the backends lie at the root of evaluators/.
7. bench/ never imports tests/ (nor loads one of its modules by path): what both use lies
   in evolve/testing/.
8. Only the cross-cutting modules named in TOP_LEVEL lie loose at the top of evolve/: the
   run pipeline is evolve/pipeline/, what reads a problem folder evolve/problem/, the
   population and the prompts evolve/search/. pyproject.toml names every package.

Importing `evolve.a.b` also runs `evolve/a/__init__.py`; that implicit arrow is not
counted, only the imports a file writes.
"""

from __future__ import annotations

import re

from evolve.testing.layout import (
    INSIDE,
    ROOT,
    TEMPLATES,
    find_cycle,
    import_graph,
    inside_violations,
    loop_violations,
    module_name,
    template_violations,
    under,
    upward_imports,
)


def test_no_import_cycle_in_evolve_evaluators_and_prompts():
    edges, _ = import_graph(ROOT)
    # the walk found the three packages and the wings
    assert {
        "evolve.prompt_templates",
        "evolve.pipeline.controller",
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
    assert TEMPLATES in edges["evolve.search.prompts"]  # the loop finds its templates by import
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


BACKENDS = ("evaluators.local", "evaluators.docker", "evaluators.ray")  # the sandbox backends
NO_BACKEND = ("evolve.archive", "evolve.llm")  # what they serve never depends on one


def backend_imports(edges: dict[str, set[str]]) -> list[str]:
    """'module -> what' for each import of a sandbox backend by the archive or the LLM layer:
    what they share with one (locks, liveness) lies at the root of evaluators/."""
    return [
        f"{mod} -> {t}"
        for mod in sorted(edges)
        if any(under(mod, p) for p in NO_BACKEND)
        for t in sorted(edges[mod])
        if any(under(t, b) for b in BACKENDS)
    ]


def test_the_archive_and_the_llm_layer_import_no_sandbox_backend():
    edges, _ = import_graph(ROOT)
    assert {"evolve.archive.lease", "evolve.llm.local_model", "evaluators.locks"} <= set(edges)
    assert backend_imports(edges) == []


# What may stay loose at the top of evolve/: the package's API, and what the front ends,
# the pipeline and the archive's readers all share. The run pipeline lies in
# evolve/pipeline/, what reads a problem folder in evolve/problem/, the population and
# the prompts in evolve/search/.
TOP_LEVEL = {
    "evolve",  # __init__.py: the public API, imported on first use
    "evolve.answers",  # a program as plain data (the CLI's --json and evolve.best)
    "evolve.cache",  # where evolve keeps what it can make again
    "evolve.inert",  # candidate text made inert for terminals, prompts and exports
    "evolve.program_files",  # a program's files as the views show them
    "evolve.reading",  # evolve.runs, evolve.best, evolve.program
}


def test_only_the_cross_cutting_modules_lie_at_the_top_of_evolve():
    edges, _ = import_graph(ROOT)
    top = {m for m in edges if under(m, "evolve") and m.count(".") <= 1 and m != TEMPLATES
           and not (ROOT / m.replace(".", "/")).is_dir() or m == "evolve"}  # fmt: skip
    assert top == TOP_LEVEL


def test_bench_never_imports_tests():
    """What bench/ shares with the tests lives in evolve/testing/: no bench script imports
    tests/, or loads one of its modules by path."""
    bench = sorted((ROOT / "bench").rglob("*.py"))
    assert bench
    offenders = [str(p.relative_to(ROOT)) for p in bench
                 if re.search(r"^\s*(from tests[ .]|import tests\b)", p.read_text(), re.M)
                 or re.search(r"[\"']tests[\"']\s*/\s*[\"']\w+\.py[\"']|[\"']tests/\w+\.py[\"']",
                              p.read_text())]  # fmt: skip
    assert offenders == []


def test_the_checks_catch_what_they_are_for(tmp_path):
    """The same checks on small packages that break every rule."""
    files = {
        "evolve/__init__.py": "",
        "evolve/pipeline/controller.py": "from evolve.cli.progress import RunProgress\n",
        "evolve/llm/__init__.py": "",
        "evolve/llm/client.py": "def f():\n    import rich.console\n",
        "evolve/search/population.py": "from evolve.web import charts\n",
        "evolve/web/__init__.py": "",
        "evolve/web/charts.py": "import evolve.search.population\nimport matplotlib\n",
        "evolve/cli/__init__.py": "def main():\n    from evolve.cli import run\n",
        "evolve/cli/run.py": "from . import main\nimport evolve.pipeline.controller\n",
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
        "evaluators/ray/node.py": "def make():\n    from evolve.pipeline.controller import Controller\n",
        "evaluators/ray/sandbox.py": (
            "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from evolve.problem.load import Problem\n"
            "from evaluators.ray import node\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    edges, names = import_graph(tmp_path)
    assert edges["evolve.cli.run"] == {"evolve.cli", "evolve.pipeline.controller"}
    assert find_cycle(edges) == ["evolve.cli", "evolve.cli.run", "evolve.cli"]
    assert loop_violations(edges, names) == [
        "evolve.llm.client -> rich.console",
        "evolve.pipeline.controller -> evolve.cli.progress",
        "evolve.search.population -> evolve.web.charts",
    ]
    assert inside_violations(names) == [
        "evaluators.inside.kit -> numpy",
        "evaluators.inside.worker -> evaluators.sandbox",
        "evaluators.inside.worker -> psutil",
    ]
    assert template_violations(names) == [
        "evolve.prompt_templates -> evolve.cli",
        "evolve.prompt_templates -> rich",
    ]
    assert upward_imports(names) == [
        "evaluators.ray.node -> evolve.pipeline.controller",
        "evaluators.ray.sandbox -> evolve.problem.load",
    ]
    assert backend_imports(edges) == []
    (tmp_path / "evolve/llm/client.py").write_text("from evaluators.local import locks\n")
    (tmp_path / "evaluators/local/locks.py").write_text("")
    assert backend_imports(import_graph(tmp_path)[0]) == [
        "evolve.llm.client -> evaluators.local.locks"
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


def test_the_package_list_names_every_package():
    """pyproject.toml names its packages (a find cannot install prompts/ under another name):
    each folder under evolve/ and evaluators/ that a find would install is there, and the
    templates are evolve.prompt_templates, never a top-level `prompts`."""
    import tomllib

    from setuptools import find_namespace_packages

    setup = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = find_namespace_packages(str(ROOT), include=["evolve*", "evaluators*"])
    assert sorted(setup["packages"]) == sorted([*found, TEMPLATES])
    assert setup["package-dir"] == {TEMPLATES: "prompts"}
