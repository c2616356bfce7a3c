"""The programs a problem's evaluator runs (`tools`: cargo, g++), put into its Docker layer.

The local sandbox binds the host's tools read-only (evaluators/toolchain.py); a container
sees only its image, so the problem's layer carries them:

- a tool from a Debian package of this machine (/usr/bin/g++) is installed from the same
  package: the host's apt downloads it and every dependency the image lacks (apt reads the
  image's own dpkg status in place of the host's), and the build runs `dpkg -i` on them,
  offline. The image is Debian like the host (evaluators/docker/image.py's SUITE); a host
  without apt-get cannot layer system tools (one line says so).
- a toolchain installed elsewhere is copied in: a rustup proxy (~/.cargo/bin/cargo) brings
  the toolchain it resolves to in the problem's folder (`rustc --print sysroot`, so a
  rust-toolchain file there applies), its programs and libraries without the docs; any
  other tool, its install prefix (/opt/go for /opt/go/bin/go). Copies lie under
  /usr/local/lib/evolve-tools (inside /usr, which every confinement already lets run) with
  links in /usr/local/bin. Rust links through the C compiler, so cargo and rustc bring gcc.

Never ~/.cargo itself (a registry token lies there); crates come from the problem's vendored
cache, and cargo runs offline (CARGO_NET_OFFLINE, as on the local sandbox).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from evaluators.docker.image import ImageError
from evaluators.toolchain import host_env, install_prefix, is_system

TOOLS_DIR = "/usr/local/lib/evolve-tools"
_RUST = ("cargo", "rustc", "rustdoc")
_RUST_LINKER = ("gcc", "libc6-dev")  # rustc links through cc
_RUST_SKIP = shutil.ignore_patterns("share", "src", "doc", "docs", "*.md")  # docs, rust-src


@dataclass(frozen=True)
class Copy:
    """`source` on this machine, copied to TOOLS_DIR/`name`; `links`: the programs put on
    PATH (their paths relative to the copy)."""

    source: str
    name: str
    links: tuple[str, ...]


@dataclass(frozen=True)
class ToolPlan:
    """What the layer adds for the tools: Debian packages, copied installs, environment."""

    packages: tuple[str, ...] = ()
    copies: tuple[Copy, ...] = ()
    env: dict[str, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.packages or self.copies)

    def key(self) -> str:
        """What the layer's tag depends on: the packages, and each copy's programs as they
        are now (path, size, mtime: a toolchain update rebuilds the layer)."""
        parts = [" ".join(self.packages)]
        for c in self.copies:
            for link in c.links:
                st = os.stat(os.path.join(c.source, link))
                parts.append(f"{c.source}/{link} {st.st_size} {st.st_mtime_ns}")
        parts += [f"{k}={v}" for k, v in sorted(self.env.items())]
        return "\n".join(parts)


def plan(tools: tuple[str, ...] | list[str], problem_dir: str | Path) -> ToolPlan:
    """Where each tool comes from for the image; ImageError naming a tool this machine lacks."""
    packages: list[str] = []
    copies: list[Copy] = []
    env: dict[str, str] = {}
    for tool in tools:
        found = shutil.which(tool)
        if found is None:
            raise ImageError(
                f"tool {tool!r} (declared by {problem_dir}) is not installed on this machine: "
                "the Docker layer copies or installs it from here"
            )
        real = os.path.realpath(found)
        if os.path.basename(real) == "rustup" or (tool in _RUST and not is_system(real)):
            copies.append(_rust(found, problem_dir))
            packages += _RUST_LINKER
        elif is_system(real):
            packages += _debian_packages(found, real)
        else:
            prefix = install_prefix(os.path.dirname(real))
            rel = os.path.relpath(real, prefix)
            copies.append(Copy(prefix, os.path.basename(prefix), (rel,)))
        if tool in _RUST:
            env["CARGO_NET_OFFLINE"] = "true"
    merged: dict[str, Copy] = {}
    for c in copies:  # cargo and rustc of one toolchain: one copy
        old = merged.get(c.source)
        merged[c.source] = c if old is None else Copy(c.source, c.name, (*old.links, *c.links))
    unique = [Copy(c.source, c.name, tuple(dict.fromkeys(c.links))) for c in merged.values()]
    return ToolPlan(tuple(sorted(set(packages))), tuple(unique), env)


def dockerfile_lines(p: ToolPlan) -> list[str]:
    """The layer's steps for `p`, after its base; the build context holds debs/ and tools/."""
    lines = []
    if p.packages:
        lines += [
            "COPY debs/ /tmp/evolve-debs/",
            "RUN PATH=/usr/sbin:/usr/bin:/sbin:/bin dpkg -i /tmp/evolve-debs/*.deb && rm -rf /tmp/evolve-debs",
        ]
    if p.copies:
        lines.append(f"COPY tools/ {TOOLS_DIR}/")
        links = [
            f"ln -sf {TOOLS_DIR}/{c.name}/{rel} /usr/local/bin/{os.path.basename(rel)}"
            for c in p.copies
            for rel in c.links
        ]
        lines.append("RUN " + " && ".join(links))
    lines += [f"ENV {k}={v}" for k, v in sorted(p.env.items())]
    return lines


