"""Package caches a problem prepared ahead of time, made visible to the tools its evaluator
runs inside the sandbox, which has no network.

Cargo: a problem vendors its crates (`cargo vendor vendor/` in its folder) and keeps the
source replacement `cargo vendor` prints in `<problem>/.cargo/config.toml`. Cargo reads
that file only below the problem's folder, and writes its locks into CARGO_HOME, so the
sandbox's own, writable CARGO_HOME ($HOME/.cargo, in the scratch) gets a copy whose
relative `directory` paths point into the problem's folder, as cargo would resolve them.

Stdlib only: the harness runs it in a bare interpreter.
"""

from __future__ import annotations

import os
import re

_DIRECTORY = re.compile(r'^(\s*directory\s*=\s*)(["\'])([^"\']+)\2', re.M)


def cargo_config(problem_dir: str) -> str | None:
    """The problem's .cargo/config.toml with its relative directories made absolute (None:
    the problem has none)."""
    path = os.path.join(problem_dir, ".cargo", "config.toml")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError:
        return None

    def absolute(m: re.Match) -> str:
        target = os.path.join(problem_dir, m.group(3))  # an absolute one stays as it is
        return f"{m.group(1)}{m.group(2)}{target}{m.group(2)}"

    return _DIRECTORY.sub(absolute, text)


def prepare_cargo(problem_dir: str) -> None:
    """Write the problem's cargo config into $CARGO_HOME (default $HOME/.cargo), if it has one."""
    text = cargo_config(problem_dir)
    if text is None:
        return
    home = os.environ.get("CARGO_HOME") or os.path.join(os.path.expanduser("~"), ".cargo")
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w", encoding="utf-8") as f:
        f.write(text)
