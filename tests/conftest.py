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