def fill_context(
    p: ToolPlan, ctx: str, image_status: bytes, log: Callable[[str], None] = print
) -> None:
    """Put the debs and copies `p` needs into the build context `ctx`."""
    if p.packages:
        _download(p.packages, image_status, os.path.join(ctx, "debs"), log)
    for c in p.copies:
        log(f"copying {c.source} into the layer as {TOOLS_DIR}/{c.name}")
        skip = _RUST_SKIP if c.name == "rust" else None  # Go needs its src/, say: keep others whole
        shutil.copytree(c.source, os.path.join(ctx, "tools", c.name), symlinks=True, ignore=skip)


def smoke_code(p: ToolPlan) -> str:
    """Python run in the built image: every linked program is found on PATH."""
    names = [os.path.basename(rel) for c in p.copies for rel in c.links]
    return f"import shutil; assert all(shutil.which(n) for n in {names!r}), {names!r}"


def _rust(found: str, problem_dir: str | Path) -> Copy:
    """The toolchain a rustup proxy (or a standalone rustc) resolves to in the problem's folder."""
    rustc = os.path.join(os.path.dirname(found), "rustc")
    env = {**os.environ, **host_env(found)}
    try:
        out = subprocess.run(
            [rustc, "--print", "sysroot"],
            cwd=problem_dir,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ImageError(f"cannot ask {rustc} for its toolchain: {e}") from None
    sysroot = out.stdout.strip()
    if out.returncode != 0 or not os.path.isdir(os.path.join(sysroot, "bin")):
        detail = (out.stderr.strip().splitlines() or ["no sysroot printed"])[-1]
        raise ImageError(f"{rustc} --print sysroot (in {problem_dir}) failed: {detail}")
    links = tuple(f"bin/{n}" for n in _RUST if os.path.isfile(os.path.join(sysroot, "bin", n)))
    return Copy(sysroot, "rust", links)


def _debian_packages(*paths: str) -> list[str]:
    """The Debian packages that own `paths` on this machine (dpkg -S), each path's own."""
    out: list[str] = []
    for path in dict.fromkeys(paths):
        try:
            proc = subprocess.run(["dpkg", "-S", path], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            proc = None
        if proc is None or proc.returncode != 0:
            # /usr/bin/g++ may be a link only update-alternatives knows; its target is enough
            continue
        out += [part.split(":")[0].strip() for part in proc.stdout.split(": ")[0].split(",")]
    if not out:
        raise ImageError(
            f"{paths[0]}: no Debian package of this machine owns it, so the Docker layer "
            "cannot install it; add the package that provides it to "
            "evaluators/docker/packages.txt and rebuild (`evolve sandbox build --force-base`)"
        )
    return out


_BROKEN = re.compile(r"^ (\S+) : (?:Pre)?Depends:", re.M)


def _consistent(image_status: bytes, scratch: str) -> bytes:
    """The image's dpkg status without the packages whose dependencies it purged on purpose
    (python3-pythran without g++: prune.txt), which would stop apt from planning anything.
    Only apt's plan reads it: those packages stay in the image as they are."""
    for _ in range(8):  # dropping one may leave another without a dependency
        Path(scratch).write_bytes(image_status)
        check = ["apt-get", "check", "-q", f"-o=Dir::State::status={scratch}"]
        proc = subprocess.run([*check, "-o=Debug::NoLocking=1"], capture_output=True, text=True)
        broken = set(_BROKEN.findall(proc.stdout + proc.stderr))
        if proc.returncode == 0 or not broken:
            break
        stanzas = image_status.split(b"\n\n")
        image_status = b"\n\n".join(st for st in stanzas if _package(st) not in broken)
    return image_status


def _package(stanza: bytes) -> str:
    for line in stanza.splitlines():
        if line.startswith(b"Package: "):
            return line[9:].decode(errors="replace").strip()
    return ""


def _download(
    packages: tuple[str, ...], image_status: bytes, dest: str, log: Callable[[str], None]
) -> None:
    """The .debs of `packages` and of every dependency the image (its dpkg status) lacks."""
    if shutil.which("apt-get") is None:
        raise ImageError(
            f"the Docker layer installs {', '.join(packages)} from Debian with this machine's "
            "apt-get, which is not installed here"
        )
    log(f"downloading {', '.join(packages)} and what the image lacks of their dependencies")
    os.makedirs(os.path.join(dest, "partial"))
    with tempfile.TemporaryDirectory(prefix="evolve-apt-") as tmp:
        status = os.path.join(tmp, "status")
        Path(status).write_bytes(_consistent(image_status, status))
        cmd = ["apt-get", "install", "--download-only", "--no-install-recommends", "-y", "-q"]
        cmd += [f"-o=Dir::State::status={status}", f"-o=Dir::Cache::archives={dest}"]
        cmd += ["-o=Debug::NoLocking=1", *packages]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:  # package lists missing or stale: refresh them once
            log("apt-get could not find them: apt-get update, then again")
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
            proc = subprocess.run(cmd, capture_output=True, text=True)
    shutil.rmtree(os.path.join(dest, "partial"), ignore_errors=True)
    if proc.returncode != 0:
        detail = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        raise ImageError(
            f"apt-get could not download {', '.join(packages)} for the image: {detail} "
            "(it needs root and Debian's package mirror)"
        )
    for lock in Path(dest).glob("lock"):
        lock.unlink()
