"""The problem kit: what every evaluator shares, written once.

An evaluator imports it as `from evaluators import kit` and keeps only its own
logic: how to run the candidate on a split (`kit.evaluate`) and how to judge
what it returned (`kit.score`). The kit loads the candidate, finds the split's
data files, turns a broken rule into an `invalid` result with a precise
message, and gives the evaluator its command line (`kit.main`).

The candidate runs in its own process (worker_client.py), confined with
Landlock to reading the interpreter's files: `kit.load` returns a callable
proxy, so the simulator, the data and this process's memory stay out of the
candidate's reach (no frame to inspect, no evaluator module to patch, no data
file to open). Arguments travel as builtins and numpy values; an object whose
class lists its `fields` travels as a plain record; a `kit.Memory` is a dict
the candidate keeps across calls. Exceptions come back as `CandidateError`
subclasses named like the original; a worker that dies raises `WorkerError`.

Stdlib only: the harness loads this file inside both sandboxes (a bare
interpreter, a container), where nothing but the problem's own imports exist.
It lives in evaluators/inside/ with what it needs there; evaluators/kit.py makes it
`evaluators.kit` on the host.
"""

from __future__ import annotations

import hashlib
import importlib.util
import itertools
import json
import os
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any

from evaluators.inside import codec, records, worker_client, worker_start

INCLUDE_ENV = "EVOLVE_INCLUDE_DIR"  # set by a sandbox that carries includes to another path
DATA_ENV = "EVOLVE_DATA_DIR"  # set by the controller; overrides the problem's data/ folder

_ids = itertools.count()
_included: dict[str, ModuleType] = {}

# The run's private data seed (`use_data_seed`); None: the problem's public data.
_data_seed: int | None = None

# Run candidates in a confined worker process. False only for measurements of the old way
# (bench/remote_policy.py): the candidate then shares the evaluator's process and memory.
REMOTE = True

Memory = records.Memory
CandidateError = codec.CandidateError
WorkerError = codec.WorkerError


class Invalid(ValueError):
    """The candidate, or what it returned, broke a rule of the problem.

    The message says what and where (workload, tick, index); `metrics` are
    numbers worth keeping even for an invalid candidate (say, deadline misses).
    """

    def __init__(self, message: str, **metrics: float) -> None:
        super().__init__(message)
        self.metrics = metrics


def invalid(error: str, **metrics: float) -> dict:
    """An evaluator result that rejects the candidate, saying why."""
    return {"valid": False, "metrics": dict(metrics), "artifacts": {"error": error}}


def _import_path(path: str, prefix: str) -> ModuleType:
    """Import a file by path under a fresh module name, so two loads never collide."""
    name = f"_{prefix}_{next(_ids)}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _missing(name: str) -> Invalid:
    return Invalid(f"the program defines no callable {name}()")


class InProcess:
    """A plain function behind the proxy's interface (`fn(...)`, `map`, `each`, `timed`, `close`)."""

    note = None

    def __init__(self, fn: Callable) -> None:
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)

    def timed(self, *args: Any, **kwargs: Any) -> tuple[Any, float]:
        t0 = time.perf_counter()
        out = self.fn(*args, **kwargs)
        return out, time.perf_counter() - t0

    def map(self, calls: Iterable[tuple]) -> list:
        out = []
        for i, args in enumerate(calls):
            try:
                out.append(self.fn(*args))
            except BaseException as e:
                e.call_index = i  # type: ignore[attr-defined]
                raise
        return out

    def each(self, args: Iterable[object]) -> list:
        return self.map([(a,) for a in args])

    def close(self) -> None:
        pass


def proxy(fn: Callable) -> Any:
    """`fn` with the proxy's interface: a loaded candidate as it is, a plain function wrapped."""
    return fn if isinstance(fn, (worker_client.Remote, InProcess)) else InProcess(fn)


def load(program_path: str, name: str) -> Any:
    """The candidate's function `name`, as a callable proxy to a confined worker process.

    Raises what importing the program raises, or `Invalid` if it defines no callable
    `name`. Call `.close()` when done (`evaluate` does); `.map(calls)` and `.each(args)`
    batch calls in one round trip, `.timed(...)` also returns the seconds the call took.
    """
    if REMOTE:
        return worker_client.Remote(program_path, name, _missing)
    fn = getattr(_import_path(program_path, "candidate"), name, None)
    if not callable(fn):
        raise _missing(name)
    return InProcess(fn)


def prestart(program_path: str) -> None:
    """Start the candidate's worker before the evaluator is imported (the harness does)."""
    if REMOTE:
        worker_start.prestart(program_path)


