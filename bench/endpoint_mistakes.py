"""Time from `evolve run` to its error line for each endpoint mistake (issue 42 item 1).

    .venv/bin/python bench/endpoint_mistakes.py [--repeats 3] [--out FILE]

Each mistake is a real `evolve run` of a shipped problem in a fresh process with an empty
runs folder: an unreachable endpoint, a key the endpoint refuses (HTTP 401), a model the
endpoint does not serve, and a hosted model with no OPENAI_API_KEY. The servers are small
HTTP servers on 127.0.0.1 started here, answering as OpenAI does. The baseline, measured in
the same run, is a mistake that needs no network at all (a misspelt flag value), so the ratio
is what the endpoint check costs over the command's own start. Prints the median of each
and writes a JSON file (bench/results/endpoint_mistakes.json by default).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from harness import result_path  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PROBLEM = ROOT / "problems" / "binpack"


class _Endpoint(BaseHTTPRequestHandler):
    """401 for every request when `refuse_key`; else two models listed."""

    refuse_key = False

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:
        if self.refuse_key:
            self._json(401, {"error": {"message": "Incorrect API key", "code": "invalid_api_key"}})
        else:
            models = [{"id": m, "object": "model", "owned_by": "x"} for m in ("qwen-7b", "llama-8b")]
            self._json(200, {"object": "list", "data": models})

    do_POST = do_GET

    def _json(self, status: int, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _serve(refuse_key: bool) -> str:
    handler = type("Handler", (_Endpoint,), {"refuse_key": refuse_key})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def _timed(argv: list[str], env: dict) -> tuple[float, int, str]:
    with tempfile.TemporaryDirectory() as runs:
        start = time.perf_counter()
        r = subprocess.run(
            [sys.executable, "-m", "evolve.cli", "run", str(PROBLEM), *argv, "--runs-dir", runs],
            capture_output=True,
            text=True,
            env=env,
            cwd=ROOT,
            timeout=300,
        )
        took = time.perf_counter() - start
    lines = r.stderr.strip().splitlines()
    return took, r.returncode, lines[-1] if lines else ""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=result_path("endpoint_mistakes"))
    args = ap.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "EVOLVE_"))}
    listing, refusing = _serve(False), _serve(True)
    scripted = ["--model", "scripted", "--no-progress"]
    cases = {
        "baseline: a misspelt flag value (no network)": (["--parallel", "0", *scripted], env),
        "unreachable endpoint (--api-base http://127.0.0.1:1/v1)": (
            ["--api-base", "http://127.0.0.1:1/v1", *scripted],
            env,
        ),
        "key refused (HTTP 401)": (
            ["--api-base", refusing, *scripted],
            {**env, "OPENAI_API_KEY": "sk-wrong"},
        ),
        "model not served (the endpoint lists two others)": (
            ["--api-base", listing, *scripted],
            env,
        ),
        "hosted model, no OPENAI_API_KEY (--model gpt-4.1-mini)": (
            ["--model", "gpt-4.1-mini", "--no-progress"],
            env,
        ),
    }
    rows = []
    base: float | None = None
    for name, (argv, case_env) in cases.items():
        runs = [_timed(argv, case_env) for _ in range(args.repeats)]
        median = statistics.median(t for t, _, _ in runs)
        base = median if base is None else base
        rows.append(
            {
                "case": name,
                "median_s": round(median, 3),
                "ratio_to_baseline": round(median / base, 2),
                "exit_codes": sorted({c for _, c, _ in runs}),
                "error_line": runs[-1][2],
            }
        )
        print(f"{median:6.2f} s  x{median / base:4.2f}  exit {runs[-1][1]}  {name}")
        print(f"          {runs[-1][2]}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "date": dt.date.today().isoformat(),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores",
                "load_1min": os.getloadavg()[0],
                "repeats": args.repeats,
                "rows": rows,
            },
            indent=2,
        )
        + "\n"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
