"""Secrets out of everything an evaluation reports, at the one place its text enters the run.

An OpenEvolve or ShinkaEvolve evaluator runs the candidate in its own process, beside the
`--env` values it was given: a candidate can print `os.environ` or raise with a token, and
what it writes becomes artifacts, which reach the next prompt, the archive, exports, the web
view and `evolve eval`'s output. CandidateEvaluator (evolve/pipeline/evaluation.py) passes every
result through a Redactor before anyone sees it, so each of those inherits the redaction.

What is secret: every value handed to the evaluator's environment (`--env`, the folder's
`env`), the run's private data seed, and the endpoint keys the run holds ($OPENAI_API_KEY,
config.yaml's `api_key`s). Each is recognised as written, interleaved with invisible
characters, JSON/repr/URL-escaped, reversed, as hex and as base64 (at any alignment, so it
is found inside a larger encoded blob), and as a prefix or suffix of a text cut at its edges.
This is a net for the ways a value leaks by accident or by a naive candidate, not a proof:
a candidate that holds a secret can always re-encode it (split it, XOR it) past any filter,
so a value a candidate must never learn should not be given to an evaluator it shares a
process with. Values under MIN_CHARS characters are not redacted (they would blank out
ordinary text).
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Iterable
from dataclasses import replace
from urllib.parse import quote, quote_plus

from evaluators.sandbox import EvalResult
from evolve.settings.environ import SettingsError, resolve_key

MARK = "[redacted]"
MIN_CHARS = 4  # shorter values are not redacted: "1", "on", "yes" are everywhere
PARTIAL_MIN = 6  # a secret cut at a text's edge is redacted from this many characters on
# Characters a display hides: zero-width, bidi, soft hyphen, variation selectors, C0 controls
# but tab and newlines. A secret spelled with them between its characters is still found.
_INVISIBLE = (
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\ufe00-\ufe0f\ufeff\x00-\x08\x0b\x0c\x0e-\x1f\x7f]"
)
_HAS_INVISIBLE = re.compile(_INVISIBLE)
# The marks a text cut short carries (harness_result._clip, tail(), the harness's "[...]").
_CUT_HEAD = re.compile(r"\A\[\.\.\.[^\]\n]{0,60}\]\n?")
_CUT_TAIL = re.compile(r"\[\.\.\.[^\]\n]{0,60}\]\Z")


def _base64_forms(raw: bytes) -> set[str]:
    """The secret's base64 in standard and URL-safe alphabets: whole (padded), and the
    characters that depend on its bytes alone at each of the three alignments it can have
    inside a longer encoded text."""
    forms = set()
    n = len(raw)
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms.add(encode(raw).decode())
        for k in range(3):
            enc = encode(b"\0" * k + raw).decode()
            forms.add(enc[(8 * k + 5) // 6 : 8 * (k + n) // 6])
    return forms


def forms(secret: str) -> set[str]:
    """The spellings of `secret` redacted as they stand (each at least MIN_CHARS long)."""
    raw = secret.encode("utf-8", "surrogatepass")
    out = {
        secret,
        secret[::-1],
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(json.dumps(secret))[3:-3],  # JSON inside JSON
        repr(secret)[1:-1],
        ascii(secret)[1:-1],
        repr(raw)[2:-1],
        quote(secret, safe=""),
        quote_plus(secret, safe=""),
        raw.hex(),
        raw.hex().upper(),
        *_base64_forms(raw),
    }
    if secret.isascii() and secret.isdigit():  # a seed: also as the number in hex
        out |= {format(int(secret), "x"), format(int(secret), "X")}
    return {f for f in out if len(f) >= MIN_CHARS}


class Redactor:
    """Replaces every form of its secrets in a text with MARK."""

    def __init__(self, secrets: Iterable[str | None]):
        values = sorted({s for s in secrets if s and len(s) >= MIN_CHARS}, key=len, reverse=True)
        self.secrets = tuple(values)
        self._forms = sorted({f for s in values for f in forms(s)}, key=len, reverse=True)
        spelled = [f"{_INVISIBLE}*".join(map(re.escape, s)) for s in values]
        self._spaced = re.compile("|".join(spelled)) if spelled else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def text(self, text: str) -> str:
        if not self.secrets or not text:
            return text
        for _ in range(4):  # a replacement can, at worst, join the text around it into another
            before = text
            for f in self._forms:
                if f in text:
                    text = text.replace(f, MARK)
            if self._spaced is not None and _HAS_INVISIBLE.search(text):
                text = self._spaced.sub(MARK, text)
            text = self._edges(text)
            if text == before:
                break
        return text

    def _edges(self, text: str) -> str:
        """A secret cut by a text's truncation: its suffix where the text (after a cut mark)
        begins, its prefix where it ends."""
        head = _CUT_HEAD.match(text)
        start = head.end() if head else 0
        tail = _CUT_TAIL.search(text, start)
        end = tail.start() if tail else len(text)
        for s in self.secrets:
            for k in range(len(s) - 1, PARTIAL_MIN - 1, -1):
                if text.startswith(s[-k:], start, end):
                    text = text[:start] + MARK + text[start + k :]
                    end += len(MARK) - k
                    break
            for k in range(len(s) - 1, PARTIAL_MIN - 1, -1):
                if text.endswith(s[:k], start, end):
                    text = text[: end - k] + MARK + text[end:]
                    end += len(MARK) - k
                    break
        return text

    def result(self, res: EvalResult) -> EvalResult:
        """`res` with its texts redacted: artifacts, and the names of metrics and stages
        (a candidate sharing the evaluator's process can choose those too)."""
        if not self.secrets:
            return res
        t = self.text
        return replace(
            res,
            metrics={t(k): v for k, v in res.metrics.items()},
            artifacts={t(k): t(v) for k, v in res.artifacts.items()},
            scores={t(k): v for k, v in res.scores.items()},
        )


def folder_keys(specs: Iterable[str | None]) -> list[str]:
    """The endpoint keys a run could hold: $OPENAI_API_KEY, and each config.yaml `api_key`
    ("${VAR}": VAR's value, where it is set)."""
    keys = [os.environ.get("OPENAI_API_KEY")]
    for spec in specs:
        try:
            keys.append(resolve_key(spec, "api_key"))
        except SettingsError:  # a variable that is not set holds no key
            pass
    return [k for k in keys if k]
