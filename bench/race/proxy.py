"""A counting proxy with a budget of LLM calls, in front of the shared model server.

bench/local_model.py's CountingProxy only counts; the race also has to stop a peer at exactly
N answered calls. A chat completion is forwarded only while fewer than N are answered or in
flight; past that the proxy answers at once, without the model, with an empty completion
(`finish_reason: "stop"`, zero tokens, header `X-Race-Refused: 1`). Every peer takes an empty
reply as a failed proposal and goes on, where an HTTP error would not be cheap: ShinkaEvolve
retries an error status up to 20 times with backoff, three times over. A forwarded call that
the server does not answer with 200 frees its place (it is not a call made); with
`empty_on_client_error` a 4xx from the server (a prompt past the model's window) also
reaches the peer as an empty reply.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOP_HEADERS = ("host", "content-length", "transfer-encoding", "connection")


class BudgetProxy:
    """Forward to 127.0.0.1:upstream_port; record every chat completion; refuse past `budget`."""

    def __init__(self, upstream_port: int, budget: int | None = None,
                 empty_on_client_error: bool = False):
        self.upstream = upstream_port
        self.budget = budget
        self.empty_on_client_error = empty_on_client_error  # a 4xx reaches the peer as ""
        self.calls: list[dict] = []  # answered (200) chat completions
        self.refused = 0
        self.failed = 0  # forwarded, answered with an error status (not counted as calls)
        self._held = 0  # answered + in flight
        self._lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # ---- budget ----------------------------------------------------------------------------
    def _take_slot(self) -> bool:
        with self._lock:
            if self.budget is not None and self._held >= self.budget:
                self.refused += 1
                return False
            self._held += 1
            return True

    def _settle(self, status: int, record: dict) -> None:
        with self._lock:
            if status == 200:
                self.calls.append(record)
            else:
                self._held -= 1
                self.failed += 1

    # ---- HTTP ------------------------------------------------------------------------------
    def _handler(self):
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                self._forward("GET")

            def do_POST(self):
                self._forward("POST")

            def _forward(self, method: str) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else None
                is_chat = method == "POST" and self.path.rstrip("/").endswith("/chat/completions")
                if is_chat and not proxy._take_slot():
                    self._reply(200, refusal(body), {"Content-Type": "application/json",
                                                     "X-Race-Refused": "1"})
                    return
                t0, start = time.monotonic(), time.time()
                try:
                    status, headers, data = _send(proxy.upstream, method, self.path, body, self.headers)
                except OSError as e:  # the server went away: a 502 the client may retry
                    status, headers, data = 502, {}, json.dumps({"error": str(e)}).encode()
                if is_chat:
                    proxy._settle(status, call_record(data, start, time.monotonic() - t0))
                    if proxy.empty_on_client_error and 400 <= status < 500:
                        headers = {"Content-Type": "application/json", "X-Race-Upstream-Error": str(status)}
                        status, data = 200, refusal(body)
                self._reply(status, data, headers)

            def _reply(self, status: int, data: bytes, headers: dict) -> None:
                self.send_response(status)
                for k, v in headers.items():
                    if k.lower() not in HOP_HEADERS:
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        return Handler


def _send(port: int, method: str, path: str, body: bytes | None, headers) -> tuple[int, dict, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    try:
        hdrs = {k: v for k, v in headers.items() if k.lower() not in HOP_HEADERS}
        conn.request(method, path, body=body, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


def call_record(data: bytes, start: float, latency_s: float) -> dict:
    """What the race keeps of one answered call: when, how long, how many tokens."""
    rec = {"start": start, "latency_s": latency_s, "prompt_tokens": 0, "completion_tokens": 0}
    try:
        usage = json.loads(data).get("usage") or {}
        rec["prompt_tokens"] = int(usage.get("prompt_tokens") or 0)
        rec["completion_tokens"] = int(usage.get("completion_tokens") or 0)
    except (ValueError, AttributeError, TypeError):
        pass
    return rec


def refusal(body: bytes | None) -> bytes:
    """An OpenAI-shaped completion with empty content: the budget is spent."""
    try:
        model = json.loads(body or b"{}").get("model") or "local"
    except (ValueError, AttributeError):
        model = "local"
    return json.dumps({
        "id": "race-refused", "object": "chat.completion", "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": ""}}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }).encode()
