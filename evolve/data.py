"""Workload data: a problem's own data/ folder, verified, and refreshed from its source.

Problems ship their files in `<problem>/data/` and declare each in problem.toml
(`[[data]]` with path, url, sha256). The trusted controller checks them before
any evaluation (downloading a missing one that has a url) and hands the folder
to the sandbox as EVOLVE_DATA_DIR; candidates and evaluators never need the
network. `evolve data fetch` downloads them again on purpose.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

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
        if f.sha256 and sha256_of(target) != f.sha256.lower():
            raise DataError(
                f"{target}: SHA-256 mismatch (expected {f.sha256}); "
                "`evolve data fetch` downloads it again"
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


def _download(f: DataFile, target: Path, timeout_s: float) -> None:
    assert f.url is not None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(f.url, timeout=timeout_s) as resp:
            shutil.copyfileobj(resp, out)
        if f.sha256 and sha256_of(Path(tmp)) != f.sha256.lower():
            raise DataError(f"{f.url}: downloaded file does not match SHA-256 {f.sha256}")
        os.replace(tmp, target)  # atomic: a killed download never leaves a half file behind
    except OSError as e:
        raise DataError(f"{f.url}: download failed: {e}") from None
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
