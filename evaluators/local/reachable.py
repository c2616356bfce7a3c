"""Linked views of the folders a fallback candidate must read, for a uid that cannot reach them.

Why: without namespaces (the fallback: no bubblewrap, or EVOLVE_LOCAL_ISOLATION=off) the
candidate, as root's slot uid, holds no capability at all, so it can enter only folders
whose every parent others may search. An interpreter under /root (pyenv, a venv in
root's home), a problem in a 0700 temp folder, is out of its reach. Rather than give it
CAP_DAC_READ_SEARCH (which reads every file of the machine), each such folder is mirrored
under VIEW_ROOT, a root-owned tree of hard links (copies across file systems): the same
files with the same modes, reached by another path. A view never makes a file more
readable than it is; only the parents in between are new, and they are root's, 0755.
Links that point into a mirrored folder point into its view, and a venv's pyvenv.cfg
names the view of its base interpreter.

Views are made once per content and reused by every evaluation (and process) after it:
the interpreter's view is keyed by the modification times of its folders and
site-packages (an install changes them), any other folder's by all its entries.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import sys
import sysconfig
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, replace

from evaluators.sandbox import EvalRequest

VIEW_ROOT = "/var/cache/evolve-sandbox"
SCRATCH_ROOT = VIEW_ROOT + "/scratch"  # scratch folders where the temp folder is out of reach
SKIP = frozenset({"__pycache__"})  # written by the host as it imports: never the candidate's
STALE_S = 86400.0  # a view nobody used for a day goes when the next one is made
_lock = threading.Lock()

Moves = tuple[tuple[str, str], ...]  # (original folder, its view)


def searchable(path: str) -> bool:
    """Whether a uid with no capability, in no group of theirs, can walk to `path` (both as
    named and resolved): every parent folder grants others search (x)."""
    for p in dict.fromkeys((os.path.abspath(path), os.path.realpath(path))):
        parent = os.path.dirname(p)
        while True:
            try:
                if not os.stat(parent).st_mode & stat.S_IXOTH:
                    return False
            except OSError:
                return False
            if parent == "/":
                break
            parent = os.path.dirname(parent)
    return True


def moved(path: str, moves: Moves) -> str:
    """`path` in the view of the mirrored folder that holds it, else unchanged."""
    for old, new in moves:
        if path == old or path.startswith(old.rstrip("/") + "/"):
            return new + path[len(old) :]
    return path


def _safe_root() -> str:
    """VIEW_ROOT, made if missing; refused if anyone but us could have planted files in it."""
    os.makedirs(VIEW_ROOT, mode=0o755, exist_ok=True)
    st = os.lstat(VIEW_ROOT)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
        raise PermissionError(
            f"{VIEW_ROOT} is not a folder of uid {os.geteuid()} closed to others' writes; "
            "remove it and evolve makes it again"
        )
    os.chmod(VIEW_ROOT, 0o755)
    return VIEW_ROOT


def _link_tree(src: str, dst: str, root: str, moves: Moves, skip: frozenset[str]) -> None:
    """`src` mirrored at `dst`: folders made with the same modes (less group and others'
    write), files hard-linked (copied across file systems), symlinks moved into the view."""
    os.mkdir(dst, 0o700)
    with os.scandir(src) as it:
        entries = list(it)
    for e in entries:
        if e.name in skip:
            continue
        out = os.path.join(dst, e.name)
        try:
            if e.is_symlink():
                target = os.readlink(e.path)
                where = os.path.normpath(os.path.join(os.path.dirname(e.path), target))
                inside = where == root or where.startswith(root + "/")
                os.symlink(target if inside else moved(where, moves), out)
            elif e.is_dir(follow_symlinks=False):
                _link_tree(e.path, out, root, moves, skip)
            elif e.is_file(follow_symlinks=False):
                try:
                    os.link(e.path, out, follow_symlinks=False)
                except OSError:
                    shutil.copy2(e.path, out, follow_symlinks=False)
        except OSError:
            continue  # gone meanwhile, or unreadable even to us: absent from the view too
    os.chmod(dst, stat.S_IMODE(os.stat(src).st_mode) & ~0o022)


def _fingerprint(folders: Iterable[str], deep: bool) -> str:
    h = hashlib.sha256()
    for folder in folders:
        h.update(folder.encode() + b"\0")
        walk = os.walk(folder) if deep else [(folder, [], [])]
        for here, dirs, files in walk:
            dirs[:] = sorted(d for d in dirs if d not in SKIP)
            for name in [".", *sorted(files), *dirs]:
                try:
                    st = os.lstat(os.path.join(here, name))
                except OSError:
                    continue
                h.update(
                    f"{here}/{name}:{st.st_ino}:{st.st_mtime_ns}:{st.st_size}:{st.st_mode}\n".encode()
                )
    return h.hexdigest()[:20]


def _sweep(root: str, keep: str) -> None:
    now = time.time()
    for e in os.scandir(root):
        try:
            if (
                e.path not in (keep, SCRATCH_ROOT)
                and now - e.stat(follow_symlinks=False).st_mtime > STALE_S
            ):
                shutil.rmtree(e.path, ignore_errors=True)
        except OSError:
            pass


def view(
    folders: list[str], key: str, fix: Iterable[str] = (), skip: frozenset[str] = SKIP
) -> tuple[str, Moves]:
    """The view holding each of `folders` (absolute, resolved) at VIEW_ROOT/<key>/<path>,
    made now unless it exists; `fix`: pyvenv.cfg files (original paths) whose folder names
    are moved into the view; `skip`: names left out."""
    root = _safe_root()
    final = os.path.join(root, key)
    moves = tuple((f, final + f) for f in folders)
    with _lock:
        if not os.path.isdir(final):
            work = os.path.join(root, f".{key}-{uuid.uuid4().hex[:8]}")
            try:
                for f in folders:
                    _parents(work, os.path.dirname(f))
                    _link_tree(f, work + f, f, moves, skip)
                for cfg in fix:
                    _move_names(moved(cfg, tuple((f, work + f) for f in folders)), moves)
                try:
                    os.rename(work, final)
                except OSError:  # another process made it first
                    if not os.path.isdir(final):
                        raise
            finally:
                shutil.rmtree(work, ignore_errors=True)
            _sweep(root, final)
        os.utime(final)  # in use: not stale
    return final, moves


def _parents(work: str, folder: str) -> None:
    """`work` and `work` + each folder down to `folder`: root's, 0755 (searchable by all)."""
    path = work
    for part in ["", *[p for p in folder.split("/") if p]]:
        path = os.path.join(path, part) if part else path
        os.makedirs(path, exist_ok=True)
        os.chmod(path, 0o755)


