"""The crates a Rust problem's manifests declare, fetched on the trusted side before any
evaluation, so its folder builds on a machine whose cargo cache is empty.

Why: the sandbox has no network and cargo runs offline there (evaluators/toolchain.py), so
OpenEvolve's rust_adaptive_sort, whose sort_test/Cargo.toml names `rand`, scored 0.0 wherever
no cargo cache happened to hold it. A problem may vendor its crates itself (a
.cargo/config.toml: evaluators/inside/caches.py), and then nothing happens here. Otherwise
`cargo vendor` runs here once per set of manifests and lockfiles, with a CARGO_HOME of its own
(the user's cargo config copied in, so mirrors apply; never their token), into
<cache>/cargo/<hash>/: a directory source, like a vendored vendor/. Each sandbox offers it
read-only and names it in $EVOLVE_CRATES_DIR; the harness makes it crates.io's replacement.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from evaluators.inside.caches import absolute_config
from evaluators.toolchain import host_env
from evolve.cache import cache_dir

MANIFEST, LOCK = "Cargo.toml", "Cargo.lock"
# never a problem's own manifest: build output, data, vendored crates (.cargo-checksum.json)
_SKIP = frozenset({"target", "data", "node_modules", "__pycache__"})
_DEPENDENCIES = ("dependencies", "dev-dependencies", "build-dependencies")
FETCH_TIMEOUT_S = 900


class CrateError(ValueError):
    """The crates could not be fetched; the message is one line naming the manifest."""


@dataclass(frozen=True)
class Manifests:
    """The Cargo.toml files under `root` (relative, sorted) that name crates to fetch, and
    the `others` (workspace members, path dependencies) cargo may read to resolve them."""

    root: Path
    paths: tuple[str, ...]
    others: tuple[str, ...] = ()

    def locked(self) -> bool:
        """Every manifest has its Cargo.lock: cargo vendors what they pin (--locked)."""
        return all((self.root / p).with_name(LOCK).is_file() for p in self.paths)

    def key(self) -> str:
        """What the fetched crates depend on: each manifest's and lockfile's bytes."""
        h = hashlib.sha256()
        for rel in self.paths:
            lock = (self.root / rel).with_name(LOCK)
            h.update(rel.encode() + b"\0" + (self.root / rel).read_bytes() + b"\0")
            h.update(lock.read_bytes() if lock.is_file() else b"-")
            h.update(b"\0")
        return h.hexdigest()[:24]


def manifests(problem_dir: str | Path) -> Manifests:
    """The problem's manifests that declare a crate from a registry or git (a path-only
    dependency needs nothing fetched); CrateError for one that is no TOML."""
    root = Path(problem_dir).resolve()
    found: list[str] = []
    others: list[str] = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if d not in _SKIP
            and not d.startswith(".")
            and not os.path.isfile(os.path.join(here, d, ".cargo-checksum.json"))
        )
        if MANIFEST in files:
            rel = os.path.relpath(os.path.join(here, MANIFEST), root)
            (found if _declares_crates(Path(here, MANIFEST)) else others).append(rel)
    return Manifests(root, tuple(sorted(found)), tuple(sorted(others)))


def _declares_crates(path: Path) -> bool:
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise CrateError(f"{path}: not a readable Cargo.toml ({e})") from None
    tables = [doc, doc.get("workspace") or {}, *(doc.get("target") or {}).values()]
    for table in tables:
        if not isinstance(table, dict):
            continue
        for name in _DEPENDENCIES:
            deps = table.get(name)
            if isinstance(deps, dict) and any(not _path_only(d) for d in deps.values()):
                return True
    return False


def _path_only(dep: object) -> bool:
    return isinstance(dep, dict) and "path" in dep and "git" not in dep


def vendors_itself(problem_dir: str | Path) -> bool:
    """The problem's .cargo/config.toml replaces crates.io (a vendored cache: caches.py);
    CrateError for one that is no TOML (cargo would stop on it in every evaluation)."""
    path = Path(problem_dir, ".cargo", "config.toml")
    if not path.is_file():
        return False
    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise CrateError(f"{path}: not a readable cargo config ({e})") from None
    source = doc.get("source")
    crates_io = source.get("crates-io") if isinstance(source, dict) else None
    return isinstance(crates_io, dict) and "replace-with" in crates_io


def crates_dir(problem_dir: str | Path, tools: tuple[str, ...] | list[str]) -> str | None:
    """The folder of the crates the problem's manifests declare, fetched now unless they
    were before; None when there is nothing to fetch (no cargo among `tools`, no manifest
    naming a crate, a problem that vendors its own, no cargo on this machine: `check`
    names it). CrateError, one line, when cargo cannot fetch them."""
    if "cargo" not in tools or vendors_itself(problem_dir) or shutil.which("cargo") is None:
        return None
    found = manifests(problem_dir)
    if not found.paths:
        return None
    dest = cache_dir() / "cargo" / found.key()
    if not dest.is_dir():
        fetch(found, dest)
    return str(dest)


def fetch(found: Manifests, dest: Path) -> None:
    """`cargo vendor` of `found` into `dest` (made whole, then renamed into place)."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".fetch-", dir=dest.parent) as tmp:
        home = Path(tmp, "cargo-home")
        home.mkdir()
        user = _user_config()
        if user is not None:
            (home / "config.toml").write_text(user, encoding="utf-8")
        root = _staged(found, Path(tmp, "problem"))
        out = Path(tmp, "crates")
        cargo = shutil.which("cargo") or "cargo"
        cmd = [cargo, "vendor", "--respect-source-config"]
        cmd += ["--manifest-path", str(root / found.paths[0])]
        for rel in found.paths[1:]:
            cmd += ["--sync", str(root / rel)]
        cmd += ["--locked"] * found.locked() + [str(out)]
        env = {**os.environ, **host_env(cargo), "CARGO_HOME": str(home)}
        env.pop("CARGO_NET_OFFLINE", None)  # this step is the one that may use the network
        where = found.root / found.paths[0]
        try:
            proc = subprocess.run(
                cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=FETCH_TIMEOUT_S
            )
        except subprocess.TimeoutExpired:
            raise CrateError(
                f"{where}: cargo vendor did not fetch its crates within {FETCH_TIMEOUT_S} s"
            ) from None
        if proc.returncode != 0:
            detail = first_error(proc.stderr).replace(str(root), str(found.root))
            raise CrateError(f"{where}: cargo vendor could not fetch its crates: {detail}")
        out.mkdir(exist_ok=True)
        _readable(out)
        try:
            os.rename(out, dest)
        except OSError:
            if not dest.is_dir():  # another evolve fetched the same crates meanwhile: theirs
                raise


