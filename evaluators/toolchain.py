"""The programs a problem's evaluator runs (`tools`: cargo, g++), found on this machine
so a sandbox can offer them: the folders to bind read-only, the PATH and the variables
they need inside.

A tool under /usr or /bin is already in every sandbox's read-only system. One installed
elsewhere brings its install prefix (/opt/go for /opt/go/bin/go); a rustup proxy
(~/.cargo/bin/cargo) brings only its bin folder (~/.cargo also holds the user's registry
token) and its RUSTUP_HOME, named by RUSTUP_HOME inside since HOME
is the scratch there. CARGO_HOME stays the scratch's own (~/.cargo, writable) and cargo
runs offline: the sandbox has no network, so crates come from a cache the problem
vendored ahead of time (README: "Other languages").
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass, field

_SYSTEM = ("/usr/", "/bin/", "/sbin/", "/lib/", "/lib64/")


@dataclass(frozen=True)
class Toolchain:
    """`roots`: host folders to bind read-only at the same place; `path`: folders to put
    first on PATH; `env`: variables the tools need; `missing`: tools not found here."""

    roots: tuple[str, ...] = ()
    path: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    missing: tuple[str, ...] = ()

    def sandbox_path(self, base: str) -> str:
        """`base` (a PATH) with the tools' folders first."""
        return os.pathsep.join([*self.path, base]) if self.path else base


def is_system(path: str) -> bool:
    """Under a folder every sandbox already has read-only (/usr, /bin, ...)."""
    return (path + "/").startswith(_SYSTEM)


def install_prefix(bin_dir: str) -> str:
    """The install a bin folder belongs to: its parent when it is named bin."""
    return os.path.dirname(bin_dir) if os.path.basename(bin_dir) == "bin" else bin_dir


def rustup_home(proxy_bin: str) -> str:
    """Where the toolchains of the rustup proxy in `proxy_bin` live: RUSTUP_HOME, else
    ~/.rustup; where neither exists (HOME is not the installing user's), the .rustup beside
    the proxy's own ~/.cargo, as rustup's installer lays them out."""
    if os.environ.get("RUSTUP_HOME"):
        return os.environ["RUSTUP_HOME"]
    own = os.path.join(os.path.expanduser("~"), ".rustup")
    beside = os.path.join(os.path.dirname(os.path.dirname(proxy_bin)), ".rustup")
    return beside if not os.path.isdir(own) and os.path.isdir(beside) else own


def host_env(found: str) -> dict[str, str]:
    """What running the tool at `found` on this machine needs beyond os.environ: a rustup
    proxy, the RUSTUP_HOME of its toolchains."""
    if os.path.basename(os.path.realpath(found)) != "rustup":
        return {}
    return {"RUSTUP_HOME": rustup_home(os.path.dirname(os.path.abspath(found)))}


def resolve(tools: tuple[str, ...] | list[str], search_path: str | None = None) -> Toolchain:
    """Where each tool lives on this machine (PATH lookup, as the evaluator's would be)."""
    roots: list[str] = []
    path: list[str] = []
    env: dict[str, str] = {}
    missing: list[str] = []
    for tool in tools:
        found = shutil.which(tool, path=search_path)
        if found is None:
            missing.append(tool)
            continue
        bin_dir = os.path.dirname(os.path.abspath(found))
        real = os.path.realpath(found)
        if os.path.basename(real) == "rustup":  # a proxy: the toolchains live in RUSTUP_HOME
            env["RUSTUP_HOME"] = rustup_home(bin_dir)
            # its bin folder only, never all of ~/.cargo: credentials.toml (a registry
            # token) and the user's config lie there
            roots += [env["RUSTUP_HOME"], bin_dir]
        else:
            for folder in (bin_dir, os.path.dirname(real)):
                if not is_system(folder):
                    roots.append(install_prefix(folder))
        if bin_dir not in path and not is_system(bin_dir):
            path.append(bin_dir)
    if any(t in ("cargo", "rustc") for t in tools):
        env["CARGO_NET_OFFLINE"] = "true"  # fail at once, naming the crate, not after DNS
    kept = sorted({r for r in roots if os.path.isdir(r)})
    kept = [r for r in kept if not any(r != o and r.startswith(o + "/") for o in kept)]
    return Toolchain(tuple(kept), tuple(path), env, tuple(missing))


def missing_line(tools: tuple[str, ...] | list[str], where: str) -> str | None:
    """One line naming the declared tools this machine lacks, with where they are declared
    and how to get them; None when all are here."""
    missing = resolve(tools).missing
    if not missing:
        return None
    return (
        f"{where}: tool(s) not found on PATH: {', '.join(missing)} "
        "(install them, e.g. `apt-get install cargo g++`, or fix `tools`)"
    )
