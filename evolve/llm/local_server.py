"""llama.cpp's server for the local model: started, shared between runs, stopped.

A run with `--model local` starts `python -m llama_cpp.server` on a free
127.0.0.1 port (or joins one that already serves the same model, found through
a state file in the cache directory and checked with GET /v1/models), talks to
it through the same `openai` client as any endpoint, and stops it when the
last run using it ends.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

from evaluators.liveness import pid_alive
from evaluators.locks import locked
from evolve.cache import cache_dir
from evolve.llm.local_weights import LocalModelError, log_line


def _installed_version() -> str:
    try:
        return importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        return "?"


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
        self.log = log or log_line
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
