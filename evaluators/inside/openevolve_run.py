"""How an OpenEvolve-format evaluator runs inside the sandbox, as OpenEvolve 0.4 runs it.

Real evaluators assume their own folder: they open `datasets/...` relative to the
working directory, import sibling modules by name and write logs beside themselves.
So the evaluator gets a private, writable copy of its folder as working directory
and first entry of sys.path (nothing it writes reaches the user's folder or the next
evaluation), a stand-in for `openevolve.evaluation_result` when OpenEvolve is not
installed, and OpenEvolve's cascade: each stage in a thread under its own timeout,
stage metrics merged, a program under a threshold keeping the score it has so far.
The candidate runs inside the evaluator's process, so once the evaluator is imported the
process Landlocks itself (`confine`): it reads the interpreter, the harness, the problem
and its data, writes only its scratch folder, and, where the kernel knows how, connects
to no TCP port, whatever the sandbox around it (namespaces or none).

Stdlib only: this runs where only the harness's folder is importable.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import os
import shutil
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from evaluators.inside.children import SYSTEM_DIRS, SYSTEM_FILES, TOOL_DIRS_ENV

COPY_MAX_FILE = 1 << 20  # larger files are linked to the read-only original, not copied
COPY_MAX_TOTAL = 64 << 20  # and so is everything once this much has been copied
SKIP_DIRS = frozenset({".git", "__pycache__", "openevolve_output", ".venv", "venv"})
STAGES = ("evaluate_stage1", "evaluate_stage2", "evaluate_stage3")


class StageTimeout(Exception):
    """A stage ran past its timeout (its thread is left running; the harness exits)."""

    def __init__(self, name: str, timeout_s: float):
        super().__init__(f"{name}() ran past its timeout of {timeout_s:g} s")
        self.name = name


def temporary_copy(program: str) -> str:
    """The candidate where OpenEvolve puts it for its evaluator: a uniquely named file with
    the seed's suffix in the temporary folder (tempfile.NamedTemporaryFile), /tmp/tmpXXXX.py
    on a machine without TMPDIR. Some evaluators accept no other path (OpenEvolve's
    attention_optimization scores anything else as its worst). /tmp is the sandbox's own
    (a private tmpfs under bubblewrap and Docker); where it cannot be written, TMPDIR."""
    suffix = os.path.splitext(program)[1] or ".py"
    for where in ("/tmp", None):
        try:
            fd, path = tempfile.mkstemp(suffix=suffix, dir=where)
        except OSError:
            continue
        with os.fdopen(fd, "wb") as out, open(program, "rb") as src:
            shutil.copyfileobj(src, out)
        return path
    return program


def private_copy(src: str, parent: str) -> str:
    """A writable copy of the folder `src` under `parent`, named like it.

    Small files are copied; large ones (and all once COPY_MAX_TOTAL is reached) become
    links to the original, which stays read-only, so relative paths resolve either way."""
    dst = os.path.join(parent, os.path.basename(os.path.normpath(src)) or "problem")
    copied = 0
    for here, dirs, files in os.walk(src):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        target = os.path.join(dst, os.path.relpath(here, src))
        os.makedirs(target, exist_ok=True)
        for name in sorted(files):
            origin, copy = os.path.join(here, name), os.path.join(target, name)
            try:
                size = os.stat(origin).st_size
            except OSError:
                continue  # a dangling link: the evaluator would not have found it either
            if size <= COPY_MAX_FILE and copied + size <= COPY_MAX_TOTAL:
                shutil.copy2(origin, copy)
                copied += size
            else:
                os.symlink(origin, copy)
    return dst


# /dev/shm for multiprocessing's semaphores; /proc for the harness's count of what is left
# (Landlock judges a file by where it really lies: /proc/self/root/... leads nowhere new)
_SHARED = ("/dev/shm", "/sys/devices/system/cpu", "/proc")


def grants(problem_dir: str, scratch: str, program: str) -> list[tuple[str, int]]:
    """(path, Landlock rights) of an OpenEvolve evaluation: run the interpreter and the
    system's programs, read the harness, the problem, its data and includes, the program
    (where it really lies: Docker links it into the scratch from /in) and, for an evaluator
    that imports it by name, the sandbox's private temporary folder it lies in, write the scratch
    folder (the private copy lies there), /dev/null and /dev/shm (multiprocessing's
    semaphores). Never a folder above the harness (the checkout)."""
    from evaluators.inside import landlock as ll

    here = os.path.dirname(os.path.abspath(__file__))
    libs = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    libs |= {p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")}
    readable = {here, problem_dir, *(p for p in sys.path if p and os.path.isabs(p))}
    readable |= {os.environ.get(v, "") for v in ("EVOLVE_DATA_DIR", "EVOLVE_INCLUDE_DIR")}
    readable.add(os.environ.get("EVOLVE_CRATES_DIR", ""))  # crates fetched for the problem
    # the toolchains the problem declared (`tools`: cargo, g++) where the sandbox bound them
    libs |= set(os.environ.get(TOOL_DIRS_ENV, "").split(os.pathsep))
    rules = [(p, ll.EXEC_DIR) for p in sorted({*libs, *SYSTEM_DIRS}) if p]
    for p in sorted(readable):
        real = os.path.realpath(p) if p else ""
        if real and real != "/" and not here.startswith(real.rstrip("/") + "/"):
            rules.append((p, ll.READ_DIR))
    rules += [(p, ll.READ_FILE) for p in (*SYSTEM_FILES, os.path.realpath(program))]
    folder = os.path.dirname(os.path.realpath(program))
    if folder in ("/tmp", os.path.realpath(tempfile.gettempdir())):  # temporary_copy's
        # OpenEvolve's alphaevolve_math_problems put it on sys.path and __import__ its name:
        # the import system lists the folder, and finds nothing where it cannot. Its listing
        # only: without bubblewrap (isolation off) this /tmp is the host's, its files not ours.
        rules.append((folder, ll.FS_READ_DIR))
    rules += [(scratch, ll.WRITE_DIR), ("/dev/null", ll.WRITE_FILE)]
    rules += [(_SHARED[0], ll.WRITE_DIR), (_SHARED[1], ll.READ_DIR), (_SHARED[2], ll.READ_DIR)]
    return rules


def confine(problem_dir: str, scratch: str, program: str) -> str | None:
    """Landlock this process (the thread that runs the stages, and all they start) to
    `grants`; None when confined, else why not (no Landlock in this kernel). A Landlock
    that fails otherwise raises: never run unconfined unnoticed."""
    from evaluators.inside import landlock as ll

    done = ll.restrict((), (), grants(problem_dir, scratch, program))
    return None if done.confined else done.error


def use_stand_in(folder: str) -> None:
    """Make `import openevolve` find our stand-in, unless OpenEvolve itself is installed
    (it comes last on every path, so the real package always wins)."""
    if importlib.util.find_spec("openevolve") is not None:
        return
    import sys

    sys.path.append(folder)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH"), folder) if p
    )


def fitness_rule(stand_in: str, feature_dims: list) -> Callable[[dict], float]:
    """OpenEvolve's fitness, from the stand-in's metrics_utils loaded by path: an installed
    OpenEvolve must not change how a program is scored."""
    path = os.path.join(stand_in, "openevolve", "utils", "metrics_utils.py")
    spec = importlib.util.spec_from_file_location("evolve_openevolve_fitness", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"the OpenEvolve stand-in is missing: {path}")
    rules = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rules)
    return lambda metrics: rules.get_fitness_score(metrics, feature_dims)


class EvaluatorArgsError(ValueError):
    """evaluator.evaluator_args that evaluate()'s signature cannot take."""


