"""Metrics as one log line, whatever the values' types."""

from __future__ import annotations


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def format_metrics_safe(metrics: dict) -> str:
    """`name=0.5000, flag=True, note=text`: numbers to four places, the rest as str()."""
    parts = []
    for name, value in (metrics or {}).items():
        try:
            parts.append(f"{name}={value:.4f}" if _number(value) else f"{name}={value}")
        except (TypeError, ValueError):
            parts.append(f"{name}={value}")
    return ", ".join(parts)


def format_improvement_safe(parent_metrics: dict, child_metrics: dict) -> str:
    """`name=+0.1000` for each numeric metric both programs have."""
    if not parent_metrics or not child_metrics:
        return ""
    parts = []
    for name, child in child_metrics.items():
        parent = parent_metrics.get(name)
        if name in parent_metrics and _number(child) and _number(parent):
            try:
                parts.append(f"{name}={child - parent:+.4f}")  # type: ignore[operator]
            except (TypeError, ValueError):
                continue
    return ", ".join(parts)
