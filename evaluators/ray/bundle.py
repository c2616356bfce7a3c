"""A problem folder packed to travel with a Ray task, so no node needs a shared file system.

The controller packs the problem folder (and its data folder and shared includes, where
they live elsewhere) once per run into one tar in memory; Ray's object store carries it
to each node once. A node unpacks it once per content hash into its own cache, and
every evaluation's paths are rewritten from the controller's to the node's copy.
The cache lies in the shared temp folder, where anyone may have made that name first:
a cache folder that is not ours alone (another owner, a link, writable by group or
others) is refused, a bundle's folder in it replaced, never trusted.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import tarfile
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from evaluators.sandbox import EvalRequest

MAX_BUNDLE_MB = 1024  # a problem folder larger than this belongs on the nodes already
SKIP = {"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache"}
CACHE_DIR = "evolve-ray-bundles"


class BundleError(ValueError):
    """The folder cannot travel with a task; the message says which and why."""


@dataclass(frozen=True)
class Bundle:
    """The packed files, their hash, and where each packed root came from."""

    digest: str
    data: bytes
    roots: tuple[tuple[str, str], ...]  # (absolute path on the controller, name in the tar)


def pack(
    problem_dir: str,
    data_dir: str | None = None,
    includes: tuple[str, ...] = (),
    crates: str | None = None,
) -> Bundle:
    """Everything an evaluation of this problem may read, as one tar (the crates fetched for
    it too: a node has no more network inside its sandbox than we do)."""
    roots = [(str(Path(problem_dir).resolve()), "problem")]
    if data_dir and not _inside(Path(data_dir).resolve(), Path(roots[0][0])):
        roots.append((str(Path(data_dir).resolve()), "data"))
    if crates:
        roots.append((str(Path(crates).resolve()), "crates"))
    for i, inc in enumerate(includes):
        path = Path(inc).resolve()
        if not any(_inside(path, Path(r)) for r, _ in roots):
            roots.append((str(path), _include_name(path, Path(roots[0][0]), i)))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", dereference=True) as tar:
        for src, name in roots:
            if os.path.exists(src):
                tar.add(src, arcname=name, filter=_normalise)
    data = buf.getvalue()
    if len(data) > MAX_BUNDLE_MB << 20:
        raise BundleError(
            f"{problem_dir}: the problem's files are {len(data) >> 20} MB; a Ray task carries "
            f"at most {MAX_BUNDLE_MB} MB (put large data on the nodes and point EVOLVE_DATA_DIR at it)"
        )
    return Bundle(hashlib.sha256(data).hexdigest(), data, tuple(roots))


def _include_name(path: Path, problem: Path, i: int) -> str:
    """Where an include outside the problem lies in the bundle: where it lies relative to the
    problem on the controller (`../other/sim.py` -> `other/sim.py`, beside `problem/`), so
    that the kit's `include`, which resolves the path next to the evaluator, finds it on the
    node as it does on the controller; `include/I/NAME` where that would leave the bundle or
    meet another root."""
    name = os.path.normpath(os.path.join("problem", os.path.relpath(path, problem)))
    first = Path(name).parts[0]
    if os.path.isabs(name) or first in ("..", "problem", "data", "include"):
        return f"include/{i}/{path.name}"
    return Path(name).as_posix()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _normalise(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    """Skip caches; readable by every sandbox uid, writable by none; no owner names."""
    if set(Path(info.name).parts) & SKIP or info.name.endswith(".pyc"):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    info.mtime = 0
    executable = info.isdir() or info.mode & 0o111
    info.mode = 0o755 if executable else 0o644
    return info


def unpack(data: bytes, digest: str, cache_root: str | None = None) -> Path:
    """The bundle's folder on this node: unpacked on first use, atomically, then reused."""
    root = Path(cache_root or tempfile.gettempdir(), CACHE_DIR)
    root.mkdir(mode=0o755, parents=True, exist_ok=True)
    if why := _not_ours(root):
        raise BundleError(f"{root}: the bundle cache is {why}; remove it (a new one is made)")
    final = root / digest
    if final.is_dir() and not _not_ours(final):
        return final
    if os.path.lexists(final):  # planted, or left half-made: never trusted
        if final.is_dir() and not final.is_symlink():
            shutil.rmtree(final)
        else:
            final.unlink()
    if hashlib.sha256(data).hexdigest() != digest:
        raise BundleError(f"bundle {digest[:12]}: its bytes do not match their hash")
    work = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=root))
    try:
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(work, filter="data")
        work.chmod(0o755)
        try:
            work.rename(final)
        except OSError:  # another worker of this node unpacked it first
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


def _not_ours(path: Path) -> str | None:
    """None for a real folder of this uid that no one else may write, else what it is."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        return "not a folder (a link?)"
    if st.st_uid != os.geteuid():
        return f"owned by uid {st.st_uid}, not {os.geteuid()}"
    if st.st_mode & 0o022:
        return f"writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def relocate(req: EvalRequest, roots: tuple[tuple[str, str], ...], where: Path) -> EvalRequest:
    """The request with every controller path moved into the node's copy."""

    def moved(path: str | None) -> str | None:
        if path is None:
            return None
        for src, name in roots:
            if path == src or path.startswith(src + os.sep):
                return str(where / name) + path[len(src) :]
        return path

    return replace(
        req,
        problem_dir=moved(req.problem_dir) or req.problem_dir,
        data_dir=moved(req.data_dir),
        includes=tuple(moved(p) or p for p in req.includes),
        hidden=tuple(moved(p) or p for p in req.hidden),
        crates=moved(req.crates),
    )
