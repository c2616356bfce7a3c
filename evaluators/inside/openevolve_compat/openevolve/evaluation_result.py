"""What an OpenEvolve evaluator may return instead of a plain dict of metrics."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class EvaluationResult:
    """Metrics (the scores) and artifacts (text or bytes fed back to the model)."""

    metrics: dict
    artifacts: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, metrics: dict) -> EvaluationResult:
        return cls(metrics=metrics)

    def to_dict(self) -> dict:
        return self.metrics

    def has_artifacts(self) -> bool:
        return bool(self.artifacts)

    def get_artifact_keys(self) -> list:
        return list(self.artifacts)

    def get_artifact_size(self, key: str) -> int:
        """Bytes of one artifact as UTF-8 (0 when absent)."""
        if key not in self.artifacts:
            return 0
        value = self.artifacts[key]
        if isinstance(value, bytes):
            return len(value)
        return len((value if isinstance(value, str) else str(value)).encode("utf-8"))

    def get_total_artifact_size(self) -> int:
        return sum(self.get_artifact_size(k) for k in self.artifacts)