def _move_names(cfg: str, moves: Moves) -> None:
    """Rewrite a pyvenv.cfg of the view (a link to the original: replaced, never written
    through) so its home, executable and command name the view's folders."""
    try:
        with open(cfg, encoding="utf-8") as f:
            lines = f.read().splitlines()
    except OSError:
        return
    out = []
    for line in lines:
        key, sep, value = line.partition("=")
        if sep:
            value = " ".join(moved(w, moves) for w in value.strip().split(" "))
            line = f"{key.strip()} = {value}"
        out.append(line)
    os.unlink(cfg)
    with open(cfg, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")
    os.chmod(cfg, 0o644)


@dataclass(frozen=True)
class Interpreter:
    """How a fallback candidate starts Python: `executable`, with `env` added."""

    executable: str
    env: dict[str, str]


def interpreter() -> Interpreter:
    """sys.executable itself where the slot uid can reach the interpreter and its libraries,
    else the same interpreter in a view (its libpython found there through LD_LIBRARY_PATH)."""
    from evaluators.local.bubblewrap import _python_roots as python_roots

    roots = python_roots()
    if all(searchable(r) for r in [*roots, sys.executable]):
        return Interpreter(sys.executable, {})
    libs = [
        os.path.join(r, sub)
        for r in roots
        for sub in (f"lib/python{sys.version_info[0]}.{sys.version_info[1]}", "lib", "bin")
    ]
    sites = [os.path.realpath(p) for p in sys.path if os.path.basename(p) == "site-packages"]
    key = "python-pyc-" + _fingerprint([*roots, *libs, *sites], deep=False)
    cfgs = [os.path.join(r, "pyvenv.cfg") for r in roots]
    # with its compiled modules: the slot uid cannot write them, and an interpreter that
    # compiles its standard library at every start costs each evaluation 200 ms
    _, moves = view(roots, key, fix=[c for c in cfgs if os.path.isfile(c)], skip=frozenset())
    env = {}
    libdir = sysconfig.get_config_var("LIBDIR")
    if isinstance(libdir, str) and moved(os.path.realpath(libdir), moves) != os.path.realpath(
        libdir
    ):
        env["LD_LIBRARY_PATH"] = moved(os.path.realpath(libdir), moves)
    exe = os.path.abspath(sys.executable)
    if moved(exe, moves) == exe:
        exe = os.path.realpath(exe)
    return Interpreter(moved(exe, moves), env)


def folders(paths: Iterable[str]) -> Moves:
    """Views of those of `paths` (folders or files) the slot uid cannot walk to; each is
    mirrored whole, so a file's view is its folder's."""
    blocked = sorted(
        {
            os.path.realpath(p if os.path.isdir(p) else os.path.dirname(p))
            for p in paths
            if os.path.exists(p) and not searchable(p)
        }
    )
    blocked = [b for b in blocked if not any(b != o and b.startswith(o + "/") for o in blocked)]
    if not blocked:
        return ()
    key = "tree-" + _fingerprint(blocked, deep=True)
    _, moves = view(blocked, key)
    return moves


def _move(path: str, moves: Moves) -> str:
    real = os.path.realpath(path)
    return moved(real, moves) if moved(real, moves) != real else path


def request(req: EvalRequest) -> EvalRequest:
    """The request with its problem, data, include and crate folders where the slot uid
    reaches them."""
    extra = [p for p in (req.data_dir, req.crates) if p]
    moves = folders([req.problem_dir, *extra, *req.includes])
    if not moves:
        return req
    return replace(
        req,
        problem_dir=_move(req.problem_dir, moves),
        data_dir=req.data_dir and _move(req.data_dir, moves),
        includes=tuple(_move(p, moves) for p in req.includes),
        hidden=tuple(_move(p, moves) for p in req.hidden),
        crates=req.crates and _move(req.crates, moves),
    )


def launcher(harness: str) -> tuple[str, str, dict[str, str]]:
    """(python, harness, extra environment) that the slot uid can run."""
    it = interpreter()
    return it.executable, _move(harness, folders([os.path.dirname(harness)])), it.env


def scratch_parent(tmp_root: str | None) -> str:
    """Where a scratch folder the slot uid can walk to goes: `tmp_root` (default: the temp
    folder) when it can search it and its parents, else a root-owned 0711 folder of ours."""
    import tempfile

    for parent in (tmp_root, tempfile.gettempdir()):
        if parent and searchable(os.path.join(parent, "x")):
            return parent
    _safe_root()
    os.makedirs(SCRATCH_ROOT, exist_ok=True)
    os.chmod(SCRATCH_ROOT, 0o711)
    return SCRATCH_ROOT
