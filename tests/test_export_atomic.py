"""An export killed at any moment leaves nothing beside its target: the new table or report
is written into an unnamed file (O_TMPFILE) and renamed over the target once whole; where
unnamed files are not to be had, what a killed export left is removed by the next one.

Each kill is a real SIGKILL of a real process, sent by itself halfway through its write."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from evolve.export import atomic
from evolve.export.atomic import replacing
from evolve.testing.cli_helpers import ROOT, env
from tests.test_export_tables import export, runs  # noqa: F401 (a fixture)

HALF_THEN_KILL = """
import os, signal, sys
from pathlib import Path
from evolve.export import atomic
atomic.UNNAMED = sys.argv[2] == "unnamed"
with atomic.replacing(Path(sys.argv[1])) as f:
    f.write(b"x" * 2_000_000)  # 2 MB of a table, then killed before it is whole
    f.flush()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def _killed_midway(target: Path, mode: str) -> None:
    p = subprocess.run([sys.executable, "-c", HALF_THEN_KILL, str(target), mode],
                       cwd=ROOT, env=env(), capture_output=True, text=True, timeout=120)  # fmt: skip
    assert p.returncode == -signal.SIGKILL, p.stderr


def _unnamed_files_here(folder: Path) -> bool:
    try:
        os.close(os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600))
    except (OSError, AttributeError):
        return False
    return True


def test_a_kill_midway_leaves_nothing_beside_the_target(tmp_path):
    if not (atomic.UNNAMED and _unnamed_files_here(tmp_path)):
        pytest.skip("no O_TMPFILE on this file system: the next test covers the fallback")
    target = tmp_path / "programs.csv"
    target.write_text("the old table\n")
    _killed_midway(target, "unnamed")
    assert sorted(os.listdir(tmp_path)) == ["programs.csv"]
    assert target.read_text() == "the old table\n"
    _killed_midway(tmp_path / "new.csv", "unnamed")  # no target yet: none after either
    assert sorted(os.listdir(tmp_path)) == ["programs.csv"]


def test_without_unnamed_files_the_next_export_removes_what_a_kill_left(runs, tmp_path, capsys):  # noqa: F811
    out = tmp_path / "out" / "alpha.csv"
    out.parent.mkdir()
    _killed_midway(out, "named")
    left = os.listdir(out.parent)
    assert len(left) == 1 and left[0].startswith(".alpha.csv.") and left[0].endswith(".tmp")
    assert (out.parent / left[0]).stat().st_size == 2_000_000
    code, _, err = export(capsys, runs, "alpha-1", "--format", "csv", "--out", out)
    assert code == 0, err
    assert sorted(os.listdir(out.parent)) == ["alpha.csv", "alpha.llm_calls.csv"]
    assert len(pd.read_csv(out)) > 0


def test_a_failed_write_leaves_the_target_as_it_was_and_nothing_else(tmp_path):
    for unnamed in (True, False):
        target = tmp_path / "report.html"
        target.write_text("old")
        saved, atomic.UNNAMED = atomic.UNNAMED, unnamed and atomic.UNNAMED
        try:
            with pytest.raises(RuntimeError), replacing(target) as f:
                f.write(b"half")
                raise RuntimeError("disk full, say")
            with replacing(target) as f:
                f.write(b"new")
        finally:
            atomic.UNNAMED = saved
        assert os.listdir(tmp_path) == ["report.html"] and target.read_text() == "new"
