"""HTTP side of evolve/testing/scripted_llm.py: OpenAI's chat wire format, nothing scripted.

Kept apart so the scripting API stays small. The handler talks to its
ScriptedLLM (class attribute `llm`) only through `_reply_for`, `_record`,
`_count`, `_stopping` and `models`, and reads replies by attribute.
"""

from __future__ import annotations

import json
import math
import socket
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# status -> (error type, error code), shaped like api.openai.com's error bodies
ERRORS = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", "internal_error"),
    503: ("server_error", "overloaded"),
}


def estimate_tokens(text: str) -> int:
    """The default usage estimate: one token per four characters."""
    return math.ceil(len(text) / 4)


def message_text(content: object) -> str:
    """Message content as text (plain string or a list of content parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def handle_error(self, request, client_address) -> None:
        if not isinstance(sys.exc_info()[1], OSError):  # clients hanging up are expected
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real API servers do
    server_version = "ScriptedLLM/1.0"
    llm: Any = None  # the ScriptedLLM, set per server by ScriptedLLM.start()

    def log_message(self, format: str, *args) -> None:
        pass

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:
            pass

    def _send_json(self, status: int, payload: object, headers: dict | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), headers=headers)

    def _send(
        self,
        status: int,
        data: bytes,
        content_type: str = "application/json",
        headers: dict | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            trickle = getattr(self, "trickle_s", 0.0)
            if trickle <= 0:
                self.wfile.write(data)
            for i in range(len(data) if trickle > 0 else 0):  # a slow endpoint's body
                self.wfile.write(data[i : i + 1])
                self.wfile.flush()
                if self.llm._stopping.wait(trickle):
                    break
        except OSError:
            self.close_connection = True

    def _error(
        self,
        status: int,
        message: str,
        code: str | None = None,
        param: str | None = None,
        headers: dict | None = None,
    ):
        fallback = ("server_error" if status >= 500 else "invalid_request_error", None)
        etype, default_code = ERRORS.get(status, fallback)
        error = {"message": message, "type": etype, "param": param, "code": code or default_code}
        sent = {"Retry-After": "0"} if status == 429 else {}
        if headers:  # the reply's own headers replace the default (any case)
            sent = {k: v for k, v in sent.items() if k.lower() not in {h.lower() for h in headers}}
            sent.update(headers)
        self._send_json(status, {"error": error}, sent or None)

    def _refused(self) -> bool:
        """HTTP 401, as OpenAI answers, when the server wants a key and was sent another."""
        want = self.llm.key
        if want is None or self.headers.get("Authorization") == f"Bearer {want}":
            return False
        self._error(401, "Incorrect API key provided", "invalid_api_key")
        return True

    def do_GET(self) -> None:
        if self.path.rstrip("/") != "/v1/models":
            return self._error(404, f"no route GET {self.path}", "not_found")
        if self._refused():
            return None
        self.llm._count(models=1)
        data = [
            {"id": m, "object": "model", "created": 0, "owned_by": "scripted"}
            for m in self.llm.models
        ]
        self._send_json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") != "/v1/chat/completions":
            return self._error(404, f"no route POST {self.path}", "not_found")
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if not isinstance(body, dict):
            self.llm._count(bad_request=1)
            return self._error(400, "request body must be a JSON object")
        self.llm._record(body, self.headers.get("Authorization"))
        if self._refused():
            return None
        if body.get("stream"):
            self.llm._count(bad_request=1)
            msg = "ScriptedLLM does not support stream=true"
            return self._error(400, msg, "unsupported_value", "stream")
        try:
            reply = self.llm._reply_for(body)
        except Exception as e:  # a broken script is reported, not hung on
            self.llm._count(error=1)
            return self._error(500, f"responder raised {type(e).__name__}: {e}")
        stopping = reply.delay_s > 0 and self.llm._stopping.wait(reply.delay_s)
        self.trickle_s = getattr(reply, "trickle_s", 0.0)
        if reply.drop_connection or stopping:
            self.llm._count(dropped=1)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return None
        written = getattr(reply, "raw", None)
        if written is not None:  # a body as the script wrote it, well-formed or not
            self.llm._count(ok=1)
            data = written.encode("utf-8", "surrogateescape")
            return self._send(reply.status, data, getattr(reply, "content_type", "text/plain"))
        if reply.status != 200:
            self.llm._count(error=1)
            message = reply.content or f"scripted error {reply.status}"
            return self._error(reply.status, message, headers=getattr(reply, "headers", None))
        self._complete(body, reply)

    def _complete(self, body: dict, reply) -> None:
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        prompt = "".join(message_text(m.get("content")) for m in messages)
        p_tok = reply.prompt_tokens
        p_tok = estimate_tokens(prompt) if p_tok is None else p_tok
        c_tok = reply.completion_tokens
        c_tok = estimate_tokens(reply.content) if c_tok is None else c_tok
        self.llm._count(ok=1, prompt_tokens=p_tok, completion_tokens=c_tok)
        message = {"role": "assistant", "content": reply.content, "refusal": None}
        calls = getattr(reply, "tool_calls", None)
        if calls:
            message["tool_calls"] = calls
        finish = "tool_calls" if calls else "stop"
        choices = [
            {"index": i, "message": message, "finish_reason": finish, "logprobs": None}
            for i in range(max(1, int(body.get("n") or 1)))
        ]
        usage = {"prompt_tokens": p_tok, "completion_tokens": c_tok, "total_tokens": p_tok + c_tok}
        if getattr(reply, "body", None) is not None:  # a fault: another JSON value entirely
            return self._send_json(200, reply.body)
        self._send_json(200, {
            "id": f"chatcmpl-scripted-{self.llm.counters['chat']}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model") or self.llm.models[0],
            "choices": choices if getattr(reply, "choices", None) is None else reply.choices,
            "usage": usage if getattr(reply, "usage", None) is None else reply.usage,
        })  # fmt: skip