def release() -> None:
    """End a prestarted worker the evaluator did not use."""
    worker_start.release()


def use_tree(root: str, paths: Iterable[str]) -> None:
    """Trusted processes only (the harness): the program is a tree of files laid out under
    `root` at `paths` (relative); `load` of one of them imports it with the tree's root on
    the worker's sys.path, so its imports of the tree's modules work."""
    worker_client.use_tree(root, tuple(paths))


def use_data_seed(seed: object) -> None:
    """Trusted processes only (the harness, `kit.main`): the run's private data seed, or None
    for the problem's public data. Never an environment variable: a worker could read those."""
    global _data_seed
    if seed is not None and (type(seed) is not int or not 0 <= seed < 2**63):
        raise ValueError(f"data_seed must be an integer in [0, 2**63), got {seed!r}")
    _data_seed = seed


def private_data() -> bool:
    """Whether this evaluation draws its generated workloads under a run's private seed."""
    return _data_seed is not None


def seed(public: int, *parts: object) -> int:
    """The seed of one generated workload: `public` (the problem's published seed) unchanged
    when the run has no private seed, so published numbers reproduce; else a 63-bit mix of
    the run's seed, `public` and `parts` that a candidate cannot regenerate."""
    if _data_seed is None:
        return public
    text = json.dumps([_data_seed, public, *map(str, parts)])
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") >> 1


def problem_dir(evaluator_file: str) -> str:
    return os.path.dirname(os.path.abspath(evaluator_file))


def data_path(evaluator_file: str, *parts: str) -> str:
    """A data file of the problem: under $EVOLVE_DATA_DIR if set, else the problem's data/."""
    root = os.environ.get(DATA_ENV) or os.path.join(problem_dir(evaluator_file), "data")
    return os.path.join(root, *parts)


