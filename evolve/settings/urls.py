"""Endpoint URLs: checked where they are given, so a typo is one line, not an error per request."""

from __future__ import annotations

from urllib.parse import urlsplit


def check_url(url: str) -> str | None:
    """None if `url` is an http(s) URL with a host, else what is wrong, for one line."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (raises ValueError on a bad port)
    except ValueError:
        parts = None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or " " in url:
        return "expected an http(s) URL like http://127.0.0.1:8000/v1"
    return None
