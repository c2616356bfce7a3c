"""ShinkaEvolve 0.0.7's `run_shinka_eval` (shinka/core/wrap_eval.py, Apache-2.0), with the
standard library in place of numpy, so an evaluator scores here as it does in ShinkaEvolve.

It loads the program, calls its experiment function `num_runs` times (in worker processes
when `run_workers` > 1), validates and aggregates the results, and writes `metrics.json` and
`correct.json` into `results_dir`: the two files the harness reads back."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import pickle
import statistics
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from typing import Any

DEFAULT_METRICS_ON_ERROR: dict[str, Any] = {
    "combined_score": 0.0,
    "execution_time_mean": 0.0,
    "execution_time_std": 0.0,
    "num_successful_runs": 0,
    "num_valid_runs": 0,
    "num_invalid_runs": 0,
    "all_validation_errors": [],
}


def load_program(program_path: str) -> Any:
    """The program at `program_path` imported as module `program`."""
    spec = importlib.util.spec_from_file_location("program", program_path)
    if spec is None:
        raise ImportError(f"Could not load spec for module at {program_path}")
    if spec.loader is None:
        raise ImportError(f"Spec loader is None for module at {program_path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _run_single_evaluation(
    program_path: str, experiment_fn_name: str, run_index: int, kwargs: dict[str, Any]
) -> tuple[int, Any, float]:
    """One run in a worker process; the index restores the order."""
    module = load_program(program_path)
    if not hasattr(module, experiment_fn_name):
        raise AttributeError(
            f"Experiment function '{experiment_fn_name}' not found in {program_path}"
        )
    start = time.perf_counter()
    result = getattr(module, experiment_fn_name)(**kwargs)
    return run_index, result, time.perf_counter() - start


def save_json_results(
    results_dir: str, metrics: dict[str, Any], correct: bool, error: str | None = None
) -> None:
    """metrics.json and correct.json, as ShinkaEvolve writes them."""
    os.makedirs(results_dir, exist_ok=True)
    correct_file = os.path.join(results_dir, "correct.json")
    with open(correct_file, "w") as f:
        json.dump({"correct": correct, "error": error}, f, indent=4)
    print(f"Correctness and error status saved to {correct_file}")
    metrics_file = os.path.join(results_dir, "metrics.json")
    with open(metrics_file, "w") as f:
        json.dump(metrics, f, indent=4)
    print(f"Metrics saved to {metrics_file}")


def _non_finite(value: Any) -> str | None:
    """numpy's isnan/isinf test of combined_score: why it is not finite, or None. Like
    numpy, a value that is no number raises TypeError (the evaluation then fails)."""
    if isinstance(value, (str, bytes)) or not hasattr(type(value), "__float__"):
        raise TypeError(f"ufunc 'isnan' not supported for the input types ({type(value).__name__})")
    f = float(value)
    if math.isnan(f):
        return "combined_score is NaN"
    if math.isinf(f):
        return f"combined_score is inf ({value})"
    return None


class _Tally:
    """The validation counts of a whole evaluation."""

    def __init__(self, validate_fn: Callable[[Any], tuple[bool, str | None]] | None):
        self.validate_fn = validate_fn
        self.valid = self.invalid = 0
        self.errors: list[str] = []
        self.first_error: str | None = None
        self.correct = True

    def check(self, result: Any) -> None:
        if not self.validate_fn:
            return
        ok, msg = self.validate_fn(result)
        if ok:
            self.valid += 1
            return
        self.invalid += 1
        self.correct = False
        if msg:
            if not self.first_error:
                self.first_error = f"Validation failed: {msg}"
            if msg not in self.errors:
                self.errors.append(msg)


def run_shinka_eval(
    program_path: str,
    results_dir: str,
    experiment_fn_name: str,
    num_runs: int,
    get_experiment_kwargs: Callable[[int], dict[str, Any]] | None = None,
    aggregate_metrics_fn: Callable[[list[Any]], dict[str, Any]] | None = None,
    validate_fn: Callable[[Any], tuple[bool, str | None]] | None = None,
    plotting_fn: Callable[[Any], list[Any]] | None = None,
    default_metrics_on_error: dict[str, Any] | None = None,
    early_stop_method: Any = None,
    early_stop_threshold: float | None = None,
    early_stop_score_fn: Callable[[Any], float] | None = None,
    early_stop_kwargs: dict[str, Any] | None = None,
    run_workers: int = 1,
    max_workers_cap: int | None = None,
) -> tuple[dict[str, Any], bool, str | None]:
    """Run, validate, aggregate and save, as ShinkaEvolve 0.0.7 does; returns
    (metrics, correct, first error message)."""
    defaults = dict(default_metrics_on_error or DEFAULT_METRICS_ON_ERROR)
    if run_workers < 1:
        raise ValueError("run_workers must be >= 1")
    if max_workers_cap is not None and max_workers_cap < 1:
        raise ValueError("max_workers_cap must be >= 1 when provided")
    if early_stop_method is not None:
        raise NotImplementedError(
            "early_stop_method is not in evolve's stand-in for ShinkaEvolve; install "
            "shinka-evolve in the sandbox, or drop early stopping"
        )
    workers = run_workers if max_workers_cap is None else min(run_workers, max_workers_cap)
    workers = min(workers, num_runs) if num_runs > 0 else 1
    tally = _Tally(validate_fn)
    results: list[Any] = []
    times: list[float] = []
    try:
        module = load_program(program_path)
        if not hasattr(module, experiment_fn_name):
            raise AttributeError(
                f"Experiment function '{experiment_fn_name}' not found in {program_path}"
            )
        experiment_fn = getattr(module, experiment_fn_name)
        kwargs_of = get_experiment_kwargs or (lambda i: {"seed": i + 1})
        if num_runs > 1 and workers > 1:
            _parallel(
                program_path, experiment_fn_name, num_runs, workers, kwargs_of, results, times
            )
            for i, result in enumerate(results):
                tally.check(result)
                print(
                    f"{10 * '='}Run {i + 1}/{num_runs} completed in {times[i]:.2f} seconds{10 * '='}"
                )
        else:
            for i in range(num_runs):
                print(f"{10 * '='}Running program evaluation {i + 1}/{num_runs}...{10 * '='}")
                kwargs = kwargs_of(i)
                start = time.perf_counter()
                result = experiment_fn(**kwargs)
                elapsed = time.perf_counter() - start
                results.append(result)
                times.append(elapsed)
                tally.check(result)
                print(
                    f"{10 * '='}Run {i + 1}/{num_runs} completed in {elapsed:.2f} seconds{10 * '='}"
                )
        metrics = _aggregate(aggregate_metrics_fn, results)
        metrics["execution_time_mean"] = float(statistics.fmean(times)) if times else 0.0
        metrics["execution_time_std"] = float(statistics.pstdev(times)) if times else 0.0
        if validate_fn:
            metrics["num_valid_runs"] = tally.valid
            metrics["num_invalid_runs"] = tally.invalid
            metrics["all_validation_errors"] = tally.errors
        correct, first_error = tally.correct, tally.first_error
        if "combined_score" in metrics:
            why = _non_finite(metrics["combined_score"])
            if why is not None:
                correct = False
                first_error = first_error or why
    except Exception as e:
        print(f"Evaluation error: {e}")
        metrics = {k: defaults.get(k, v) for k, v in DEFAULT_METRICS_ON_ERROR.items()}
        if validate_fn:
            metrics.setdefault("num_valid_runs", 0)
            metrics.setdefault("num_invalid_runs", len(results))
            metrics.setdefault("all_validation_errors", [str(e)])
        first_error, correct = str(e), False
    if "extra_data" in metrics:
        os.makedirs(results_dir, exist_ok=True)
        extra_file = os.path.join(results_dir, "extra.pkl")
        with open(extra_file, "wb") as f:
            pickle.dump(metrics.pop("extra_data"), f)
        print(f"Extra data saved to {extra_file}")
        if plotting_fn is not None:
            print("plotting_fn: plots are not made by evolve's stand-in for ShinkaEvolve")
    save_json_results(results_dir, metrics, correct, first_error)
    return metrics, correct, first_error


def _aggregate(fn: Callable[[list[Any]], dict[str, Any]] | None, results: list[Any]) -> dict:
    if fn:
        return fn(results)
    metrics: dict[str, Any] = {"num_successful_runs": len(results)}
    metrics["first_run_result_type"] = str(type(results[0])) if results else "N/A"
    metrics["raw_results_preview"] = str(results[:2]) if results else "N/A"
    return metrics


def _parallel(
    program_path: str,
    fn_name: str,
    num_runs: int,
    workers: int,
    kwargs_of: Callable[[int], dict[str, Any]],
    results: list[Any],
    times: list[float],
) -> None:
    """All runs in `workers` processes; `results` and `times` in run order."""
    print(f"Parallel evaluation enabled with {workers} worker(s) for {num_runs} run(s)")
    ordered: list[Any] = [None] * num_runs
    elapsed: list[float] = [0.0] * num_runs
    done = [False] * num_runs
    futures: dict[Future, int] = {}
    with ProcessPoolExecutor(max_workers=workers) as pool:
        for i in range(num_runs):
            print(f"{10 * '='}Running program evaluation {i + 1}/{num_runs}...{10 * '='}")
            try:
                futures[
                    pool.submit(_run_single_evaluation, program_path, fn_name, i, kwargs_of(i))
                ] = i
            except Exception as e:
                raise RuntimeError(
                    f"Failed to submit run {i + 1}/{num_runs} for parallel execution: {e}. "
                    "Ensure kwargs are pickle-serializable."
                ) from e
        for future in as_completed(futures):
            try:
                idx, result, t = future.result()
            except Exception as e:
                hint = (
                    " Ensure experiment kwargs and return values are pickle-serializable."
                    if "pickle" in str(e).lower()
                    else ""
                )
                raise RuntimeError(
                    f"Run {futures[future] + 1}/{num_runs} failed in parallel evaluation: {e}.{hint}"
                ) from e
            ordered[idx], elapsed[idx], done[idx] = result, t, True
    for i in range(num_runs):
        if not done[i]:
            raise RuntimeError(f"Run {i + 1}/{num_runs} did not complete in parallel mode.")
    results.extend(ordered)
    times.extend(elapsed)