def forward_args(module: object, args: dict) -> None:
    """OpenEvolve 0.4.1's evaluator.evaluator_args: `module.evaluate` becomes
    evaluate(program, **args), after the check OpenEvolve makes when it loads the evaluator
    (EvaluatorArgsError: the signature cannot take them). The evaluate_stageN functions get
    none, as in OpenEvolve."""
    fn = getattr(module, "evaluate", None)
    if not args or not callable(fn):
        return
    name = getattr(fn, "__name__", "evaluate")
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None  # no signature to check: the call says what is wrong
    if signature is not None:
        try:
            signature.bind(object(), **args)
        except TypeError as e:
            raise EvaluatorArgsError(
                f"evaluator.evaluator_args {sorted(args)} cannot be passed to "
                f"{name}{signature}: {e}"
            ) from None
    module.evaluate = functools.partial(fn, **args)  # type: ignore[attr-defined]


@dataclass
class Outcome:
    """The evaluation as OpenEvolve would store it: raw metrics and artifacts, and the
    fitness after each stage that ran (`stages`), for the record."""

    metrics: dict
    artifacts: dict
    stages: dict[str, float] = field(default_factory=dict)
    note: str | None = None  # why later stages did not run


def _unpack(raw: object, name: str) -> tuple[dict, dict]:
    """OpenEvolve's dict of metrics, or an EvaluationResult (duck-typed: the real class or ours)."""
    if isinstance(raw, dict):
        return dict(raw), {}
    metrics = getattr(raw, "metrics", None)
    if isinstance(metrics, dict):
        artifacts = getattr(raw, "artifacts", None)
        return dict(metrics), dict(artifacts) if isinstance(artifacts, dict) else {}
    raise TypeError(
        f"{name}() returned {type(raw).__name__}, expected a dict of metrics or an EvaluationResult"
    )


