"""The runs folder and the archive are private to their owner: folder 0700, files 0600.

archive.db holds every run's data seed, held-out scores and prompts; a candidate running
as another uid (the local fallback's slot uids), or any other user, must not read it.
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path

from evolve.archive.readonly import ReadOnlyArchive
from evolve.archive.store import Archive


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def _everything(runs: Path) -> dict[str, int]:
    found = {".": _mode(runs)}
    for path in runs.rglob("*"):
        found[str(path.relative_to(runs))] = _mode(path)
    return found


def test_a_new_runs_folder_its_archive_wal_and_locks_are_private(tmp_path):
    old = os.umask(0o022)  # the usual umask: 0755 folders and 0644 files by default
    try:
        runs = tmp_path / "a" / "runs"
        archive = Archive(runs)
        archive.create_run("r1", "toy", str(tmp_path), {"x": 1}, target=3, data_seed=7)
        lease = archive.claim("r1")
        try:
            modes = _everything(runs)
        finally:
            lease.release()
            archive.close()
    finally:
        os.umask(old)
    assert {"archive.db", "archive.db-wal", "archive.db-shm", ".locks"} <= set(modes)
    assert any(name.endswith(".lock") for name in modes)
    for name, mode in modes.items():
        want = 0o700 if (runs / name).is_dir() else 0o600
        assert mode == want, f"{name}: {mode:04o}, expected {want:04o}"


def test_an_older_archive_left_readable_is_tightened_when_opened(tmp_path):
    runs = tmp_path / "runs"
    (runs / ".locks").mkdir(parents=True)
    db = sqlite3.connect(runs / "archive.db")
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.close()
    (runs / ".locks" / "old.lock").write_text("")
    for path in (runs, runs / ".locks"):
        path.chmod(0o755)
    for path in (runs / "archive.db", runs / ".locks" / "old.lock"):
        path.chmod(0o644)
    ReadOnlyArchive(runs)  # a reader tightens too (it changes no content)
    assert (_mode(runs), _mode(runs / "archive.db")) == (0o700, 0o600)
    archive = Archive(runs)
    lease = archive.claim("old")
    lease.release()
    archive.close()
    for name, mode in _everything(runs).items():
        want = 0o700 if (runs / name).is_dir() else 0o600
        assert mode == want, f"{name}: {mode:04o}, expected {want:04o}"
