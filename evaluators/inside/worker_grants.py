"""What the candidate's worker may read: everything the interpreter needs, nothing private.

The parent names the private folders (the evaluator's, the data, the kit, the
working directory: `private_paths`); the worker, before it runs any candidate
code, grants itself read access to the interpreter's libraries around them and
restricts itself with Landlock (landlock.py): no other file, no
write, no TCP, no signal out.

Stdlib only: it runs in the worker before the candidate imports anything.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

from evaluators.inside import landlock


def _library_roots() -> list[str]:
    """The interpreter's prefixes and every site-packages / dist-packages folder on sys.path."""
    roots = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    roots |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    return sorted({os.path.realpath(r) for r in roots if r})


def under(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def private_paths(extra: Iterable[str] = ()) -> list[str]:
    """Folders the worker must never be granted (nor their parents): the cwd, the evaluators
    folder (this one and the package around it), the data and include folders, the folder of
    every module loaded here that is not part of the interpreter's libraries (the evaluator,
    its simulator, the harness), where the libraries are the prefixes and the site-packages
    folders on sys.path."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = {os.getcwd(), here, os.path.dirname(here), *extra}
    for var in ("EVOLVE_DATA_DIR", "EVOLVE_INCLUDE_DIR"):
        if os.environ.get(var):
            paths.add(os.environ[var])
    libs = _library_roots()
    for name, m in list(sys.modules.items()):
        f = getattr(m, "__file__", None)
        if isinstance(f, str) and os.path.isabs(f):
            d = os.path.realpath(os.path.dirname(f))
            if name in ("__main__", "evaluator") or not any(under(d, r) for r in libs):
                paths.add(d)
    return sorted(os.path.realpath(p) for p in paths)


_SPLIT_DEPTH = 4  # how deep a library folder holding a private one is split into its entries


def grants(setup: dict) -> tuple[list[str], list[str], list[str]]:
    """Read-only folders and files for the worker, and folders it may only list: the
    interpreter and its libraries, never a private folder, its parents or what lies in it
    (the cwd's subfolders excepted: a venv may live in a checkout). A library folder that
    holds a private one (site-packages holding an installed `evaluators`, or pytest's own
    folder when `python -m pytest` made it __main__'s; /usr holding a problem) is granted
    entry by entry around it, and its listing where it is on sys.path: the import system
    lists a path entry to find a module in it, and finds nothing where it cannot (a listing
    right shows the names beneath it, never a file's content). Any other
    sys.path entry that holds one (a checkout an editable install put there) is not."""
    cwd = os.path.realpath(os.getcwd())
    private = [os.path.realpath(p) for p in setup.get("private", [])]
    trees = [p for p in private if p != cwd]
    libraries = {
        os.path.realpath(p)
        for p in (
            sys.prefix,
            sys.base_prefix,
            sys.exec_prefix,
            sys.base_exec_prefix,
            "/usr",
            "/lib",
            "/lib64",
        )
    }
    libraries |= {
        os.path.realpath(p)
        for p in sys.path
        if os.path.basename(p) in ("site-packages", "dist-packages")
    }
    path_entries = [os.path.realpath(p) for p in sys.path if p and os.path.isabs(p)]
    roots = [*libraries, *path_entries]
    dirs: list[str] = []
    files = ["/etc/ld.so.cache", "/dev/null", "/dev/urandom"]
    listed: list[str] = []

    def add(path: str, depth: int, splittable: bool) -> None:
        if any(under(path, p) for p in trees) or path == "/":
            return  # a private folder, or inside one
        if not any(under(p, path) for p in private):
            dirs.append(path)
            return
        if not splittable or depth >= _SPLIT_DEPTH:
            return  # holds a private folder: never granted whole
        if depth == 0 and path in path_entries:
            listed.append(path)  # its entries' names, for the import system
        try:
            entries = list(os.scandir(path))
        except OSError:
            return
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                add(entry.path, depth + 1, True)
            elif entry.is_file(follow_symlinks=False) and not any(
                under(entry.path, p) for p in trees
            ):
                files.append(entry.path)

    for root in dict.fromkeys(r for r in roots if os.path.isdir(r)):
        add(root, 0, root in libraries)
    found = [f for f in dict.fromkeys(files) if os.path.exists(f)]
    return list(dict.fromkeys(dirs)), found, list(dict.fromkeys(listed))


def confine(setup: dict) -> dict:
    if not setup.get("confine", True):
        return {"confined": False, "error": "landlock not requested"}
    dirs, files, listed = grants(setup)
    tree = setup.get("tree")
    if tree:  # the program's own files, each by name (never its folder: the cwd)
        files += [os.path.join(tree["root"], path) for path in tree["files"]]
    try:
        c = landlock.restrict(dirs, files, [(p, landlock.FS_READ_DIR) for p in listed])
    except OSError as e:
        return {"confined": False, "error": f"landlock failed ({e})"}
    return {"confined": c.confined, "abi": c.abi, "error": c.error, "handled": c.handled}
