"""Checks every problem with shipped data shares: the files, their sources, the download code."""

from __future__ import annotations

import contextlib
import functools
import http.server
import shutil
import threading
import tomllib
from pathlib import Path

import pytest

from evolve.problem.data import DataError, DataFile, data_dir_for, ensure, fetch, sha256_of


@contextlib.contextmanager
def serving(folder: Path):
    """An HTTP server on 127.0.0.1 serving `folder`; yields its base URL."""

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def data_files(problem: Path) -> list[DataFile]:
    return [DataFile(**d) for d in tomllib.loads((problem / "problem.toml").read_text())["data"]]


def check_shipped_data(problem: Path, count: int, folder: str) -> None:
    """The problem's data/ holds every declared file, verified, each named in SOURCES.md."""
    files = data_files(problem)
    assert len(files) == count
    assert all(
        f.url and f.url.startswith("https://raw.githubusercontent.com/skypilot-org/") for f in files
    )
    assert data_dir_for(problem) == problem / "data"
    ensure(files, problem / "data", download=False)  # the shipped copy matches every checksum
    sources = (problem / "data" / "SOURCES.md").read_text()
    for f in files:
        assert f.path.startswith(folder + "/") and f.url and f.url.endswith(f.path)
        assert f.path in sources and f.sha256 and f.sha256 in sources and f.url in sources


def check_download_round_trip(problem: Path, f: DataFile, tmp_path: Path) -> None:
    """evolve.problem.data's real download path against a local HTTP server holding a copy of `f`."""
    served = tmp_path / "served"
    (served / f.path).parent.mkdir(parents=True)
    shutil.copy(problem / "data" / f.path, served / f.path)
    dest = tmp_path / "data"
    with serving(served) as base:
        local = DataFile(f.path, f"{base}/{f.path}", f.sha256)
        ensure([local], dest)  # missing: downloaded, then verified
        assert sha256_of(dest / f.path) == f.sha256
        ensure([local], dest)  # present and verified: nothing to do
        assert fetch([local], dest) == [f"{f.path}: downloaded from {local.url}, SHA-256 verified"]
        raw = bytearray((served / f.path).read_bytes())
        raw[-3] = ord("1") if raw[-3] != ord("1") else ord("0")  # one sample flipped upstream
        (served / f.path).write_bytes(bytes(raw))
        with pytest.raises(DataError, match="does not match SHA-256"):
            fetch([local], dest)
        assert sha256_of(dest / f.path) == f.sha256  # the verified copy was kept
        with pytest.raises(DataError, match="does not match SHA-256"):
            ensure([local], tmp_path / "fresh")
        assert not (tmp_path / "fresh" / f.path).exists()  # no half or bad file left behind
        assert [p.name for p in (dest / f.path).parent.iterdir()] == [Path(f.path).name]
    (dest / f.path).write_bytes(bytes(raw))  # a local copy changed by hand
    with pytest.raises(DataError, match="SHA-256 mismatch"):
        ensure([local], dest, download=False)
