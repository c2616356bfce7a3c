"""One look at each endpoint before a run spends anything on it.

A wrong URL, key or model name would otherwise be found only after the seed's evaluation
and every retry (half a minute, and a failed run in the archive). `GET /models` is the
smallest request every OpenAI-compatible server answers and none bills: a refused
connection, an HTTP 401/403, or a model the endpoint does not list (where it lists
several) is one line before anything is written. A slow, odd or missing answer is no
verdict: the run goes on and its calls retry as they always did.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

import openai

PROBE_TIMEOUT_S = 2.0
OPENAI_URL = "https://api.openai.com/v1"


class EndpointRefused(ValueError):
    """The endpoint cannot serve the run: the message is the one line to show."""


@dataclass(frozen=True)
class Endpoint:
    """Where some of a run's models are sent, with the key they are sent with."""

    base_url: str | None  # None: OpenAI's own (the SDK's default)
    key: str | None
    key_source: str  # what to set for a better key: "OPENAI_API_KEY", "config.yaml: llm.api_key"
    models: tuple[str, ...]

    @property
    def url(self) -> str:
        return self.base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL


def probe(endpoint: Endpoint, timeout_s: float = PROBE_TIMEOUT_S) -> list[str]:
    """Lines worth saying about `endpoint` (none when all is well); EndpointRefused when the
    run cannot go on."""
    if endpoint.key is None and endpoint.url == OPENAI_URL:
        raise EndpointRefused(
            f"--model {', '.join(endpoint.models)}: {OPENAI_URL} needs a key and "
            "OPENAI_API_KEY is not set; set it, or point --api-base at an endpoint of your own"
        )
    client = openai.OpenAI(
        api_key=endpoint.key or "not-needed",
        base_url=endpoint.url,
        timeout=timeout_s,
        max_retries=0,
    )
    where = f"{endpoint.url}/models"
    try:
        listed = [m.id for m in client.models.list().data]
    except openai.APITimeoutError:
        return [f"{where}: no answer within {timeout_s:g} s; going on (the calls retry)"]
    except openai.APIConnectionError as e:
        raise EndpointRefused(
            f"LLM endpoint unreachable: {endpoint.url} ({_cause(e)}); is the server running "
            "there? (--api-base URL, or $OPENAI_BASE_URL)"
        ) from None
    except (openai.AuthenticationError, openai.PermissionDeniedError) as e:
        raise EndpointRefused(
            f"LLM endpoint {endpoint.url}: authentication failed (HTTP {e.status_code}): "
            f"the endpoint refused the key; set {endpoint.key_source} to a key it accepts"
        ) from None
    except openai.NotFoundError:
        return [
            f"{where}: HTTP 404; if every call fails, check the URL (an OpenAI-compatible "
            "server's usually ends in /v1)"
        ]
    except (openai.OpenAIError, ValueError, TypeError, AttributeError):
        return []  # an odd answer to a request the run never makes: no verdict
    finally:
        client.close()
    return _unlisted(endpoint, [i for i in listed if isinstance(i, str)])


def _unlisted(endpoint: Endpoint, listed: list[str]) -> list[str]:
    """The run's models the endpoint does not list: refused where it lists several (a router
    picks by name and refuses the rest), a line where it lists one (llama.cpp's servers
    answer any name with the model they hold; vLLM refuses)."""
    missing = [m for m in endpoint.models if not _served(m, listed)]
    if not missing or not listed:
        return []
    names = ", ".join(listed[:8]) + (f" and {len(listed) - 8} more" if len(listed) > 8 else "")
    if len(listed) > 1:
        raise EndpointRefused(
            f"--model {missing[0]}: {endpoint.url} does not serve it (it lists {names}); "
            "name one of those"
        )
    return [f"--model {', '.join(missing)}: {endpoint.url} lists only {names}; going on"]


def _served(model: str, listed: Iterable[str]) -> bool:
    """Ollama's `name` is `name:latest`; LiteLLM lists routes such as `openai/*`."""
    for name in listed:
        if model == name or f"{model}:latest" == name:
            return True
        if name.endswith("*") and model.startswith(name[:-1]):
            return True
    return False


def _cause(e: openai.APIConnectionError) -> str:
    """The transport's reason ("connection refused", "name not known"), not the SDK's
    generic "Connection error."."""
    inner = e.__cause__
    while inner is not None and inner.__cause__ is not None:
        inner = inner.__cause__
    text = str(inner or e).strip() or "connection error"
    for marker in ("] ", "Errno"):
        if marker in text:
            text = text.split(marker)[-1].lstrip("0123456789] ")
    return text.rstrip(".").lower()
