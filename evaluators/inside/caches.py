"""Package caches a problem prepared ahead of time, made visible to the tools its evaluator
runs inside the sandbox, which has no network.

Cargo: a problem vendors its crates (`cargo vendor vendor/` in its folder) and keeps the
source replacement `cargo vendor` prints in `<problem>/.cargo/config.toml`. Cargo reads
that file only below the problem's folder, and writes its locks into CARGO_HOME, so the
sandbox's own, writable CARGO_HOME ($HOME/.cargo, in the scratch) gets a copy whose
relative `directory` paths point into the problem's folder, as cargo would resolve them.
A problem that vendors nothing gets its crates fetched on the trusted side (evolve/problem/crates.py)
into a folder the sandbox offers read-only and names in $EVOLVE_CRATES_DIR: the same source
replacement then points there.

Stdlib only: the harness runs it in a bare interpreter.
"""

from __future__ import annotations

import os
import re

_DIRECTORY = re.compile(r'^(\s*directory\s*=\s*)(["\'])([^"\']+)\2', re.M)
CRATES_ENV = "EVOLVE_CRATES_DIR"  # the crates fetched for the problem (evolve/problem/crates.py)


def cargo_config(problem_dir: str) -> str | None:
    """The problem's .cargo/config.toml with its relative directories made absolute (None:
    the problem has none)."""
    return absolute_config(os.path.join(problem_dir, ".cargo", "config.toml"), problem_dir)


def absolute_config(path: str, base: str) -> str | None:
    """The cargo config at `path` with its relative `directory` paths made absolute from
    `base` (cargo's rule: the folder above the one holding the file); None: no such file."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None

    def absolute(m: re.Match) -> str:
        target = os.path.join(base, m.group(3))  # an absolute one stays as it is
        return f"{m.group(1)}{m.group(2)}{target}{m.group(2)}"

    return _DIRECTORY.sub(absolute, text)


def fetched_config(crates_dir: str) -> str:
    """The source replacement that makes the fetched folder crates.io (`cargo vendor`'s,
    under a name of ours: a problem's own config, which replaces no source, comes first)."""
    return (
        '\n[source.crates-io]\nreplace-with = "evolve-fetched"\n\n'
        f'[source.evolve-fetched]\ndirectory = "{crates_dir}"\n'
    )


def prepare_cargo(problem_dir: str) -> None:
    """Write into $CARGO_HOME (default $HOME/.cargo) the problem's cargo config, if it has
    one, and the replacement naming the crates fetched for it ($EVOLVE_CRATES_DIR: only
    for a problem whose config replaces no source), if any."""
    text = cargo_config(problem_dir) or ""
    if os.environ.get(CRATES_ENV):
        text += fetched_config(os.environ[CRATES_ENV])
    if not text:
        return
    home = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(text)
