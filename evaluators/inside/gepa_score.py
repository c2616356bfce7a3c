"""How a GEPA optimize_anything script's candidate is scored inside the sandbox.

The script ($GEPA_SCRIPT, in a private copy of its folder) is run as `__main__` with its
optimize_anything call intercepted (Captured), so nothing after the call runs. The `gepa` it
imports is the real package where the sandbox has it installed (only optimize_anything is
replaced: GEPA's examples import its other modules, gepa.utils.code_execution...), else the
stand-in (gepa_compat/). The candidate is then
handed to the captured evaluator as GEPA v0.1.4 hands it (gepa_launcher.EvaluatorWrapper):
positional candidate (a str, or a dict of named texts for a dict seed), `example=` when a
dataset was given, `opt_state=`, each only if the evaluator's signature takes it. The score
is the mean over the valset (the dataset when there is no valset; one call when neither).
An evaluator that raises fails the candidate.

Run as `python gepa_score.py --program_path P --results_dir D` (shinka_run.evaluate starts
it, as it starts a ShinkaEvolve evaluate.py), it writes correct.json and metrics.json. A
program whose text is CAPTURE is not scored: the static facts of the call (seed, objective,
background, budget, set sizes) are written instead, for the loader (evolve/problem/gepa.py).
Stdlib only.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import inspect
import json
import math
import os
import runpy
import sys
import traceback
import types
from typing import Any

SCRIPT = os.path.abspath(__file__)
STAND_IN = os.path.join(os.path.dirname(SCRIPT), "gepa_compat")
SCRIPT_ENV = "GEPA_SCRIPT"  # the script's path in the folder (the loader sets it)
CAPTURE = "# evolve: capture the optimize_anything call\n"  # the program that asks for facts
FACTS = "gepa_capture"  # metrics.json's key holding them
STATE_ENV = (
    "GEPA_OPT_STATE"  # the best evaluations so far per example (evolve/pipeline/gepa_state.py)
)
SIDE_INFO_CHARS = 16000


class ScriptError(Exception):
    """The script could not be captured: it raised, or never called optimize_anything."""


class Captured(BaseException):
    """The call's arguments, raised through the script so nothing after it runs."""

    def __init__(self, call: dict[str, Any]) -> None:
        super().__init__("optimize_anything was called")
        self.call = call


def intercepted(
    seed_candidate: Any = None,
    *,
    evaluator: Any = None,
    batch_evaluator: Any = None,
    dataset: Any = None,
    valset: Any = None,
    objective: Any = None,
    background: Any = None,
    test_set: Any = None,
    config: Any = None,
    **others: Any,
) -> Any:
    """optimize_anything as the script sees it: raise Captured with everything it passed."""
    raise Captured(
        {
            "seed_candidate": seed_candidate,
            "evaluator": evaluator,
            "batch_evaluator": batch_evaluator,
            "dataset": dataset,
            "valset": valset,
            "objective": objective,
            "background": background,
            "test_set": test_set,
            "config": config,
            "others": sorted(others),
        }
    )


