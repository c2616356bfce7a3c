"""GEPA's OptimizationState for a GEPA script's evaluator: the best evaluations so far.

GEPA hands an evaluator that names `opt_state` the top evaluations of the current example,
best first, each {"score", "side_info"}. The evaluator runs in a fresh sandboxed process
per candidate, so the trusted side keeps them here, from each result it gets, and sends
them with the next request ($GEPA_OPT_STATE, read by evaluators/inside/gepa_score.py). A
resumed run restores them from the archive's evaluated programs (restore).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable

from evaluators.inside import gepa_score
from evaluators.sandbox import EvalResult, Status
from evolve.archive.rows import ProgramRow
from evolve.archive.vocab import ProgramStatus

TOP_K = 5  # GEPA keeps 30; a request's environment must stay small
MAX_CHARS = 64 * 1024  # the variable's size: the worst entries go first beyond it


class OptState:
    """The best (score, side_info) of every example so far, thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._best: list[list[dict]] = []
        self._seen: set[str] = set()  # the candidates kept, by their code's digest

    def record(self, res: EvalResult, code: str) -> None:
        """Keep a scored result's per-example evaluations (its artifacts are untrusted JSON);
        a candidate evaluated again (the same `code`) counts once, as in GEPA's cache."""
        if res.status != Status.OK or res.score is None:
            return
        try:
            scores = json.loads(res.artifacts.get("example_scores", "null"))
            infos = json.loads(res.artifacts.get("side_info", "null"))
        except ValueError:
            return
        if not isinstance(scores, list) or not all(isinstance(s, int | float) for s in scores):
            return
        if not isinstance(infos, list):
            infos = [infos]
        digest = hashlib.sha256(code.encode()).hexdigest()
        with self._lock:
            if digest in self._seen:
                return
            self._seen.add(digest)
            while len(self._best) < len(scores):
                self._best.append([])
            for i, score in enumerate(scores):
                info = infos[i] if i < len(infos) and isinstance(infos[i], dict) else {}
                entry = {"score": float(score), "side_info": info}
                kept = self._best[i] + [entry]
                self._best[i] = sorted(kept, key=lambda e: -e["score"])[:TOP_K]

    def restore(self, rows: Iterable[ProgramRow]) -> None:
        """What a run's archive holds already (`resume`): its evaluated programs, in order."""
        for row in rows:  # record keeps only scored results: a row that is not `ok` adds nothing
            if row.code is not None and row.status == ProgramStatus.OK:
                self.record(EvalResult(Status.OK, row.score, artifacts=row.artifacts), row.code)

    def env(self) -> dict[str, str]:
        """The variable the next request carries ({} before any result)."""
        with self._lock:
            best = [list(entries) for entries in self._best]
        if not best:
            return {}
        text = json.dumps(best)
        while len(text) > MAX_CHARS and any(best):
            longest = max(range(len(best)), key=lambda i: len(best[i]))
            best[longest].pop()  # the worst of the fullest example
            text = json.dumps(best)
        return {gepa_score.STATE_ENV: text}
