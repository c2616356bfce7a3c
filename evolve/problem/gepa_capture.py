"""The static facts of a GEPA script's optimize_anything call, learnt by one sandboxed run.

A GEPA script computes its seed, objective and background however it likes (a string, a
file it reads, a helper module), so they are known only by running it, and the script is
untrusted: it runs in the sandbox (evaluators/inside/gepa_score.py, asked for CAPTURE),
never here. What comes back is checked field by field as untrusted JSON, and kept under
the cache folder, keyed by the folder's contents, so the next load of an unchanged folder
does not start a sandbox.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluators.backends import make_sandbox
from evaluators.inside import gepa_score
from evaluators.machine import SandboxUnavailable
from evaluators.sandbox import EvalRequest, Limits
from evolve.cache import cache_dir
from evolve.problem.model import ProblemError

CAPTURE_TIMEOUT_S = 120.0
MAX_HASHED_FILES = 2000  # a folder larger than this is keyed by its first files (sorted)
SKIPPED = frozenset({".git", "__pycache__", "outputs", ".venv"})


@dataclass(frozen=True)
class Facts:
    """What the script passed to optimize_anything: `seed` a str or {name: text}; `sizes`
    the dataset's, valset's and test_set's lengths (None: not given)."""

    seed: str | dict[str, str]
    objective: str
    background: str
    max_metric_calls: int | None
    evaluator: str
    sizes: dict[str, int | None]
    ignored: tuple[str, ...]
    config: tuple[str, ...] = ()  # the config's settings (engine.run_dir, reflection, ...)


def folder_key(root: Path, script: str) -> str:
    """A digest of the folder's files (names and contents) and the script's name."""
    h = hashlib.sha256(script.encode())
    files = sorted(
        p for p in root.rglob("*") if p.is_file() and not SKIPPED & set(p.relative_to(root).parts)
    )
    for p in files[:MAX_HASHED_FILES]:
        h.update(str(p.relative_to(root)).encode() + b"\0")
        with p.open("rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()


def facts_of(root: Path, script: str, shown: str, sandbox: str | None) -> Facts:
    """The script's call, from the cache or one sandboxed run (ProblemError: one line)."""
    cached = cache_dir() / "gepa" / f"{folder_key(root, script)}.json"
    if cached.is_file():
        try:
            return parse(json.loads(cached.read_text(encoding="utf-8")), shown)
        except (ValueError, OSError):
            pass  # a damaged cache entry: capture again
    raw = _run(root, script, shown, sandbox)
    facts = parse(raw, shown)
    cached.parent.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(raw), encoding="utf-8")
    os.replace(tmp, cached)
    return facts


def _run(root: Path, script: str, shown: str, sandbox: str | None) -> Any:
    name = sandbox if sandbox in ("local", "docker") else "auto"
    try:
        box = make_sandbox(name, 1, problem_dir=str(root), say=lambda _line: None)
    except SandboxUnavailable as e:
        raise ProblemError(f"{shown}: cannot start a sandbox to read its call: {e}") from None
    try:
        req = EvalRequest(
            problem_dir=str(root),
            program_code=gepa_score.CAPTURE,
            program_name="capture.txt",
            split="train",
            fmt="gepa",
            limits=Limits(timeout_s=CAPTURE_TIMEOUT_S, memory_mb=4096),
            env={gepa_score.SCRIPT_ENV: script},
        )
        result = box.evaluate(req)
    finally:
        box.close()
    text = result.artifacts.get(gepa_score.FACTS)
    if text is None:
        why = result.artifacts.get("error") or result.status
        raise ProblemError(f"{shown}: could not capture its optimize_anything call: {why}"[:600])
    try:
        return json.loads(text)
    except ValueError:
        why = "over 64 KiB (seed and background together)" if "chars cut" in text else "not JSON"
        raise ProblemError(f"{shown}: the captured optimize_anything call is {why}") from None


def _text(raw: dict, key: str, shown: str) -> str:
    value = raw.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ProblemError(f"{shown}: optimize_anything's {key}=: expected a str")
    return value


def parse(raw: Any, shown: str) -> Facts:
    """The captured JSON, checked: it is the script's word (ProblemError: one line)."""
    if not isinstance(raw, dict):
        raise ProblemError(f"{shown}: the captured call is not an object")
    seed = raw.get("seed_candidate")
    ok_dict = (
        isinstance(seed, dict)
        and seed
        and all(isinstance(k, str) and isinstance(v, str) for k, v in seed.items())
    )
    if not (isinstance(seed, str) or ok_dict):
        raise ProblemError(
            f"{shown}: optimize_anything's seed_candidate: expected a str or a non-empty dict "
            f"of str to str, got {type(seed).__name__} (seedless runs are not supported)"
        )
    if raw.get("batch_evaluator") and raw.get("evaluator") is None:
        raise ProblemError(
            f"{shown}: optimize_anything: batch_evaluator= alone is not supported; pass evaluator="
        )
    if not isinstance(raw.get("evaluator"), str):
        raise ProblemError(f"{shown}: optimize_anything was given no evaluator=")
    budget = raw.get("max_metric_calls")
    if budget is not None and (
        isinstance(budget, bool) or not isinstance(budget, int) or budget < 1
    ):
        raise ProblemError(
            f"{shown}: max_metric_calls: expected a positive int, got {budget!r:.60}"
        )
    sizes_raw = raw["sizes"] if isinstance(raw.get("sizes"), dict) else {}
    sizes: dict[str, int | None] = {}
    for key in ("dataset", "valset", "test_set"):
        n = sizes_raw.get(key)
        sizes[key] = n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None
    ignored = raw["ignored"] if isinstance(raw.get("ignored"), list) else []
    config = raw["config"] if isinstance(raw.get("config"), list) else []
    return Facts(
        seed=seed if isinstance(seed, str) else dict(seed or {}),
        objective=_text(raw, "objective", shown),
        background=_text(raw, "background", shown),
        max_metric_calls=budget,
        evaluator=raw["evaluator"][:300],
        sizes=sizes,
        ignored=tuple(str(k)[:60] for k in ignored),
        config=tuple(str(k)[:60] for k in config[:50]),
    )