def read_json(path: str) -> Any:
    """A data file as JSON, with an error that names the file and how to get it."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"{path}: data file missing (`evolve data fetch PROBLEM` downloads the files "
            f"problem.toml lists; ${DATA_ENV} points elsewhere)"
        ) from None


def include(evaluator_file: str, relative: str) -> ModuleType:
    """A module shared with another problem, named in problem.toml's `include`.

    Resolved next to the evaluator (a checkout, the local sandbox), or in the
    folder a sandbox carried the includes to ($EVOLVE_INCLUDE_DIR). Loaded
    once per process.
    """
    carried = os.environ.get(INCLUDE_ENV)
    if carried:
        path = os.path.join(carried, os.path.basename(relative))
    else:
        path = os.path.normpath(os.path.join(problem_dir(evaluator_file), relative))
    if path not in _included:
        if not os.path.isfile(path):
            raise ImportError(
                f"{path}: included module missing; list {relative!r} in "
                "problem.toml's `include` so the sandbox carries it"
            )
        _included[path] = _import_path(path, "include")
    return _included[path]


def evaluate(
    program_path: str,
    split: str,
    function: str,
    run: Callable[[Callable, str], dict | tuple[dict, Mapping[str, object]]],
) -> dict:
    """Sandbox side: load the candidate's `function`, `run(fn, split)`, report its outputs.

    `fn` is the proxy `load` returns. `run` returns the outputs (JSON-able) for
    the trusted `score()`, or (outputs, artifacts); it raises `Invalid` for a
    broken rule. Exceptions the candidate raises propagate (as `CandidateError`
    subclasses named like the original): the harness reports them as runtime
    errors. Where the worker could not confine itself, the artifact `isolation`
    says so.
    """
    t0 = time.perf_counter()
    try:
        # The worker starts and imports the program while `run` loads its data; an import
        # error surfaces at the first call and is raised here as it is.
        fn = (
            worker_client.Remote(program_path, function, _missing, wait=False)
            if REMOTE
            else load(program_path, function)
        )
    except Invalid as e:
        return invalid(str(e), **e.metrics)
    try:
        try:
            got = run(fn, split)
        except worker_client.LoadFailed as e:
            raise e.error from None
    except Invalid as e:
        result = invalid(str(e), **e.metrics)
    else:
        outputs, extra = got if isinstance(got, tuple) else (got, {})
        artifacts = {"split": split, **{k: str(v) for k, v in extra.items()}}
        artifacts["evaluate_s"] = f"{time.perf_counter() - t0:.3f}"
        result = {"outputs": outputs, "artifacts": artifacts}
    finally:
        fn.close()  # the worker is gone before the harness reports
    if fn.note:
        result["artifacts"]["isolation"] = fn.note
    return result


def score(outputs: object, split: str, judge: Callable[[object, str], dict]) -> dict:
    """Trusted side: `judge(outputs, split)` re-checks and scores; `Invalid` rejects."""
    try:
        return judge(outputs, split)
    except Invalid as e:
        return invalid(str(e), **e.metrics)


def evaluate_and_score(evaluator: ModuleType, program_path: str, split: str) -> dict:
    """Both halves in this process, as the sandbox runs them in two (for `main` and tests)."""
    result = evaluator.evaluate(program_path, split)
    if "outputs" not in result or not hasattr(evaluator, "score"):
        return result
    scored = evaluator.score(result["outputs"], split)
    scored["artifacts"] = {**result.get("artifacts", {}), **scored.get("artifacts", {})}
    return scored


def main(evaluator: ModuleType | str, splits: Iterable[str], argv: list[str] | None = None) -> int:
    """`python evaluator.py [--data-seed N] PROGRAM [SPLIT ...]`: evaluate and score, one JSON
    line per split. PROGRAM is a file, or for a program of several files a folder holding
    them (the files it lacks are the seed's).

    Runs the candidate in the kit's confined worker process but without a
    sandbox's limits (time, memory, processes): for trusted programs
    (baselines, your own drafts). `evolve eval` is the sandboxed way.
    `--data-seed N` draws the generated workloads as a run with that private
    seed does (its value is in `evolve archive show RUN`).
    """
    module = sys.modules[evaluator] if isinstance(evaluator, str) else evaluator
    args = list(sys.argv[1:] if argv is None else argv)
    if "--data-seed" in args[:-1]:
        at = args.index("--data-seed")
        use_data_seed(int(args[at + 1]))
        del args[at : at + 2]
    if not args or args[0] in ("-h", "--help"):
        print(main.__doc__, file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="evolve-kit-") as tmp:
        program = _whole_program(args[0], problem_dir(str(module.__file__)), tmp)
        for split in args[1:] or list(splits):
            _print_split(module, program, split)
    return 0


def _whole_program(path: str, root: str, tmp: str) -> str:
    """A baseline written as its EVOLVE-BLOCKs only, completed with the seed's fixed code
    (as `evolve eval` does); any other program file as it is."""
    from evaluators.inside.markers import complete_from_seed  # kit.main only: the host side

    with open(os.path.join(root, "problem.toml"), "rb") as f:
        table = tomllib.load(f)
    entry = table["problem"]["entry"]
    if "program" in table:  # a program of several files: a folder of them
        return _tree_program(path, root, tmp, table)
    with open(os.path.join(root, entry), encoding="utf-8") as f:
        seed = f.read()
    with open(path, encoding="utf-8") as f:
        code = f.read()
    whole = complete_from_seed(code, seed)
    if whole == code:
        return path
    path = os.path.join(tmp, entry)
    with open(path, "w", encoding="utf-8") as f:
        f.write(whole)
    return path


def _tree_program(path: str, root: str, tmp: str, table: dict) -> str:
    """A program of several files (problem.toml's [program]) laid out under `tmp` from the
    folder `path` at the tree's paths, each file not there the seed's; its entry's path. The
    tree's modules import each other in the worker (`use_tree`)."""
    from evaluators.inside.layout import write_tree

    program = table["program"]
    if program.get("folder"):
        base = os.path.join(root, program["folder"])
        paths = sorted(
            os.path.relpath(os.path.join(d, name), base).replace(os.sep, "/")
            for d, _, names in os.walk(base)
            for name in names
            if "__pycache__" not in d and not name.endswith((".pyc", ".pyo"))
        )
    else:
        base, paths = root, [*program.get("files", []), *program.get("fixed", [])]
    if not os.path.isdir(path):
        raise SystemExit(f"{path}: this problem's program is several files; give a folder")
    files = {}
    for rel in paths:
        given = os.path.join(path, rel)
        with open(given if os.path.isfile(given) else os.path.join(base, rel), "rb") as f:
            files[rel] = f.read()
    write_tree(tmp, files)
    use_tree(tmp, paths)
    return os.path.join(tmp, table["problem"]["entry"])


def _print_split(module: ModuleType, program: str, split: str) -> None:
    t0 = time.perf_counter()
    result = evaluate_and_score(module, program, split)
    line = {
        "split": split,
        "score": result.get("score"),
        "valid": result.get("valid", True),
        "metrics": result.get("metrics", {}),
        "error": result.get("artifacts", {}).get("error"),
        "seconds": round(time.perf_counter() - t0, 3),
    }
    print(json.dumps(line))
