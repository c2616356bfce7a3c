"""A problem's baselines (the `baselines/*.py` of its folder) scored on the splits a run
uses, as reference rows for its leaderboard.

Scoring runs the problem's own evaluator on its own reference programs, in the sandbox,
never anything from the archive. Each result is cached under ~/.cache/evolve/baselines by
a hash of the problem folder's files and the baseline, so a leaderboard shows them at
once after the first time and an edited evaluator or baseline is scored again.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path

from evolve.web.render import finite

_SKIP_DIRS = {"__pycache__", ".git", "baselines"}


@dataclass
class BaselineScore:
    name: str  # file name in baselines/
    status: str  # pending | ok | <a failure status> | error
    score: float | None = None
    test_score: float | None = None
    train_split: str = "train"
    test_split: str | None = None
    detail: str = ""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evolve" / "baselines"


def folder_hash(root: Path) -> str:
    """Hash of every file of the problem folder but its baselines (names and contents)."""
    h = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and not (_SKIP_DIRS & set(rel.parts)):
            h.update(str(rel).encode() + b"\0")
            h.update(path.read_bytes())
    return h.hexdigest()


class Baselines:
    """Baseline scores per problem folder, scored in one background thread on request."""

    def __init__(self, sandbox: str = "local", enabled: bool = True):
        self.sandbox = sandbox
        self.enabled = enabled
        self._lock = threading.Lock()
        self._busy: set[str] = set()

    def scores(self, problem_dir: str | None) -> list[BaselineScore]:
        """What is known now; starts scoring what is missing (the page polls for it)."""
        root = Path(problem_dir) if problem_dir else None
        if root is None or not (root / "baselines").is_dir():
            return []
        files = sorted(p for p in (root / "baselines").glob("*.py") if p.is_file())
        if not files:
            return []
        try:
            key = folder_hash(root)
        except OSError:
            return []
        out, missing = [], []
        for f in files:
            cached = self._cached(key, f)
            if cached is not None:
                out.append(cached)
            else:
                missing.append(f)
                out.append(BaselineScore(f.name, "pending" if self.enabled else "not scored"))
        if missing and self.enabled:
            self._start(root, key, missing)
        return out

    def _cache_file(self, key: str, baseline: Path) -> Path:
        h = hashlib.sha256(key.encode() + baseline.read_bytes()).hexdigest()[:32]
        return cache_dir() / f"{h}.json"

    def _cached(self, key: str, baseline: Path) -> BaselineScore | None:
        try:
            return BaselineScore(**json.loads(self._cache_file(key, baseline).read_text()))
        except (OSError, ValueError, TypeError):
            return None

    def _start(self, root: Path, key: str, files: list[Path]) -> None:
        with self._lock:
            if str(root) in self._busy:
                return
            self._busy.add(str(root))
        threading.Thread(target=self._score_all, args=(root, key, files), daemon=True).start()

    def _score_all(self, root: Path, key: str, files: list[Path]) -> None:
        try:
            for f in files:
                result = _score(root, f, self.sandbox)
                path = self._cache_file(key, f)
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(finite(asdict(result))))
                tmp.replace(path)
        finally:
            with self._lock:
                self._busy.discard(str(root))


def _score(root: Path, baseline: Path, sandbox_name: str) -> BaselineScore:
    """Train (through the cascade, as a run scores) and held-out scores of one baseline."""
    from evolve.edits.blocks import complete_from_seed
    from evolve.evaluation import CandidateEvaluator
    from evolve.problem import load_problem
    from evolve.sandboxes import make_sandbox

    try:
        problem = load_problem(root)
        code = complete_from_seed(baseline.read_text(), problem.seed_code)
        sandbox = make_sandbox(sandbox_name, 1, problem_dir=str(root))
    except Exception as e:  # a broken folder: shown on its row, never raised into the page
        return BaselineScore(baseline.name, "error", detail=str(e).splitlines()[0][:300])
    try:
        ev = CandidateEvaluator(problem, sandbox)
        train = ev.evaluate(code)
        test_split = problem.test_split
        test = ev.run_split(code, test_split) if test_split and train.status == "ok" else None
        return BaselineScore(
            baseline.name,
            train.status,
            train.score,
            test.score if test is not None and test.status == "ok" else None,
            problem.train_split,
            test_split,
        )
    except Exception as e:
        return BaselineScore(baseline.name, "error", detail=str(e).splitlines()[0][:300])
    finally:
        sandbox.close()
