"""Import a program's tree of files in the candidate's worker, from the sources it was sent.

The worker reads no file of the scratch folder (its Landlock grants none): its parent
reads the tree's files and sends them with the program (worker_client.py), and this
module serves them to Python's import system. The tree's root goes on sys.path with a
path hook that answers for it and its folders only, so `from policy import batching`,
a package entry's relative imports (`from . import batching` in `policy/__init__.py`)
and folders without an `__init__.py` (namespace packages) work as they would on disk,
with each module's `__file__` its path in the scratch folder and its lines in tracebacks.

Stdlib only: it runs in the worker before the candidate imports anything.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import keyword
import linecache
import sys
import types
from collections.abc import Mapping


class _Loader(importlib.abc.Loader):
    """Executes one file of the tree from its sent source."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path = path
        self.source = source

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module

    def exec_module(self, module: types.ModuleType) -> None:
        text = importlib.util.decode_source(self.source)
        linecache.cache[self.path] = (len(text), None, text.splitlines(True), self.path)
        code = compile(self.source, self.path, "exec", dont_inherit=True)
        exec(code, module.__dict__)

    def get_source(self, fullname: str) -> str:
        return importlib.util.decode_source(self.source)


class _Finder(importlib.abc.PathEntryFinder):
    """The modules of one folder of the tree (`rel`: "" for the root)."""

    def __init__(self, tree: Tree, rel: str) -> None:
        self.tree = tree
        self.rel = rel

    def find_spec(
        self, fullname: str, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        tail = fullname.rpartition(".")[2]
        rel = f"{self.rel}/{tail}" if self.rel else tail
        root, files = self.tree.root, self.tree.files
        if f"{rel}/__init__.py" in files:
            path = f"{root}/{rel}/__init__.py"
            return importlib.util.spec_from_file_location(
                fullname,
                path,
                loader=_Loader(path, files[f"{rel}/__init__.py"]),
                submodule_search_locations=[f"{root}/{rel}"],
            )
        if f"{rel}.py" in files:
            path = f"{root}/{rel}.py"
            return importlib.util.spec_from_file_location(
                fullname, path, loader=_Loader(path, files[f"{rel}.py"])
            )
        if rel in self.tree.folders:  # a folder with no __init__.py: a namespace package
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = [f"{root}/{rel}"]
            return spec
        return None

    def invalidate_caches(self) -> None:
        pass


class Tree:
    """A tree's files (relative path -> source bytes) as if laid out under `root`."""

    def __init__(self, root: str, files: Mapping[str, bytes]) -> None:
        self.root = root.rstrip("/") or "/"
        self.files = dict(files)
        self.folders = {
            "/".join(path.split("/")[:i])
            for path in self.files
            for i in range(1, path.count("/") + 1)
        }

    def hook(self, path: str) -> _Finder:
        """sys.path_hooks' entry: a finder for the root and the tree's folders, else ImportError
        (the next hook, the file system's, takes every other path)."""
        if path == self.root:
            return _Finder(self, "")
        prefix = self.root.rstrip("/") + "/"
        if path.startswith(prefix) and path[len(prefix) :] in self.folders:
            return _Finder(self, path[len(prefix) :])
        raise ImportError(f"{path} is not a folder of the program's tree")

    def install(self) -> None:
        """Put the root on sys.path (first, as a script's folder is) and answer for it."""
        sys.path_hooks.insert(0, self.hook)
        sys.path.insert(0, self.root)
        sys.path_importer_cache.pop(self.root, None)
        importlib.invalidate_caches()


def module_name(entry: str) -> str | None:
    """The dotted name the entry imports as (`policy/__init__.py` -> `policy`,
    `policy/main.py` -> `policy.main`), None when its path makes no module name."""
    if not entry.endswith(".py"):
        return None
    parts = entry[:-3].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    if not parts or not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        return None
    return ".".join(parts)


def load_entry(root: str, files: Mapping[str, bytes], entry: str) -> types.ModuleType:
    """Install the tree and import its entry under its own dotted name (so its relative imports
    work); also known as `candidate`, the name a one-file program gets."""
    Tree(root, files).install()
    name = module_name(entry)
    if name is None:  # not a module path ("my-policy.py"): run as a one-file program is
        path = f"{root.rstrip('/')}/{entry}"
        module = types.ModuleType("candidate")
        module.__file__ = path
        sys.modules["candidate"] = module
        _Loader(path, files[entry]).exec_module(module)
        return module
    module = importlib.import_module(name)
    sys.modules.setdefault("candidate", module)
    return module
