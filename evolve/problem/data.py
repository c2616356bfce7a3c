"""Workload data: a problem's own data/ folder, verified, and refreshed from its source.

Problems ship their files in `<problem>/data/` and declare each in problem.toml
(`[[data]]` with path, url, sha256). The trusted controller checks them before
any evaluation (downloading a missing one that has a url) and hands the folder
to the sandbox as EVOLVE_DATA_DIR; candidates and evaluators never need the
network. `evolve data fetch` downloads them again on purpose; a problem's fetch_data.py
does the same with `fetch_verified` and `fetch_main`, optionally from a mirror (BASE/<path>).
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tempfile
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

DATA_ENV = "EVOLVE_DATA_DIR"


class DataError(ValueError):
    """A data file is missing, unreachable or corrupt; the message names it."""


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the data directory
    url: str | None = None
    sha256: str | None = None
    splits: tuple[str, ...] = ()  # the splits that may read it; () = every split


def data_dir_for(problem_root: Path) -> Path:
    """$EVOLVE_DATA_DIR (a folder laid out like the problem's data/), else <problem>/data."""
    env = os.environ.get(DATA_ENV)
    if env:
        return Path(env).expanduser().resolve()
    return problem_root / "data"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ensure(
    files: list[DataFile], data_dir: Path, download: bool = True, timeout_s: float = 60.0
) -> None:
    """Make every file present and verified, downloading what is missing."""
    for f in files:
        target = data_dir / f.path
        if not target.is_file():
            if not (download and f.url):
                how = "it has no url to download it from" if not f.url else "downloads are off"
                raise DataError(
                    f"{target}: missing data file ({how}; ${DATA_ENV} may point elsewhere)"
                )
            _download(f, target, timeout_s)
        if f.sha256 and (got := sha256_of(target)) != f.sha256.lower():
            back = "`evolve data fetch` downloads the original again" if f.url else "restore it"
            raise DataError(
                f"{target}: SHA-256 mismatch: the file has {got}, problem.toml's [[data]] "
                f'path = "{f.path}" expects {f.sha256}; replaced on purpose? set sha256 = '
                f'"{got}" there (or remove that line); else {back}'
            )


def fetch(files: list[DataFile], data_dir: Path, timeout_s: float = 60.0) -> list[str]:
    """Download every file that has a url again, verified, replacing the local copy only
    when the new one matches its SHA-256; returns one line per file saying what happened."""
    done = []
    for f in files:
        if not f.url:
            done.append(f"{f.path}: kept (no url; its SOURCES.md says how it was derived)")
            continue
        _download(f, data_dir / f.path, timeout_s)
        done.append(f"{f.path}: downloaded from {f.url}, SHA-256 verified")
    return done


def mirror_source(f: DataFile, base: str | None) -> str:
    """Where to read one file: its url; or, given a mirror, BASE/<path> (BASE a folder, or a
    URL: https://, file:// included)."""
    if base is None:
        if not f.url:
            raise DataError(f"{f.path}: no url to download it from (a mirror BASE may hold it)")
        return f.url
    if os.path.isdir(base):
        return os.path.join(base, f.path)
    return base.rstrip("/") + "/" + f.path


def fetch_verified(
    files: list[DataFile],
    data_dir: Path,
    base: str | None = None,
    *,
    source: Callable[[DataFile, str | None], str] = mirror_source,
    timeout_s: float = 60.0,
) -> list[Path]:
    """Read every file from `source(file, base)` (its url, or BASE/<path>), check its SHA-256
    and write it atomically into data_dir; returns the paths written. The first file that does
    not match raises DataError and is never written (the copy already there stays); a file that
    cannot be read raises its OSError."""
    written = []
    for f in files:
        where = source(f, base)
        with _open(where, timeout_s) as src:
            got = _save(src, data_dir / f.path, f.sha256)
        if got is not None:
            raise DataError(
                f"{where}: SHA-256 {got}, expected {f.sha256}; the upstream file changed"
            )
        written.append(data_dir / f.path)
    return written


def fetch_main(
    argv: list[str] | None,
    doc: str | None,
    fetch: Callable[[str, Path], list[Path]],
    data_dir: Path,
    *,
    flag: str = "--base",
    default: str | None = None,
    help: str | None = None,
) -> int:
    """A problem's fetch_data.py command line: `[FLAG SOURCE] [--data-dir DIR]`, then
    fetch(SOURCE, DIR); prints each path written, or `error: ...` on stderr and returns 1."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    parser.add_argument(
        flag, dest="source", metavar=flag.lstrip("-").upper(), default=default, help=help
    )
    parser.add_argument("--data-dir", type=Path, default=data_dir)
    args = parser.parse_args(argv)
    try:
        for path in fetch(args.source, args.data_dir):
            print(path)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


def read_source(source: str, timeout_s: float = 60.0) -> bytes:
    """The bytes at `source`: a local file, or a URL (https://, file:// included)."""
    with _open(source, timeout_s) as src:
        return src.read()


def write_atomic(target: Path, data: bytes) -> None:
    """Replace target with data in one step (creating its folder)."""
    _save(io.BytesIO(data), target, None)


def _download(f: DataFile, target: Path, timeout_s: float) -> None:
    assert f.url is not None
    try:
        with urllib.request.urlopen(f.url, timeout=timeout_s) as src:
            got = _save(src, target, f.sha256)
    except OSError as e:
        raise DataError(f"{f.url}: download failed: {e}") from None
    if got is not None:
        raise DataError(f"{f.url}: downloaded file does not match SHA-256 {f.sha256}")


def _open(source: str, timeout_s: float) -> IO[bytes]:
    if os.path.isfile(source):
        return open(source, "rb")
    return urllib.request.urlopen(source, timeout=timeout_s)


def _save(src: IO[bytes], target: Path, sha256: str | None) -> str | None:
    """Copy src into target, replacing it only if what was read has the SHA-256 `sha256` (or
    none is asked); returns the SHA-256 read when it does not match (target untouched)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    h = hashlib.sha256()
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                h.update(chunk)
                out.write(chunk)
        if sha256 and h.hexdigest() != sha256.lower():
            return h.hexdigest()
        os.replace(tmp, target)  # atomic: a killed download never leaves a half file behind
        return None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
