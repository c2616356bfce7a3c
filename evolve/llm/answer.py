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


class BadAnswer(openai.OpenAIError):
    """The endpoint answered, but not with a well-formed completion; the message (one line)
    says what was wrong with it."""


class SlowAnswer(openai.OpenAIError):
    """The whole answer did not arrive within the request timeout (the SDK's timeout is
    per read: a trickle of bytes would never trip it)."""


@dataclass(frozen=True)
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int


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
    return Completion(content, _count(usage, "prompt_tokens"), _count(usage, "completion_tokens"))


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
