"""A scripted OpenAI-compatible chat server for tests and benchmarks.

Lets tests drive the real `openai` SDK over real HTTP with canned replies, so
they need no network, no API key and no mocks. Stdlib only.

    python -m evolve.testing.scripted_llm --port 8000 --replies replies.json
    python -m evolve.testing.scripted_llm --port 8000 --improve-binpack
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields

from evolve.testing.binpack_edits import BINPACK_VARIANTS
from evolve.testing.scripted_llm_http import Handler, Server, estimate_tokens, message_text

__all__ = [
    "BINPACK_VARIANTS",
    "tool_call",
    "FAULTS",
    "Reply",
    "Responder",
    "ScriptedLLM",
    "binpack_replies",
    "binpack_reply",
    "estimate_tokens",
]


@dataclass
class Reply:
    """One scripted answer; status != 200 sends an OpenAI-style error instead of content."""

    content: str = ""  # the completion, or the error message when status != 200
    status: int = 200  # 429 adds a "Retry-After: 0" header unless `headers` has its own
    delay_s: float = 0.0  # slept before answering (to trip client timeouts)
    prompt_tokens: int | None = None  # None: estimated as ceil(chars / 4)
    completion_tokens: int | None = None
    drop_connection: bool = False  # close the socket without any response
    headers: dict[str, str] | None = None  # extra headers on an error reply, e.g. Retry-After
    # An endpoint's faults (FAULTS below): each replaces part of a well-formed answer.
    raw: str | None = None  # the whole body as is (UTF-8; surrogateescape'd bytes kept raw)
    content_type: str = "application/json"  # of a `raw` body
    body: object = None  # a JSON value sent instead of the completion object
    choices: object = None  # sent as `choices` instead of the real list
    usage: object = None  # sent as `usage` instead of the counts
    trickle_s: float = 0.0  # the body sent a byte at a time, this long apart
    # Native tool calls, in OpenAI's wire format (tool_call() builds one); sent as the
    # message's `tool_calls`, with finish_reason "tool_calls".
    tool_calls: list[dict] | None = None

    @classmethod
    def from_dict(cls, d: dict) -> Reply:
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown Reply fields: {sorted(unknown)}")
        return cls(**d)


Responder = Callable[[dict], "Reply | str"]


def tool_call(name: str, call_id: str | None = None, **arguments: object) -> dict:
    """One native tool call as OpenAI sends it: the arguments as a JSON string."""
    return {
        "id": call_id or f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


# An endpoint's bad answers, each a status-200 reply that is not a well-formed completion
# (the reliability round of issue 37): the client must retry each like a transport error.
FAULTS: dict[str, Reply] = {
    "not_json": Reply(raw='{"id": "chatcmpl-1", "choices": [{"message": {"content": "unfinish'),
    "html": Reply(raw="<!DOCTYPE html><html><body><h1>502 Bad Gateway</h1></body></html>",
                  content_type="text/html"),
    "choices_str": Reply(choices="a string, not a list"),
    "choices_empty": Reply(choices=[]),
    "message_list": Reply(choices=[{"index": 0, "message": ["hi"], "finish_reason": "stop"}]),
    "content_number": Reply(choices=[{"index": 0, "message": {"role": "assistant", "content": 42}}]),
    "body_list": Reply(body=["not", "an", "object"]),
    "error_200": Reply(body={"error": {"message": "quota exceeded", "type": "insufficient_quota"}}),
    "usage_str": Reply("hello", usage={"prompt_tokens": "12", "completion_tokens": "many"}),
    "usage_negative": Reply("hello", prompt_tokens=-1_000_000, completion_tokens=-1_000_000),
    "usage_absurd": Reply("hello", prompt_tokens=10**15, completion_tokens=10**15),
    "usage_nan": Reply(raw='{"choices": [{"message": {"content": "hi"}}], '
                           '"usage": {"prompt_tokens": NaN, "completion_tokens": 1}}'),
    "lone_surrogate": Reply("print('\ud800')"),
    "not_utf8": Reply(raw='{"choices": [{"message": {"content": "caf\udce9"}}]}'),
    "huge": Reply("x" * (20 * 1024 * 1024)),  # 20 MB
}  # fmt: skip


def _echo(request: dict) -> Reply:
    messages = request.get("messages") or [{}]
    return Reply(content=message_text(messages[-1].get("content")))


class ScriptedLLM:
    """OpenAI-compatible server (daemon thread) whose replies come from `responder`.

    The responder gets each parsed chat request and returns a Reply (or a str,
    the content); the default echoes the last message. Thread-safe records:
    `requests` (every chat request body plus "_ts", its time.time() arrival, and
    "_authorization", its Authorization header, in arrival order) and `counters`.
    """

    def __init__(
        self,
        responder: Responder | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        models: Iterable[str] = ("scripted",),
        key: str | None = None,
    ):
        self.responder = responder or _echo
        self.host, self.port, self.models = host, port, list(models)
        self.key = key  # a key every request must bear (HTTP 401 otherwise); None: any
        self._lock = threading.Lock()
        self._requests: list[dict] = []
        names = "chat ok error dropped bad_request models prompt_tokens completion_tokens"
        self._counters = dict.fromkeys(names.split(), 0)
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()

    @classmethod
    def from_list(
        cls,
        replies: Iterable[Reply | str | dict],
        then: Reply | str | Responder | None = None,
        **kwargs,
    ) -> ScriptedLLM:
        """Serve `replies` in order; afterwards cycle them (then=None), repeat `then`
        (a Reply or str) forever, or hand over to `then` (a responder)."""
        script = [Reply.from_dict(r) if isinstance(r, dict) else r for r in replies]
        if not script and then is None:
            raise ValueError("from_list needs replies or a `then`")
        queue = itertools.cycle(script) if then is None else iter(script)
        lock = threading.Lock()

        def responder(request: dict) -> Reply | str:
            with lock:
                nxt = next(queue, None)
            if nxt is not None:
                return nxt
            if then is None:  # the script ran out (only reached when `then` was given)
                raise RuntimeError("scripted replies exhausted")
            return then(request) if callable(then) else then

        return cls(responder, **kwargs)

    def start(self) -> str:
        """Bind (port 0 = a free port), serve in a daemon thread, return the base URL."""
        if self._server is None:
            self._stopping.clear()
            handler = type("BoundHandler", (Handler,), {"llm": self})
            self._server = Server((self.host, self.port), handler)
            self.port = self._server.server_address[1]
            self._thread = threading.Thread(
                target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self.base_url

    def stop(self) -> None:
        """Stop serving; replies still sleeping out their delay_s hang up at once."""
        if self._server is not None:
            self._stopping.set()
            self._server.shutdown()
            self._server.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._server = self._thread = None

    def __enter__(self) -> ScriptedLLM:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return list(self._requests)

    @property
    def counters(self) -> dict[str, int]:
        """Requests by outcome (chat, ok, error, dropped, bad_request, models) and
        the prompt/completion token totals reported in usage."""
        with self._lock:
            return dict(self._counters)

    def reset(self) -> None:
        """Forget recorded requests and zero the counters (the script keeps its place)."""
        with self._lock:
            self._requests.clear()
            self._counters = dict.fromkeys(self._counters, 0)

    # used by scripted_llm_http.Handler -------------------------------------
    def _reply_for(self, request: dict) -> Reply:
        reply = self.responder(request)
        return Reply(content=reply) if isinstance(reply, str) else reply

    def _count(self, **increments: int) -> None:
        with self._lock:
            for key, n in increments.items():
                self._counters[key] += n

    def _record(self, body: dict, authorization: str | None = None) -> None:
        with self._lock:
            self._requests.append({**body, "_ts": time.time(), "_authorization": authorization})
            self._counters["chat"] += 1


def binpack_reply(name: str) -> Reply:
    """The canned reply for one BINPACK_VARIANTS entry: a note plus a fenced EVOLVE block."""
    note, code = next((n, c) for v, n, c in BINPACK_VARIANTS if v == name)
    block = f"# EVOLVE-BLOCK-START\n{code}# EVOLVE-BLOCK-END\n"
    return Reply(content=f"{note}\n\n```python\n{block}```\n")


def binpack_replies() -> list[Reply]:
    """All canned binpack replies in BINPACK_VARIANTS order, best fit first."""
    return [binpack_reply(name) for name, _, _ in BINPACK_VARIANTS]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--replies", help="JSON file: a list of Reply dicts, served in a cycle")
    mode.add_argument(
        "--improve-binpack", action="store_true", help="cycle the canned binpack edits"
    )
    args = parser.parse_args(argv)
    if args.replies:
        with open(args.replies) as f:
            replies = [Reply.from_dict(d) for d in json.load(f)]
    else:
        replies = binpack_replies()
    llm = ScriptedLLM.from_list(replies, host=args.host, port=args.port)
    print(f"ScriptedLLM serving {len(replies)} replies at {llm.start()}", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        llm.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