def _call(fn: Callable, program: str, name: str, timeout_s: float) -> tuple[dict, dict]:
    """fn(program) in a thread, as OpenEvolve runs it (an executor thread under a timeout)."""
    box: dict[str, object] = {}

    def target() -> None:
        try:
            value = fn(program)
            if inspect.iscoroutine(value):  # `async def evaluate`: awaited (OpenEvolve stores 0.0)
                value = asyncio.run(value)
            box["value"] = value
        except BaseException as e:  # SystemExit too: it would end only this thread
            box["error"] = e

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if thread.is_alive():
        raise StageTimeout(name, timeout_s)
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return _unpack(box.get("value"), name)


def _passes(metrics: dict, threshold: float) -> bool:
    """OpenEvolve's threshold test: combined_score, else the mean of every int or float
    metric but `error` (bools included, unlike the fitness)."""
    if not metrics:
        return False
    score = metrics.get("combined_score")
    if isinstance(score, (int, float)):
        return float(score) >= threshold
    values = [float(v) for k, v in metrics.items() if k != "error" and isinstance(v, (int, float))]
    return bool(values) and sum(values) / len(values) >= threshold


def _merge(into: dict, metrics: dict) -> None:
    for k, v in metrics.items():
        if isinstance(v, (int, float)) and k != "error":
            into[k] = float(v)


def run(
    module: object,
    program: str,
    thresholds: list[float] | None,
    timeout_s: float,
    retries: int,
    fitness: Callable[[dict], float],
) -> Outcome:
    """Evaluate `program` with the evaluator `module` as OpenEvolve 0.4 does.

    `thresholds` None (cascade_evaluation off): evaluate() alone, tried again up to
    `retries` times when it raises. Otherwise the cascade, or evaluate() once where the
    evaluator has no evaluate_stage1. A failure of evaluate() or of the first stage is raised (the
    harness classifies it; it never gets a score); a later stage that fails or times out
    leaves the stages before it standing, marked as OpenEvolve marks them."""
    if thresholds is None or not hasattr(module, STAGES[0]):
        tries = retries + 1 if thresholds is None else 1  # OpenEvolve retries only then
        for attempt in range(tries):
            try:
                metrics, artifacts = _call(module.evaluate, program, "evaluate", timeout_s)  # type: ignore[attr-defined]
                break
            except StageTimeout:
                raise
            except BaseException:
                if attempt == tries - 1:
                    raise
        return Outcome(metrics, artifacts, {"evaluate": fitness(metrics)})
    metrics, artifacts = _call(getattr(module, STAGES[0]), program, STAGES[0], timeout_s)
    out = Outcome(metrics, artifacts, {STAGES[0]: fitness(metrics)})
    for i in (1, 2):
        name, threshold = STAGES[i], thresholds[i - 1] if i - 1 < len(thresholds) else None
        if threshold is None or not _passes(out.metrics, threshold):
            if threshold is not None and hasattr(module, name):
                out.note = (
                    f"{STAGES[i - 1]}: score {fitness(out.metrics):.6g} is below the cascade "
                    f"threshold {threshold:g}; {name} was not run"
                )
            return out
        if not hasattr(module, name):
            return out
        n = i + 1
        try:
            metrics, artifacts = _call(getattr(module, name), program, name, timeout_s)
        except StageTimeout:
            out.artifacts.update({f"stage{n}_timeout": True, "failure_stage": f"stage{n}"})
            out.metrics.update({f"stage{n}_passed": 0.0, "timeout": True})
            out.note = (
                f"{name}() ran past its timeout of {timeout_s:g} s; the stages before it stand"
            )
            return out
        except BaseException as e:
            out.artifacts.update(
                {
                    f"stage{n}_stderr": str(e),
                    f"stage{n}_traceback": "".join(traceback.format_exception(e)),
                    "failure_stage": f"stage{n}",
                }
            )
            out.metrics[f"stage{n}_passed"] = 0.0
            out.note = f"{name}() failed; the stages before it stand"
            return out
        merged: dict = {}
        if i == 1:
            _merge(merged, out.metrics)
        else:
            merged = out.metrics
        _merge(merged, metrics)
        out = Outcome(merged, {**out.artifacts, **artifacts}, out.stages, None)
        out.stages[name] = fitness(merged)
    return out


def single(module: object, program: str, name: str, timeout_s: float, fitness) -> Outcome:
    """One stage function alone (`evolve eval --stage NAME`); a failure is raised."""
    metrics, artifacts = _call(getattr(module, name), program, name, timeout_s)
    return Outcome(metrics, artifacts, {name: fitness(metrics)})
