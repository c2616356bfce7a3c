"""Fixtures shared by several test modules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

# Modules that share something machine-wide run on one xdist worker, one after the other: a
# local Ray cluster (ray's fixed default ports for its client server and dashboard agent, and
# the nodes' bundle cache), and the bundled model's server (one llama.cpp process sized for the
# whole machine). Every module named test_*_ray starts Ray.
_SHARED = {"test_local_model": "llama"}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `pytest -n N` (the README's command) each module's tests run on one worker, in
    order, so a module-scoped fixture is built once. xdist's own `--dist loadgroup` would do
    this with marks, but pytest 9 ignores the node ids it rewrites."""
    from xdist.scheduler import LoadFileScheduling

    class ByModule(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = super()._split_scope(nodeid)  # xdist's own file of a node id
            stem = Path(path).stem
            return "ray" if stem.endswith("_ray") else _SHARED.get(stem, path)

    return ByModule(config, log)


# The tiers. What a test needs beyond Python is read off the fixtures it uses (or the value
# of a parametrised backend): each need is a marker, and plain `pytest` runs only the tests
# that need none, in a few minutes. `pytest --all` (the README's command, CI) runs every
# tier; naming files or a `-m` expression runs what it names.
_NEEDS = {
    "docker_image": "docker",  # tests/support/docker_support.py: the sandbox image
    "browser": "browser",  # tests/test_web_browser.py: Chromium through Playwright
    "wheel": "wheel",  # tests/test_wheel.py: a wheel built and installed in a venv
    "cpu_hog": "loaded",  # every core kept busy
    "web_archive": "slow",  # the session archives below, each made by scripted runs
    "search_archive": "slow",
    "bench": "slow",  # tests/test_bench_command.py: three benchmarks of scripted runs
    "bench_smoke": "slow",  # tests/test_bench_smoke.py: every bench/ script at its smallest
    "agent_runs": "slow",  # tests/test_agent_visible.py: three scripted runs of an agent
}
# A test that took longer than SLOW_S (setup, call and teardown, on two busy cores) when the
# whole suite last ran with --store-durations is in the slow tier: whole runs, kills and
# resumes. Measured, not listed by hand; a new test is fast until the next measurement.
DURATIONS = Path(__file__).with_name("durations.json")
SLOW_S = 1.0


TIERS = {
    "docker": "a Docker engine and the sandbox image (`evolve sandbox build`)",
    "ray": "a Ray cluster of two nodes on 127.0.0.1 (the `ray` extra)",
    "browser": "Debian's chromium, driven by Playwright",
    "wheel": "a wheel built and installed in a fresh venv",
    "loaded": "every core kept busy by a CPU hog",
    "slow": f"more than {SLOW_S:g} s in the last measurement (whole runs, kills, resumes)",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--all", action="store_true", dest="all_tiers",
        help="run every tier (" + ", ".join(TIERS) + "); plain `pytest` runs the fast one",
    )  # fmt: skip
    parser.addoption(
        "--store-durations", action="store_true",
        help=f"write each test's time to {DURATIONS.name} (with --all: the slow tier's measure)",
    )  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    for name, why in TIERS.items():
        config.addinivalue_line("markers", f"{name}: needs {why}")


def _needs(item: pytest.Item) -> set[str]:
    needs = {_NEEDS[f] for f in getattr(item, "fixturenames", ()) if f in _NEEDS}
    params = getattr(getattr(item, "callspec", None), "params", {})
    if any(isinstance(v, str) and v == "docker" for v in params.values()):
        needs.add("docker")  # a backend fixture parametrised over sandboxes
    if item.path.stem.endswith("_ray"):
        needs.add("ray")  # the rule _split_scope groups them by
    return needs


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    measured = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
    for item in items:
        for need in sorted(_needs(item)):
            item.add_marker(need)
        if measured.get(item.nodeid, 0.0) > SLOW_S:
            item.add_marker("slow")
    if _chosen(config):
        return
    heavy = [i for i in items if any(i.get_closest_marker(t) for t in TIERS)]
    if heavy:
        config.hook.pytest_deselected(items=heavy)
        items[:] = [i for i in items if not any(i.get_closest_marker(t) for t in TIERS)]


_TIMES: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _TIMES[report.nodeid] = _TIMES.get(report.nodeid, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    if config.option.store_durations and not hasattr(config, "workerinput"):  # xdist's controller
        # merged: a run of some tiers keeps the others' times (a fixture's cost moves to the
        # first test left in a tier that uses it, which the next measurement finds)
        times = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}
        times.update({k: round(v, 2) for k, v in _TIMES.items()})
        DURATIONS.write_text(json.dumps(dict(sorted(times.items())), indent=0) + "\n")


def _chosen(config: pytest.Config) -> bool:
    """--all, a -m expression or named files: the user chose, no tier is imposed."""
    return bool(config.option.all_tiers or config.option.markexpr or config.option.file_or_dir)


def pytest_report_header(config: pytest.Config) -> str | None:
    if _chosen(config):
        return None
    return (
        "tier: fast (no Docker, Ray, browser, wheel, CPU hog or slow test); --all runs every tier"
    )


@pytest.fixture
def cpu_hog() -> Iterator[None]:
    """Every core kept busy for the test's duration (two busy loops at least), as on a
    loaded machine: the races a quiet machine hides get the time to happen."""
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"], stdin=subprocess.DEVNULL)
        for _ in range(max(2, os.cpu_count() or 1))
    ]
    try:
        yield
    finally:
        for p in loops:
            p.kill()
            p.wait()


@pytest.fixture
def walkable_tmp() -> Iterator[Path]:
    """A temporary folder every uid may walk to: without namespaces the candidate's slot uid
    has no capability, so an evaluator that writes marks reaches them only through
    searchable parents, and pytest's own temp folder is 0700."""
    path = Path(tempfile.mkdtemp(prefix="evolve-test-", dir="/var/tmp"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class WebArchive:
    runs_dir: Path
    run_id: str  # a real run on binpack, driven by the scripted model
    hostile: dict[str, str]  # program ids whose every text tries to inject HTML


@pytest.fixture(scope="session")
def web_archive(tmp_path_factory) -> WebArchive:
    """One archive for the web view's tests (read-only: tests that write make their own)."""
    from evolve.testing.web_support import hostile_run, scripted_run

    runs = tmp_path_factory.mktemp("web") / "runs"
    run_id = scripted_run(runs)
    return WebArchive(runs, run_id, hostile_run(runs))


@dataclass
class SearchArchive:
    runs_dir: Path
    ids: dict[str, str]  # seed, failed (iteration 1), repair (2), improved (3)


@pytest.fixture(scope="session")
def search_archive(tmp_path_factory) -> SearchArchive:
    """An archive whose run records what the search did (evolve/testing/web_support.py: search_run)."""
    from evolve.testing.web_support import search_run

    runs = tmp_path_factory.mktemp("search") / "runs"
    return SearchArchive(runs, search_run(runs))
