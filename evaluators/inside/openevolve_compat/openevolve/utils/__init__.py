"""The helpers of `openevolve.utils` that evaluators use."""

from openevolve.utils.format_utils import format_improvement_safe, format_metrics_safe
from openevolve.utils.metrics_utils import get_fitness_score, safe_numeric_average, safe_numeric_sum

__all__ = [
    "format_improvement_safe",
    "format_metrics_safe",
    "get_fitness_score",
    "safe_numeric_average",
    "safe_numeric_sum",
]
