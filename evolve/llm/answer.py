"""An endpoint's answer is untrusted input: read it bounded, check it, or call it bad.

A chat completion is read from the wire here, not by the SDK's parser, so that a body over
the reply cap is never held whole, and an answer that is not a well-formed completion (not
UTF-8, not JSON, an HTML page, `choices` of the wrong type, usage that is not a count, a
lone surrogate in the text) is a BadAnswer: the client retries it like a transport error
and the archive records why, instead of the run ending on an exception from deep inside.
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass

import openai

DEFAULT_MAX_REPLY_BYTES = 256 * 1024  # a completion of max_tokens=4096 is ~20 KB of JSON
MAX_USAGE_TOKENS = 10_000_000  # more tokens in one call than any context window: not a count
_EXCERPT = 60  # characters of a bad body quoted in its reason
MAX_TOOL_CALLS = 8  # tool calls kept of one answer (the rest are dropped)
MAX_TOOL_NAME = 64  # characters of a tool's name
MAX_TOOL_ID = 256  # characters of a tool call's id (sent back as it came: never cut)


class BadAnswer(openai.OpenAIError):
    """The endpoint answered, but not with a well-formed completion; the message (one line)
    says what was wrong with it."""


class SlowAnswer(openai.OpenAIError):
    """The whole answer did not arrive within the request timeout (the SDK's timeout is
    per read: a trickle of bytes would never trip it)."""


@dataclass(frozen=True)
class ToolCall:
    """One native tool call of an answer (OpenAI's `tool_calls[i]`): its id, the function's
    name and its arguments as the JSON text the model wrote (unchecked: the caller parses)."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True)
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[ToolCall, ...] = ()


async def read_body(chunks: AsyncIterator[bytes], declared: str | None, cap: int) -> bytes:
    """The body, or BadAnswer as soon as it (or its Content-Length) passes `cap` bytes:
    what is over the cap is never read, let alone kept."""
    if declared is not None and declared.strip().isdigit() and int(declared) > cap:
        raise BadAnswer(f"reply of {int(declared):,} bytes is over the {cap:,}-byte reply cap")
    body, size = [], 0
    async for chunk in chunks:
        size += len(chunk)
        if size > cap:
            raise BadAnswer(f"reply over the {cap:,}-byte reply cap")
        body.append(chunk)
    return b"".join(body)


def parse_completion(body: bytes, content_type: str | None = None) -> Completion:
    """The first choice's text and the usage counts of a chat completion body."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BadAnswer(f"body is not UTF-8 (byte {e.start})") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as e:
        kind = (content_type or "no content type").split(";")[0].strip()
        why = str(e).splitlines()[0][:80] if isinstance(e, ValueError) else "nested too deeply"
        raise BadAnswer(f"body is not JSON ({kind}: {why}); it begins {_excerpt(text)}") from None
    if not isinstance(data, dict):
        raise BadAnswer(f"body is a JSON {_kind(data)}, not a completion object")
    if "choices" not in data and isinstance(data.get("error"), dict | str):
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise BadAnswer(f"an error with status 200: {_excerpt(str(message))}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadAnswer(f"`choices` is {_described(choices)}, expected a non-empty list")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        where = "`choices[0]`" if not isinstance(first, dict) else "`choices[0].message`"
        found = first if not isinstance(first, dict) else message
        raise BadAnswer(f"{where} is {_described(found)}, expected an object")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise BadAnswer(f"`choices[0].message.content` is {_described(content)}, expected text")
    content = content or ""
    _check_unicode(content)
    usage = data.get("usage")
    if usage is not None and not isinstance(usage, dict):
        raise BadAnswer(f"`usage` is {_described(usage)}, expected an object")
    usage = usage or {}
    calls = _tool_calls(message.get("tool_calls"))
    return Completion(
        content, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"), calls
    )


TOOL_CALLS_MARK = "\n\n[tool calls] "  # stored replies: the content, this, the calls' JSON


def stored_tool_reply(content: str, calls: tuple[ToolCall, ...]) -> str:
    """How the archive stores an answer asked with `tools` (llm_calls.reply): its text, then
    TOOL_CALLS_MARK and its tool calls as JSON, always (even none), so the last mark is ours."""
    listed = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]
    return content + TOOL_CALLS_MARK + json.dumps(listed)


def read_tool_reply(stored: str) -> tuple[str, tuple[ToolCall, ...]]:
    """stored_tool_reply's text and calls back; a text without the mark is all content."""
    content, mark, tail = stored.rpartition(TOOL_CALLS_MARK)
    if not mark:
        return stored, ()
    try:
        listed = json.loads(tail)
        calls = tuple(ToolCall(str(c["id"]), str(c["name"]), str(c["arguments"])) for c in listed)
    except (ValueError, TypeError, KeyError, RecursionError):
        return stored, ()
    return content, calls


def _tool_calls(raw: object) -> tuple[ToolCall, ...]:
    """`message.tool_calls` as ToolCalls (the first MAX_TOOL_CALLS); absent or null: none."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise BadAnswer(f"`choices[0].message.tool_calls` is {_described(raw)}, expected a list")
    calls = []
    for i, item in enumerate(raw[:MAX_TOOL_CALLS]):
        item = item if isinstance(item, dict) else {}
        fn = item.get("function")
        if not isinstance(fn, dict):
            raise BadAnswer(f"`tool_calls[{i}].function` is {_described(fn)}, expected an object")
        name, args, cid = fn.get("name"), fn.get("arguments"), item.get("id")
        if not isinstance(name, str) or not 0 < len(name) <= MAX_TOOL_NAME:
            raise BadAnswer(f"`tool_calls[{i}].function.name` is {_described(name)}")
        if isinstance(args, dict):  # some servers send the object itself
            args = json.dumps(args)
        if args is None:
            args = "{}"
        if not isinstance(args, str):
            raise BadAnswer(f"`tool_calls[{i}].function.arguments` is {_described(args)}")
        cid = cid if isinstance(cid, str) and cid else f"call_{i}"
        if len(cid) > MAX_TOOL_ID:
            raise BadAnswer(f"`tool_calls[{i}].id` is over {MAX_TOOL_ID} characters")
        for text in (name, args, cid):
            _check_unicode(text)
        calls.append(ToolCall(cid, name, args))
    return tuple(calls)


def _check_unicode(content: str) -> None:
    """A lone surrogate (JSON's `\\ud800`) is no character: the archive could not store it."""
    try:
        content.encode("utf-8")
    except UnicodeEncodeError as e:
        raise BadAnswer(
            f"the reply's text is not valid Unicode (a lone surrogate U+{ord(content[e.start]):04X}"
            f" at character {e.start})"
        ) from None


def _count(usage: dict, key: str) -> int:
    """A token count: a whole number within [0, MAX_USAGE_TOKENS]; absent counts as 0."""
    v = usage.get(key)
    if v is None:
        return 0
    if isinstance(v, float) and math.isfinite(v) and v.is_integer():
        v = int(v)
    if not isinstance(v, int) or isinstance(v, bool):
        raise BadAnswer(f"`usage.{key}` is {_described(v)}, expected a whole number")
    if not 0 <= v <= MAX_USAGE_TOKENS:
        raise BadAnswer(f"`usage.{key}` is {v}, expected 0 to {MAX_USAGE_TOKENS:,} tokens")
    return v


def _kind(v: object) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number"
    )


def _described(v: object) -> str:
    if v is None:
        return "missing"
    if isinstance(v, list | dict):
        return f"a JSON {_kind(v)} of {len(v)} items" if v else f"an empty JSON {_kind(v)}"
    return f"a JSON {_kind(v)} ({_excerpt(json.dumps(v))})"


def _excerpt(text: str) -> str:
    """The first characters of untrusted text, quoted and ASCII-escaped: safe in one line."""
    return ascii(text[:_EXCERPT]) + ("..." if len(text) > _EXCERPT else "")
