"""Workload data: find it locally, or download it once with a checksum.

Problems declare their files in problem.toml (`[[data]]` with path, url,
sha256). The trusted controller makes sure they are present before any
evaluation and hands the directory to the sandbox as EVOLVE_DATA_DIR;
candidates and evaluators never need the network.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


class DataError(ValueError):
    """A data file is missing, unreachable or corrupt; the message names it."""


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the data directory
    url: str | None = None
    sha256: str | None = None


def default_data_dir() -> Path:
    """$EVOLVE_DATA_DIR, else the development checkout's ../shared/data, else a user cache."""
    env = os.environ.get("EVOLVE_DATA_DIR")
    if env:
        return Path(env).expanduser().resolve()
    shared = REPO_ROOT.parent / "shared" / "data"
    if shared.is_dir():
        return shared.resolve()
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "evolve" / "data"


def sha256_of(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def ensure(files: list[DataFile], data_dir: Path, download: bool = True, timeout_s: float = 60.0) -> None:
    """Make every file present and verified, downloading what is missing."""
    for f in files:
        target = data_dir / f.path
        if not target.is_file():
            if not (download and f.url):
                raise DataError(f"{target}: missing data file (set EVOLVE_DATA_DIR, or give it a url)")
            _download(f, target, timeout_s)
        if f.sha256 and sha256_of(target) != f.sha256.lower():
            raise DataError(f"{target}: SHA-256 mismatch (expected {f.sha256}); delete it to download again")


def _download(f: DataFile, target: Path, timeout_s: float) -> None:
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
