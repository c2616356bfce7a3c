"""Fixtures shared by several test modules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass
class WebArchive:
    runs_dir: Path
    run_id: str  # a real run on binpack, driven by the scripted model
    hostile: dict[str, str]  # program ids whose every text tries to inject HTML


@pytest.fixture(scope="session")
def web_archive(tmp_path_factory) -> WebArchive:
    """One archive for the web view's tests (read-only: tests that write make their own)."""
    from tests.web_support import hostile_run, scripted_run

    runs = tmp_path_factory.mktemp("web") / "runs"
    run_id = scripted_run(runs)
    return WebArchive(runs, run_id, hostile_run(runs))


@dataclass
class SearchArchive:
    runs_dir: Path
    ids: dict[str, str]  # seed, failed (iteration 1), repair (2), improved (3)


@pytest.fixture(scope="session")
def search_archive(tmp_path_factory) -> SearchArchive:
    """An archive whose run records what the search did (tests/web_support.search_run)."""
    from tests.web_support import search_run

    runs = tmp_path_factory.mktemp("search") / "runs"
    return SearchArchive(runs, search_run(runs))
