"""Pick a sandbox backend by name; every backend implements evaluators.sandbox.Sandbox."""

from __future__ import annotations

from evaluators.sandbox import Sandbox

BACKENDS = ("local",)


def make_sandbox(name: str, parallel: int) -> Sandbox:
    if name == "local":
        from evaluators.local import LocalSandbox

        return LocalSandbox(max_parallel=max(1, parallel) + 1)
    raise ValueError(f"--sandbox {name}: unknown backend (one of {', '.join(BACKENDS)})")