def first_error(stderr: str) -> str:
    """cargo's error in one line: its `error:` line and, when causes follow (`failed to
    sync`, then why), the first line of the last cause (`no matching package named ...`)."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    errors = [i for i, ln in enumerate(lines) if ln.startswith("error")]
    if not errors:
        return lines[-1] if lines else "no message"
    head = lines[errors[0]]
    causes = [i for i, ln in enumerate(lines) if i > errors[0] and ln == "Caused by:"]
    if causes and causes[-1] + 1 < len(lines):
        return f"{head} ({lines[causes[-1] + 1]})"
    return head


def _user_config() -> str | None:
    """The user's $CARGO_HOME/config.toml (mirrors, source replacements), relative
    directories made absolute as cargo would read them there."""
    home = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    for name in ("config.toml", "config"):
        text = absolute_config(os.path.join(home, name), os.path.dirname(os.path.abspath(home)))
        if text is not None:
            return text
    return None


def _staged(found: Manifests, root: Path) -> Path:
    """The manifests (and their lockfiles) alone at their places under `root`, each with an
    empty src/lib.rs should cargo look for a target (an evaluator may keep a Cargo.toml
    without sources, copied beside each candidate): cargo reads no source to vendor, and
    writes a Cargo.lock it makes here, never into the problem."""
    for rel in (*found.paths, *found.others):
        src, dst = found.root / rel, root / rel
        (dst.parent / "src").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        if src.with_name(LOCK).is_file():
            shutil.copyfile(src.with_name(LOCK), dst.with_name(LOCK))
        (dst.parent / "src" / "lib.rs").touch()
    return root


def _readable(root: Path) -> None:
    """Folders 0755, files 0644: the sandbox's uid reads them; only we write them."""
    os.chmod(root, 0o755)
    for here, dirs, files in os.walk(root):
        for d in dirs:
            os.chmod(os.path.join(here, d), 0o755)
        for f in files:
            os.chmod(os.path.join(here, f), 0o644)