class _CallableModule(types.ModuleType):
    """`gepa.optimize_anything(...)` calls the function, as the issue's scripts write it."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return intercepted(*args, **kwargs)


def gepa_module() -> types.ModuleType:
    """gepa.optimize_anything with its optimize_anything intercepted: the installed package's
    where the sandbox has one (as ShinkaEvolve's wins over its stand-in), else the stand-in's.
    The stand-in folder goes first on the path either way, for its `evolve` front."""
    real = importlib.util.find_spec("gepa") is not None  # before the stand-in is on the path
    if real:
        try:
            importlib.import_module("gepa.optimize_anything")
        except Exception as e:
            raise ScriptError(f"the installed gepa package does not import: {e!r}") from e
    sys.path.insert(0, STAND_IN)
    module = importlib.import_module("gepa.optimize_anything")
    module.optimize_anything = intercepted  # type: ignore[attr-defined]
    module.__class__ = _CallableModule
    return module


def capture(script: str) -> dict[str, Any]:
    """Run the script as `__main__` until its optimize_anything call; that call's arguments."""
    gepa_module()
    sys.path.insert(1, os.path.dirname(os.path.abspath(script)))  # as `python SCRIPT` has it
    sys.path.insert(2, os.getcwd())  # the folder it was loaded from (GEPA's root for its examples)
    sys.argv = [script]
    try:
        runpy.run_path(script, run_name="__main__")
    except Captured as c:
        return c.call
    except SystemExit as e:
        raise ScriptError(
            f"{script} exited (sys.exit({e.code!r})) before optimize_anything"
        ) from None
    except BaseException as e:
        raise ScriptError(f"{script} raised before optimize_anything: {e!r}") from e
    raise ScriptError(f"{script} ran to its end without calling optimize_anything")


def budget(config: Any) -> Any:
    """max_metric_calls as GEPAConfig(engine=EngineConfig(...)) or max_evals as
    OptimizeAnythingConfig(...) carries it (None: unbounded or unknown)."""
    if config is None:
        return None
    engine = getattr(config, "engine", None)
    for holder, name in (
        (engine, "max_metric_calls"),
        (config, "max_evals"),
        (config, "max_metric_calls"),
    ):
        value = getattr(holder, name, None) if holder is not None else None
        if value is not None:
            return value
    return None


BUDGET_KEYS = ("engine.max_metric_calls", "max_evals", "max_metric_calls")


def chosen(config: Any) -> dict[str, Any]:
    """The settings a config object was given: a stand-in's keyword arguments, or a real
    GEPA dataclass's fields that differ from their defaults."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        out = {}
        for f in dataclasses.fields(config):
            value = getattr(config, f.name, None)
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                out[f.name] = value
                continue
            try:
                same = bool(value == default)
            except Exception:
                same = False
            if not same:
                out[f.name] = value
        return out
    fields = getattr(config, "__dict__", None)
    if not isinstance(fields, dict):
        return {}
    return {k: v for k, v in fields.items() if k != "args" and not k.startswith("_")}


def settings_of(config: Any) -> list[str]:
    """The config's settings, dotted (engine.run_dir, reflection, ...): what the loader reports
    as ignored, the budget aside."""
    out = []
    for key, value in chosen(config).items():
        if key == "engine" and value is not None:
            out += [f"engine.{k}" for k in chosen(value)]
        else:
            out.append(key)
    return [k for k in out if k not in BUDGET_KEYS]


def facts(call: dict[str, Any]) -> dict[str, Any]:
    """What the loader needs, as JSON values (it checks each: this is the script's word)."""
    fn = call.get("evaluator")
    try:
        signature = f"{fn.__name__}{inspect.signature(fn)}" if fn is not None else None
    except (TypeError, ValueError, AttributeError):
        signature = repr(fn)
    sizes = {}
    for key in ("dataset", "valset", "test_set"):
        value = call.get(key)
        sizes[key] = len(value) if isinstance(value, list | tuple) else None
    return {
        "seed_candidate": call.get("seed_candidate"),
        "objective": call.get("objective"),
        "background": call.get("background"),
        "max_metric_calls": budget(call.get("config")),
        "evaluator": signature,
        "batch_evaluator": call.get("batch_evaluator") is not None,
        "sizes": sizes,
        "ignored": call.get("others", []),
        "config": settings_of(call.get("config")),
    }


def _takes(fn: Any) -> set[str] | None:
    """The keyword names the evaluator accepts (None: any, it has **kwargs)."""
    params = inspect.signature(fn).parameters.values()
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params}


def call_evaluator(fn: Any, candidate: Any, example: Any, single: bool, opt_state: Any) -> tuple:
    """(score, side_info) of one call, GEPA's way: a bare score gets side_info {}, and what
    oa.log() wrote goes to side_info["log"] (GEPA's "_gepa_log" where the evaluator has one)."""
    oa = sys.modules["gepa.optimize_anything"]
    kwargs: dict[str, Any] = {} if single else {"example": example}
    kwargs["opt_state"] = opt_state
    accepted = _takes(fn)
    if accepted is not None:
        kwargs = {k: v for k, v in kwargs.items() if k in accepted}
    context = oa.LogContext()
    oa._set_log_context(context)
    try:
        result = fn(candidate, **kwargs)
    finally:
        logged = context.drain()
        oa._set_log_context(None)
    if isinstance(result, tuple | list) and len(result) == 2:
        score, side_info = result
    else:
        score, side_info = result, {}
    side_info = dict(side_info) if isinstance(side_info, dict) else {"side_info": side_info}
    if logged:
        side_info["_gepa_log" if "log" in side_info else "log"] = logged
    value = float(score)
    if not math.isfinite(value):
        raise ValueError(f"the evaluator returned a non-finite score: {score!r}")
    return value, side_info


def candidate_of(program: str, seed: Any) -> Any:
    """The candidate as the evaluator expects it: the file's text, or for a dict seed the
    dict of each key's file in the program's tree (the program path is its first key)."""
    if not isinstance(seed, dict):
        with open(program, encoding="utf-8") as f:
            return f.read()
    keys = list(seed)
    depth = len(keys[0].split("/"))
    root = program
    for _ in range(depth):
        root = os.path.dirname(root)
    out = {}
    for key in keys:
        with open(os.path.join(root, key), encoding="utf-8") as f:
            out[key] = f.read()
    return out


def score(
    call: dict[str, Any], candidate: Any, known: list[list[dict]]
) -> tuple[float, dict[str, Any], list[dict]]:
    """The valset mean (or dataset's, or one call's), numeric side_info as metrics, and every
    call's side_info; `known`: the best evaluations so far per example (opt_state's)."""
    OptimizationState = sys.modules["gepa.optimize_anything"].OptimizationState

    fn = call.get("evaluator")
    if fn is None:
        raise ScriptError(
            "optimize_anything was given no evaluator= (batch_evaluator alone is not supported)"
        )
    given = call.get("valset")
    given = call.get("dataset") if given is None else given  # GEPA: no valset, the dataset
    examples = list(given) if given is not None else []
    single = not examples
    scores, infos = [], []
    for i, example in enumerate([None] if single else examples):
        state = OptimizationState(best_example_evals=known[i] if i < len(known) else [])
        value, info = call_evaluator(fn, candidate, example, single, state)
        scores.append(value)
        infos.append(info)
    metrics: dict[str, Any] = {}
    if len(infos) == 1:
        flat = {**infos[0], **(infos[0].get("scores") or {})}
        for key, value in flat.items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key != "score":
                metrics[str(key)] = float(value)
    else:
        metrics["examples"] = float(len(scores))
    metrics["example_scores"] = scores  # a list: the harness keeps it as an artifact
    return sum(scores) / len(scores), metrics, infos


def known_of(text: str | None) -> list[list[dict]]:
    """The best evaluations so far, per example, that the host sent (it checked them)."""
    try:
        known = json.loads(text or "[]")
    except ValueError:
        return []
    return known if isinstance(known, list) else []


def judge(call: dict[str, Any], candidate: Any, known: list[list[dict]]) -> tuple[dict, dict]:
    """(correct.json, metrics.json) of one candidate: an evaluator that raises fails it."""
    try:
        value, metrics, infos = score(call, candidate, known)
    except ScriptError as e:
        return {"correct": False, "error": str(e)}, {}
    except Exception as e:
        traceback.print_exc()
        return {"correct": False, "error": f"the evaluator raised {e!r}"[:2000]}, {}
    text = json.dumps(infos[0] if len(infos) == 1 else infos, default=repr)
    if len(text) > SIDE_INFO_CHARS:
        text = text[:SIDE_INFO_CHARS] + " [...]"
    return {"correct": True, "error": None}, {**metrics, "side_info": text, "score": value}


def _dump(path: str, value: Any) -> None:
    with open(path, "w", encoding="utf-8") as f:
        json.dump(value, f, default=repr)


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--program_path", required=True)
    p.add_argument("--results_dir", required=True)
    a = p.parse_args(argv)
    os.makedirs(a.results_dir, exist_ok=True)
    correct = os.path.join(a.results_dir, "correct.json")
    metrics_path = os.path.join(a.results_dir, "metrics.json")
    script = os.environ.get(SCRIPT_ENV, "main.py")
    with open(a.program_path, encoding="utf-8", errors="replace") as f:
        asked = f.read() == CAPTURE
    try:
        call = capture(script)
        if asked:
            _dump(metrics_path, {FACTS: json.dumps(facts(call), default=repr)})
            _dump(correct, {"correct": False, "error": "captured"})
            return 0
        candidate = candidate_of(a.program_path, call.get("seed_candidate"))
    except ScriptError as e:
        _dump(correct, {"correct": False, "error": str(e)})
        _dump(metrics_path, {})
        return 0
    except Exception as e:  # the candidate's files could not be read
        traceback.print_exc()
        _dump(correct, {"correct": False, "error": f"the evaluator raised {e!r}"[:2000]})
        _dump(metrics_path, {})
        return 0
    verdict, metrics = judge(call, candidate, known_of(os.environ.get(STATE_ENV)))
    _dump(correct, verdict)
    _dump(metrics_path, metrics)
    return 0


def to_result(out: Any, ok: str, invalid: str, runtime_error: str) -> dict:
    """The harness's result from what this script left (a shinka_run.Outcome): side_info and
    the captured facts become artifacts, numbers metrics."""
    artifacts: dict[str, str] = {}
    for name in ("stderr", "stdout"):
        if getattr(out, name):
            artifacts["private." + name] = getattr(out, name)
    raw = out.metrics if isinstance(out.metrics, dict) else {}
    correct = out.correct if isinstance(out.correct, dict) else {}
    metrics: dict[str, float] = {}
    for key, value in raw.items():
        if key == "score":
            continue
        if isinstance(value, bool | int | float):
            metrics[key] = float(value)
        elif value is not None:
            artifacts[key] = value if isinstance(value, str) else json.dumps(value, default=repr)
    result: dict[str, Any] = {"status": ok, "score": None, "metrics": metrics}
    if out.returncode != 0 or out.problems:
        result["status"] = runtime_error
        why = "; ".join(out.problems) or f"exited with code {out.returncode}"
        artifacts["error"] = f"the GEPA script's evaluator could not run: {why}"
        if out.stderr:
            artifacts["traceback"] = out.stderr[-2000:]
    elif correct.get("correct") is not True:
        result["status"] = invalid
        artifacts["error"] = str(correct.get("error") or "failed")
        if out.stderr:
            artifacts["traceback"] = out.stderr[-2000:]
    else:
        result["score"] = float(raw["score"])
    result["artifacts"] = artifacts
    return result


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
