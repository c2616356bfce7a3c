"""A GEPA script's long-lived worker: the script imported once, every candidate of a run
scored in that one process, so the evaluator's module state (a cache, a counter, a model
loaded on first use) lives on between candidates as it does in GEPA's own process.

The harness, in `serve` mode and confined as for one evaluation (harness.serve), starts

    python gepa_serve.py READ_FD WRITE_FD

in the private copy of the script's folder (`supervise`) and waits for it. The worker runs
the script up to its optimize_anything call (gepa_score.capture), then answers each request
of the host (evaluators/stateful.py): a JSON frame {"files": {path: text}, "entry": path,
"known": opt_state's JSON} gets one JSON frame back, the harness's result for that candidate
(gepa_score.to_result), with what the evaluator printed during that call. The host enforces
each call's time limit and, when a call never answers (a hang, a crash, os._exit, the memory
limit), ends the whole sandbox and starts a fresh one: its state is then lost.

Frames are a 4-byte big-endian length and the bytes (channel.py's framing), written here with
the stdlib alone: this folder is on the script's path, and only gepa_score is imported from it.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
import types
from typing import Any

LOG_TAIL = 4000  # characters of what one call printed, kept as artifacts (shinka_run's)
MAX_REQUEST = 64 << 20


def _read_exact(fd: int, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = os.read(fd, n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def recv(fd: int) -> Any:
    """The next request (EOFError: the host closed the channel)."""
    (n,) = struct.unpack("!i", _read_exact(fd, 4))
    if n < 0 or n > MAX_REQUEST:
        raise EOFError
    return json.loads(_read_exact(fd, n))


def send(fd: int, value: Any) -> None:
    data = json.dumps(value, default=repr).encode()
    frame = memoryview(struct.pack("!i", len(data)) + data)
    while frame:
        frame = frame[os.write(fd, frame) :]


def candidate_of(files: dict[str, str], entry: str, seed: Any) -> Any:
    """The candidate as the evaluator gets it: the text (newlines as a text-mode read gives
    them, as gepa_score.candidate_of reads its file), or for a dict seed each key's text."""

    def text(path: str) -> str:
        if path not in files:
            raise FileNotFoundError(f"the candidate has no file {path}")
        return files[path].replace("\r\n", "\n").replace("\r", "\n")

    return {key: text(key) for key in seed} if isinstance(seed, dict) else text(entry)


def _tail(f: Any) -> str:
    f.seek(max(0, os.fstat(f.fileno()).st_size - LOG_TAIL))
    return f.read().decode("utf-8", "replace").strip()


def _logs() -> tuple[str, str]:
    """Where one call's output goes: fixed files, so that `supervise` finds the last call's
    when that call ended its worker (a crash's message, a traceback)."""
    tmp = tempfile.gettempdir()
    return os.path.join(tmp, "gepa_call.out"), os.path.join(tmp, "gepa_call.err")


def _verdict(call: dict | None, failure: str | None, ask: dict) -> tuple[dict, dict]:
    """(correct.json, metrics.json) of the candidate `ask` carries, as gepa_score.main's."""
    import gepa_score  # beside this file, wherever the sandbox put it

    if call is None:
        return {"correct": False, "error": failure}, {}
    try:
        files = ask.get("files") or {}
        candidate = candidate_of(files, str(ask.get("entry")), call.get("seed_candidate"))
    except FileNotFoundError as e:
        return {"correct": False, "error": str(e)}, {}
    return gepa_score.judge(call, candidate, gepa_score.known_of(ask.get("known")))


def answer(call: dict | None, failure: str | None, ask: dict) -> dict:
    """One candidate's result, what it printed captured from descriptors 1 and 2."""
    import gepa_score  # beside this file, wherever the sandbox put it

    out_path, err_path = _logs()
    with open(out_path, "w+b") as out, open(err_path, "w+b") as err:
        saved = os.dup(1), os.dup(2)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(out.fileno(), 1)
        os.dup2(err.fileno(), 2)
        try:
            verdict, metrics = _verdict(call, failure, ask)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
        outcome = types.SimpleNamespace(
            returncode=0,
            problems=[],
            correct=verdict,
            metrics=metrics,
            stdout=_tail(out),
            stderr=_tail(err),
        )
    return gepa_score.to_result(outcome, "ok", "invalid", "runtime_error")


def main(argv: list[str]) -> int:
    """Import the script once, then answer requests until the host closes the channel."""
    import gepa_score  # beside this file, wherever the sandbox put it

    inp, out = int(argv[0]), int(argv[1])
    call, failure = None, None
    try:
        call = gepa_score.capture(os.environ.get(gepa_score.SCRIPT_ENV, "main.py"))
    except gepa_score.ScriptError as e:
        failure = str(e)  # every candidate fails with it, as each fresh import would
    while True:
        try:
            ask = recv(inp)
        except EOFError:
            return 0
        send(out, answer(call, failure, ask if isinstance(ask, dict) else {}))


def supervise(workdir: str, channel: tuple[int, int], stand_in: str | None) -> dict:
    """Run the worker in `workdir` on the host's channel until it exits; the harness's result:
    how it ended (the host reads it only when a call went unanswered)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (workdir, stand_in) if p)
    cmd = [sys.executable, os.path.abspath(__file__), *map(str, channel)]
    proc = subprocess.Popen(cmd, cwd=workdir, env=env, stdin=subprocess.DEVNULL, pass_fds=channel)
    for fd in channel:  # the worker's alone: its exit is the host's end of file
        os.close(fd)
    code = proc.wait()
    how = f"killed by signal {-code}" if code < 0 else f"exited with code {code}"
    artifacts = {"error": f"the GEPA script's worker {how}"}
    for name, path in zip(("private.stdout", "traceback"), _logs(), strict=True):
        try:
            with open(path, "rb") as f:
                text = _tail(f)
        except OSError:
            continue
        if text:
            artifacts[name] = text
    return {"status": "runtime_error", "score": None, "metrics": {}, "artifacts": artifacts}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
