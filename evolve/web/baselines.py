"""A problem's baselines (the `baselines/*.py` of its folder) scored on the splits a run
uses, as reference rows for its leaderboard: under the archive's leaderboard seed for the
problem (evolve/pipeline/leaderboard.py), the data its programs are ranked on, or on the public data
where the archive has none yet.

The scoring and its cache live in evolve/problem/baselines.py (`evolve bench` normalises with the
same numbers); here they are fetched in one background thread, so a leaderboard shows
"pending" rows at once and polls until they are scored.
"""

from __future__ import annotations

import threading
from pathlib import Path

from evolve.problem.baselines import (
    BaselineScore,
    baseline_files,
    cache_file,
    folder_hash,
    read_cached,
    score_program,
    write_cached,
)

__all__ = ["BaselineScore", "Baselines"]


class Baselines:
    """Baseline scores per problem folder, scored in one background thread on request."""

    def __init__(self, sandbox: str = "local", enabled: bool = True):
        self.sandbox = sandbox
        self.enabled = enabled
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    def scores(self, problem_dir: str | None, data_seed: int | None = None) -> list[BaselineScore]:
        """What is known now on the workloads of `data_seed` (None: the public ones); starts
        scoring what is missing (the page polls for it)."""
        root = Path(problem_dir) if problem_dir else None
        if root is None:
            return []
        files = baseline_files(root)
        if not files:
            return []
        try:
            key = folder_hash(root)
        except OSError:
            return []
        out, missing = [], []
        for f in files:
            cached = read_cached(cache_file(key, f, data_seed=data_seed))
            if cached is not None:
                out.append(cached)
            else:
                missing.append(f)
                out.append(BaselineScore(f.name, "pending" if self.enabled else "not scored"))
        if missing and self.enabled:
            self._start(root, key, missing, data_seed)
        return out

    def _start(self, root: Path, key: str, files: list[Path], data_seed: int | None) -> None:
        job = f"{root}\0{data_seed}"
        with self._lock:
            if job in self._busy:
                return
            self._busy.add(job)
        threading.Thread(
            target=self._score_all, args=(root, key, files, data_seed, job), daemon=True
        ).start()

    def _score_all(
        self, root: Path, key: str, files: list[Path], data_seed: int | None, job: str
    ) -> None:
        try:
            for f in files:
                result = score_program(root, f, self.sandbox, data_seed)
                write_cached(cache_file(key, f, data_seed=data_seed), result)
        finally:
            with self._lock:
                self._busy.discard(job)
