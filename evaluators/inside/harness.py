"""In-sandbox entrypoint: run a problem's evaluator on one candidate, write RESULT.json.

    python harness.py run REQ.json RESULT.json        # evaluate() next to the candidate
    python harness.py score OUTPUTS.json RESULT.json  # trusted score(outputs, split), no candidate
    python harness.py serve REQ.json RESULT.json      # a GEPA script's worker (gepa_serve.py)

RESULT.json may be `fd:N`, a file descriptor the host opened. In `run` mode,
$EVOLVE_STATUS_FD, when set, names a descriptor that gets one JSON line once
the evaluator is imported, before the candidate runs, and is then closed.
In `run` mode, before REQ.json is read, it forks the worker a kit problem runs
its candidate in (worker_start.py `zygote`): the worker never holds the
request (env values, data paths, hidden files), however it walks its memory.

A standalone, stdlib-only script because it runs where the `evaluators`
package is not importable (a bare interpreter, a container): everything it
needs lies beside it in evaluators/inside/, which the Docker image copies whole
to /opt/evolve and the local sandbox binds read-only. The host never
parses stdout: the result travels only in RESULT.json, and the host re-checks
everything in it, since the candidate shares this process in `run` mode.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import importlib.util
import json
import mmap
import os
import sys
import tomllib
import traceback
import types

# The status strings of evaluators/sandbox.py (Status), which this script cannot import.
OK = "ok"
INVALID = "invalid"
SYNTAX_ERROR = "syntax_error"
RUNTIME_ERROR = "runtime_error"
SANDBOX_ERROR = "sandbox_error"
TIMEOUT = "timeout"
COMPAT = "openevolve_compat"  # the stand-in `openevolve` package, beside this file
TREE_HEADER = "# evolve-file: "  # evaluators/tree.py's: a program of several files

TRACEBACK_CHARS = 8000
STATUS_FD_ENV = "EVOLVE_STATUS_FD"  # run mode: where to say whether the evaluator loaded
SEED_FD_ENV = "EVOLVE_DATA_SEED_FD"  # run mode: a descriptor holding the run's data seed
PRIVATE_TMP_ENV = "EVOLVE_PRIVATE_TMP"  # "1": bubblewrap's or Docker's own view (sandbox.py)
PIDNS_ENV = "EVOLVE_PIDNS"  # "1": we run in our own PID namespace (the local sandbox's bwrap)
SERVE_FDS_ENV = "EVOLVE_SERVE_FDS"  # serve mode: "READ,WRITE", the host's channel
_reserve: bytearray | None = bytearray(1 << 20)  # freed on MemoryError to have room to report


def _clip_tail(text: str, n: int = TRACEBACK_CHARS) -> str:
    return text if len(text) <= n else "[...]\n" + text[-n:]


def _failure(status: str, error: str, exc: BaseException | None = None) -> dict:
    artifacts = {"error": error}
    if exc is not None:
        artifacts["traceback"] = _clip_tail("".join(traceback.format_exception(exc)))
    return {"status": status, "score": None, "metrics": {}, "artifacts": artifacts}


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def _from_exception(exc: BaseException, program: str, limits: dict) -> dict:
    """Classify an exception raised by evaluate(), the candidate or score()."""
    global _reserve
    _reserve = None  # room to format the traceback if memory ran out
    chain = _chain(exc)
    for e in chain:
        if isinstance(e, SyntaxError) and os.path.abspath(e.filename or "") == program:
            return _failure(SYNTAX_ERROR, f"{type(e).__name__}: {e}", e)
    if any(isinstance(e, MemoryError) for e in chain):
        mb = limits.get("memory_mb")
        return _failure(RUNTIME_ERROR, f"memory limit ({mb} MB) exceeded (MemoryError)", exc)
    if any(isinstance(e, OSError) and e.errno == errno.EFBIG for e in chain):  # RLIMIT_FSIZE
        mb = limits.get("max_file_mb")
        return _failure(
            RUNTIME_ERROR,
            f"file size limit ({mb} MB) exceeded: a file or the printed output grew too large",
            exc,
        )
    if isinstance(exc, SystemExit):
        return _failure(RUNTIME_ERROR, f"the program called sys.exit({exc.code!r})", exc)
    return _failure(RUNTIME_ERROR, f"{type(exc).__name__}: {exc}"[:2000], exc)


def _syntax_check(program: str) -> dict | None:
    """Compile the candidate first: a syntax error is reported as such even if
    the evaluator would have swallowed it. Whatever compiling its text raises is the
    candidate's: nesting too deep for the compiler (RecursionError) is a syntax error, a
    program too large to compile in its memory limit a runtime error, never ours."""
    global _reserve
    with open(program, "rb") as f:
        source = f.read()
    try:
        compile(source, program, "exec", dont_inherit=True)
    except MemoryError as e:
        _reserve = None
        return _failure(
            RUNTIME_ERROR, "memory limit exceeded (MemoryError) compiling the program", e
        )
    except RecursionError as e:
        return _failure(
            SYNTAX_ERROR, f"RecursionError: the program is nested too deeply to compile ({e})"
        )
    except Exception as e:  # SyntaxError, ValueError (a NUL byte), whatever else compile raises
        res = _failure(SYNTAX_ERROR, f"{type(e).__name__}: {e}"[:2000])
        res["artifacts"]["traceback"] = _clip_tail("".join(traceback.format_exception_only(e)))
        return res
    return None


def _provide_kit():
    """Make `from evaluators import kit` work in every sandbox: kit.py lies beside this file
    (in the package's evaluators/inside/, and in the image's /opt/evolve), whatever else is
    installed. The package is made here: `evaluators.inside` is this folder, and
    `evaluators.kit` its kit.py, as the package's own evaluators/kit.py makes it."""
    if "evaluators.kit" in sys.modules:
        return sys.modules["evaluators.kit"]
    here = os.path.dirname(os.path.abspath(__file__))
    package = types.ModuleType("evaluators")
    package.__path__ = []
    inside = types.ModuleType("evaluators.inside")
    inside.__path__ = [here]
    sys.modules["evaluators"] = package
    sys.modules["evaluators.inside"] = inside
    package.inside = inside  # type: ignore[attr-defined]
    spec = importlib.util.spec_from_file_location(
        "evaluators.inside.kit", os.path.join(here, "kit.py")
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"the problem kit is missing beside {__file__}")
    kit = importlib.util.module_from_spec(spec)
    sys.modules["evaluators.inside.kit"] = sys.modules["evaluators.kit"] = kit
    spec.loader.exec_module(kit)
    package.kit = inside.kit = kit  # type: ignore[attr-defined]
    return kit


def _load_evaluator(problem_dir: str):
    """Import <problem_dir>/evaluator.py by path as module `evaluator`, with the kit at hand."""
    _provide_kit()
    if problem_dir not in sys.path:
        sys.path.insert(0, problem_dir)
    spec = importlib.util.spec_from_file_location(
        "evaluator", os.path.join(problem_dir, "evaluator.py")
    )
    if spec is None or spec.loader is None:
        raise ImportError(f"no evaluator.py in {problem_dir}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["evaluator"] = module
    spec.loader.exec_module(module)
    return module


def _is_number(v: object) -> bool:
    if isinstance(v, bool) or type(v).__name__ == "bool_" or isinstance(v, (str, bytes)):
        return False
    return isinstance(v, (int, float)) or hasattr(type(v), "__float__")


def _text(v: object) -> str:
    if isinstance(v, str):
        return v
    if isinstance(v, (bytes, bytearray)):
        return bytes(v).decode("utf-8", "replace")
    try:
        return str(v)
    except Exception:  # an int of 5000 digits, a candidate's object whose __str__ raises
        return f"<a {type(v).__name__} that cannot be shown as text>"


def _float(v: object) -> float | None:
    """v as a float, or None where it is no number or float() refuses it (10**400)."""
    try:
        return float(v) if _is_number(v) else None  # type: ignore[arg-type]
    except Exception:
        return None


def _unreadable(who: str, e: Exception) -> dict:
    """What a returned value that breaks on reading is: the candidate's failure, not ours."""
    return _failure(RUNTIME_ERROR, f"{who} returned a value that cannot be read: {e!r:.500}", e)


def _split_metrics(raw: object) -> tuple[dict[str, float], dict[str, str]]:
    """Numeric metrics stay metrics; anything else becomes an artifact."""
    if not isinstance(raw, dict):
        return {}, {"metrics": _text(raw)}
    metrics, other = {}, {}
    for k, v in raw.items():
        f = _float(v)
        if f is not None:
            metrics[_text(k)] = f
        else:
            other[_text(k)] = _text(v)
    return metrics, other


def _texts(raw: object) -> dict[str, str]:
    return {_text(k): _text(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


def _native(raw: object, who: str) -> dict:
    """A native dict {score, metrics, artifacts, outputs, valid}; the host checks the score."""
    if not isinstance(raw, dict):
        return _failure(RUNTIME_ERROR, f"{who} returned {type(raw).__name__}, expected a dict")
    try:
        metrics, moved = _split_metrics(raw.get("metrics") or {})
        artifacts = {**moved, **_texts(raw.get("artifacts"))}
        score = raw.get("score")
        if _is_number(score) and (as_float := _float(score)) is not None:
            score = as_float
        elif _is_number(score):  # past a float's range: the host says the score is invalid
            score = score if type(score) is int and score.bit_length() < 8192 else _text(score)
        out: dict[str, object] = {
            "status": OK,
            "score": score,
            "metrics": metrics,
            "artifacts": artifacts,
        }
        if "outputs" in raw:
            out["outputs"] = raw["outputs"]
        if not raw.get("valid", True):
            out["status"] = INVALID
            artifacts.setdefault("error", f"{who} reported valid=False")
    except Exception as e:
        return _unreadable(who, e)
    return out


def _openevolve(out, fitness_of) -> dict:
    """An OpenEvolve evaluation (openevolve_run.Outcome) as a result: its score is
    OpenEvolve's fitness of the raw metrics; an `error` message among them, or no
    number at all, makes it a failure (OpenEvolve would score it 0)."""
    try:
        metrics, moved = _split_metrics(out.metrics)
        artifacts = {**_texts(out.artifacts), **moved}
        if out.note:
            artifacts["cascade"] = out.note
        result: dict[str, object] = {"status": OK, "score": None, "metrics": metrics}
        error = out.metrics.get("error")
        if error is not None and not _is_number(error):
            result["status"] = RUNTIME_ERROR
            artifacts["error"] = _text(error)
        elif not metrics:
            result["status"] = RUNTIME_ERROR
            artifacts.setdefault("error", "the evaluator returned no numeric metrics")
        else:
            result["score"] = _float(fitness_of(out.metrics))  # None: the host says invalid
            result["stages"] = {
                _text(k): f for k, v in out.stages.items() if (f := _float(v)) is not None
            }
        result["artifacts"] = artifacts
    except Exception as e:
        return _unreadable("the evaluator", e)
    return result


def _report_loaded(failure: dict | None) -> None:
    """Tell the host, on a channel closed before any candidate code runs, whether the
    evaluator loaded: only this report can make an evaluation a sandbox error."""
    fd = os.environ.pop(STATUS_FD_ENV, None)
    if fd is None or not fd.isdigit():
        return
    line = json.dumps(failure if failure is not None else {"loaded": True}) + "\n"
    try:
        os.write(int(fd), line.encode())
    finally:
        os.close(int(fd))


def _tree(req: dict, program: str) -> tuple[str, list[str]]:
    """(the folder the program's files lie in, the tree's relative paths: [] for one file).
    A tree's root is our cwd, where the host laid it out; its root goes on sys.path (last:
    the evaluator's own modules win in this trusted process) for an evaluator that imports
    the candidate here, and on the kit's worker's (kit.use_tree)."""
    code = req.get("program_code") or ""
    if not code.startswith(TREE_HEADER):  # one file: nothing to do
        return os.path.dirname(program), []
    _provide_kit()
    from evaluators.inside import layout

    paths = layout.tree_paths(code)
    root = layout.tree_root(program, req["program_name"])
    sys.path.append(root)
    extra = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (extra, root) if p)
    return root, paths


def run(req: dict) -> dict:
    """`run` mode: import the evaluator and evaluate the candidate (OpenEvolve's
    evaluate_stageN() through its cascade)."""
    program = os.path.abspath(req["program_name"])  # the host wrote it into our cwd
    root, paths = _tree(req, program)
    for rel in [p for p in paths if p.endswith(".py")] or [""]:
        path = os.path.join(root, rel) if rel else program
        if path.endswith(".py") and (bad := _syntax_check(path)) is not None:
            if rel:  # which file of the tree
                bad["artifacts"]["error"] = f"{rel}: {bad['artifacts']['error']}"
            _report_loaded(None)
            return bad
    _apply_env(req.get("env"))
    vendored = os.path.isfile(os.path.join(req["problem_dir"], ".cargo", "config.toml"))
    if vendored or os.environ.get("EVOLVE_CRATES_DIR"):
        _provide_kit()  # the `evaluators` package: the problem vendored its crates, or we did
        from evaluators.inside.caches import prepare_cargo

        prepare_cargo(req["problem_dir"])
    if req.get("fmt") in ("shinka", "levi", "gepa"):
        _release_worker()
        return _run_shinka(req, program, root, bool(paths))
    if req.get("fmt") == "skydiscover":
        _release_worker()
        return _run_skydiscover(req, program)
    if req.get("fmt", "native") != "native":
        _release_worker()
        return _run_openevolve(req, program, root, bool(paths))
    kit = _provide_kit()
    if paths:
        kit.use_tree(root, paths)
    in_worker = _uses_worker(req["problem_dir"])
    if in_worker:
        kit.prestart(program)  # the worker imports the program's libraries meanwhile
    else:
        kit.release()  # the worker main() forked is not needed
    # the run's data seed, a descriptor the sandbox passed (never a file), read only now
    # that the worker is forked
    seed_fd = os.environ.pop(SEED_FD_ENV, None)
    if seed_fd is not None and seed_fd.isdigit():
        kit.use_data_seed(int(_read_fd(int(seed_fd))))
    try:
        return _run_native(req, program, in_worker)
    finally:
        kit.release()


def _fork_worker() -> None:
    """Fork the candidate's worker (worker_start.zygote) now, before the payload is read: it holds
    nothing of the request (env values, data paths, hidden files), whatever it walks."""
    try:
        if getattr(_provide_kit(), "REMOTE", True):
            from evaluators.inside import worker_start

            worker_start.zygote()
    except Exception:
        pass  # the worker will start as a fresh interpreter instead


def _release_worker() -> None:
    """End the forked worker if nothing took it (before strays are counted)."""
    start = sys.modules.get("evaluators.inside.worker_start")
    if start is not None:
        start.release()


def _uses_worker(problem_dir: str) -> bool:
    """Whether the evaluator runs the candidate in the kit's worker: its folder's modules or its
    includes call kit.evaluate or kit.load. Read, not imported; a problem that reaches the kit
    some other way only starts its worker later."""
    paths = [os.path.join(problem_dir, n) for n in os.listdir(problem_dir) if n.endswith(".py")]
    try:
        with open(os.path.join(problem_dir, "problem.toml"), "rb") as f:
            includes = tomllib.load(f).get("problem", {}).get("include", [])
    except (OSError, ValueError):
        includes = []
    carried = os.environ.get("EVOLVE_INCLUDE_DIR")
    for rel in includes if isinstance(includes, list) else []:
        if isinstance(rel, str):
            base = os.path.join(carried, os.path.basename(rel)) if carried else None
            paths.append(base or os.path.normpath(os.path.join(problem_dir, rel)))
    return any(_mentions(path, (b"kit.evaluate(", b"kit.load(")) for path in paths)


def _mentions(path: str, needles: tuple[bytes, ...]) -> bool:
    """Whether the file holds one of `needles`, searched in a mapping of it: its text (an
    evaluator's seeds, say) never lands in this process's heap, which a worker forked
    later would copy."""
    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
            return any(m.find(n) >= 0 for n in needles)
    except (OSError, ValueError):  # ValueError: an empty file cannot be mapped
        return False


def _worker_likely() -> bool:
    """Whether the problem runs its candidate in the kit's worker, judged before the payload
    is read from the folder both sandboxes put on PYTHONPATH (True when unsure). Only saves
    a fork: a worker not forked in main() starts as a fresh interpreter."""
    folders = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if len(folders) != 1 or not os.path.isfile(os.path.join(folders[0], "evaluator.py")):
        return True
    try:
        return _uses_worker(folders[0])
    except OSError:
        return True


def _run_native(req: dict, program: str, in_worker: bool) -> dict:
    """evaluate() of a native problem. Every process it starts is Landlocked (children.py).
    An evaluator that runs a Python candidate here, not in the kit's worker, in a sandbox
    with no view of its own (the local fallback: the host's files, runs folder included,
    are all in reach) first has this process Landlocked as an OpenEvolve evaluation is (its
    problem, data and scratch); bubblewrap and Docker show it only those already."""
    fn, failure, note = None, None, None
    try:
        fn = getattr(_load_evaluator(req["problem_dir"]), "evaluate", None)
        if not callable(fn):
            failure = _failure(SANDBOX_ERROR, "evaluator.py defines no evaluate()")
        elif not in_worker and os.environ.get(PRIVATE_TMP_ENV) != "1":
            note = _confine_here(req["problem_dir"], program)  # the fallback: the host in reach
    except BaseException as e:
        failure = _failure(SANDBOX_ERROR, f"cannot import the problem's evaluator.py: {e!r}", e)
    _report_loaded(failure)
    if failure is not None or fn is None:
        return failure or {}
    from evaluators.inside import children

    note = children.confine(req, program, _applied) or note  # all it starts: Landlocked
    try:
        raw = fn(program, req["split"])
    except BaseException as e:
        return _from_exception(e, program, req.get("limits", {}))
    out = _native(raw, "evaluate()")
    if note and isinstance(out.get("artifacts"), dict):
        out["artifacts"].setdefault("isolation", note)
    return out


def _confine_here(problem_dir: str, program: str) -> str | None:
    """Landlock this process, whose evaluator runs the candidate in it, as an OpenEvolve
    evaluation is (openevolve_run.grants), plus the sandbox's private /tmp; a note if the
    kernel has no Landlock."""
    from evaluators.inside import children, landlock
    from evaluators.inside import openevolve_run as oe

    rules = oe.grants(problem_dir, os.getcwd(), program) + children.private_tmp()
    done = landlock.restrict((), (), rules)
    return None if done.confined else f"{done.error}: the candidate can read the problem's files"


_applied: dict[str, str] = {}  # what _apply_env set: taken out of the candidate's processes


def _apply_env(env: object) -> None:
    """The problem's and the run's extra variables (the host checked them); never ours."""
    if isinstance(env, dict):
        for k, v in env.items():
            if isinstance(k, str) and isinstance(v, str) and not k.startswith("EVOLVE_"):
                os.environ[k] = _applied[k] = v


def _read_fd(fd: int) -> str:
    """All of a descriptor the host passed (a memfd: its request, the data seed), closed
    after: nothing started later inherits it, and no file of it lies anywhere."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
    except OSError:
        pass  # a pipe
    chunks = []
    try:
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8")


def _run_openevolve(req: dict, program: str, root: str, is_tree: bool) -> dict:
    """An OpenEvolve-format evaluator in a private copy of its folder, through
    OpenEvolve's cascade (openevolve_run.py)."""
    stage = req.get("stage")
    module, failure, given = None, None, program
    try:
        _provide_kit()  # the `evaluators` package, wherever this harness lies
        from evaluators.inside import openevolve_run as oe

        workdir = oe.private_copy(req["problem_dir"], root)
        os.chdir(workdir)
        os.environ["PYTHONPATH"] = workdir + os.pathsep + root if is_tree else workdir
        compat = os.path.join(os.path.dirname(os.path.abspath(__file__)), COMPAT)
        oe.use_stand_in(compat)
        fitness_of = oe.fitness_rule(compat, req.get("feature_dims") or [])
        module = _load_evaluator(workdir)
        if not is_tree:  # where OpenEvolve writes a candidate for its evaluator
            program = oe.temporary_copy(given)
        oe.confine(req["problem_dir"], root, program)  # before any stage
        name = stage or "evaluate"
        if not callable(getattr(module, name, None)):
            failure = _failure(SANDBOX_ERROR, f"evaluator.py defines no {name}()")
    except BaseException as e:
        failure = _failure(SANDBOX_ERROR, f"cannot import the problem's evaluator.py: {e!r}", e)
    if failure is None:
        try:  # OpenEvolve refuses at start evaluator_args that evaluate() cannot take
            oe.forward_args(module, req.get("evaluator_args") or {})
        except oe.EvaluatorArgsError as e:
            failure = _failure(SANDBOX_ERROR, f"evaluator.py: {e}")
    _report_loaded(failure)
    if failure is not None:
        return failure
    limits = req.get("limits", {})
    timeout_s = float(req.get("stage_timeout_s") or limits.get("timeout_s") or 300)
    try:
        if stage:
            out = oe.single(module, program, stage, timeout_s, fitness_of)
        else:
            out = oe.run(
                module,
                program,
                req.get("cascade"),
                timeout_s,
                int(req.get("retries") or 0),
                fitness_of,
            )
    except oe.StageTimeout as e:
        return _failure(TIMEOUT, f"{e}; all its processes were killed")
    except BaseException as e:
        return _from_exception(e, program, limits)
    finally:
        if program != given:
            with contextlib.suppress(OSError):
                os.unlink(program)  # the temporary copy: /tmp may be the machine's own
    return _openevolve(out, fitness_of)


def _shinka_folder(req: dict, program: str, root: str) -> tuple[str, dict | None]:
    """(the private copy of the folder, the failure that stops the evaluation or None), this
    process confined to its grants: the preparation of `_run_shinka` and `serve`."""
    gepa = req.get("fmt") == "gepa"
    workdir = ""
    try:
        _provide_kit()  # the `evaluators` package, wherever this harness lies
        from evaluators.inside import gepa_score
        from evaluators.inside import openevolve_run as oe
        from evaluators.inside import shinka_run as sh

        needed = "problem.py" if req.get("fmt") == "levi" else sh.EVALUATE
        if gepa:  # the script's path in the folder, as the loader set it
            needed = os.path.normpath(os.environ.get(gepa_score.SCRIPT_ENV, "main.py"))
            needed = "main.py" if needed.startswith(("/", "..")) else needed
        workdir = oe.private_copy(req["problem_dir"], root)
        if not os.path.isfile(os.path.join(workdir, needed)):
            return workdir, _failure(SANDBOX_ERROR, f"no {needed} in {req['problem_dir']}")
        oe.confine(req["problem_dir"], root, program)
    except BaseException as e:
        return workdir, _failure(
            SANDBOX_ERROR, f"cannot prepare the ShinkaEvolve evaluator: {e!r}", e
        )
    return workdir, None


def _run_shinka(req: dict, program: str, root: str, is_tree: bool) -> dict:
    """A ShinkaEvolve-format evaluate.py in a private copy of its folder, started as
    ShinkaEvolve starts it (shinka_run.py), after this process confined itself; a LEVI
    folder's problem.py the same way, through levi_score.py (LEVI's own scoring), and a GEPA
    script through gepa_score.py (its optimize_anything call intercepted)."""
    limits = req.get("limits", {})
    levi, gepa = req.get("fmt") == "levi", req.get("fmt") == "gepa"
    workdir, failure = _shinka_folder(req, program, root)
    _report_loaded(failure)
    if failure is not None:
        return failure
    from evaluators.inside import gepa_score, levi_score
    from evaluators.inside import shinka_run as sh

    script = levi_score.SCRIPT if levi else gepa_score.SCRIPT if gepa else sh.EVALUATE
    try:
        timeout_s = float(limits.get("timeout_s") or 300)
        out = sh.evaluate(workdir, program, timeout_s, root if is_tree else None, script)
    except sh.EvaluatorTimeout as e:
        return _failure(TIMEOUT, f"{e}; all its processes were killed")
    except BaseException as e:
        return _from_exception(e, program, limits)
    if levi:
        return levi_score.to_result(out, OK, INVALID, RUNTIME_ERROR)
    if gepa:
        return gepa_score.to_result(out, OK, INVALID, RUNTIME_ERROR)
    return sh.to_result(out, OK, INVALID, RUNTIME_ERROR)


def serve(req: dict) -> dict:
    """`serve` mode: a GEPA script's long-lived worker (gepa_serve.py), which imports the
    script once and scores each candidate the host sends on the channel $SERVE_FDS_ENV names,
    in the private copy of its folder, this process confined as for `run`. Its result says
    how the worker ended; the host reads it only when a call went unanswered."""
    fds = os.environ.pop(SERVE_FDS_ENV, "").split(",")
    if len(fds) != 2 or not all(f.isdigit() for f in fds):
        return _failure(SANDBOX_ERROR, f"serve mode needs ${SERVE_FDS_ENV} (READ,WRITE)")
    program = os.path.abspath(req["program_name"])
    _apply_env(req.get("env"))
    workdir, failure = _shinka_folder(req, program, os.path.dirname(program))
    _report_loaded(failure)
    if failure is not None:
        return failure
    from evaluators.inside import gepa_serve
    from evaluators.inside import shinka_run as sh

    return gepa_serve.supervise(workdir, (int(fds[0]), int(fds[1])), sh.stand_in_path())


def _run_skydiscover(req: dict, program: str) -> dict:
    """A SkyDiscover folder's evaluate.sh, shown at /benchmark by the sandbox, started as
    SkyDiscover starts it (skydiscover_run.py) after this process confined itself."""
    failure = None
    try:
        _provide_kit()
        from evaluators.inside import openevolve_run as oe
        from evaluators.inside import skydiscover_run as sd

        if not os.path.isfile(os.path.join(sd.BENCHMARK, sd.SCRIPT)):
            why = f"no {sd.BENCHMARK}/{sd.SCRIPT}: this sandbox cannot show evaluator/ there"
            failure = _failure(SANDBOX_ERROR, why + " (use bubblewrap or --sandbox docker)")
        else:
            oe.confine(sd.BENCHMARK, os.getcwd(), program)
    except BaseException as e:
        failure = _failure(SANDBOX_ERROR, f"cannot prepare the SkyDiscover evaluator: {e!r}", e)
    _report_loaded(failure)
    if failure is not None:
        return failure
    try:
        timeout_s = float(req.get("limits", {}).get("timeout_s") or 360)
        out = sd.evaluate(program, req.get("split") or "train", timeout_s, os.getcwd())
    except sd.ScriptTimeout as e:
        return _failure(TIMEOUT, f"{e}; all its processes were killed")
    except BaseException as e:
        return _from_exception(e, program, req.get("limits", {}))
    return sd.to_result(out, OK, RUNTIME_ERROR, TIMEOUT)


def score(payload: dict) -> dict:
    """`score` mode: trusted score(outputs, split) in a process that never saw the candidate."""
    _apply_env(payload.get("env"))
    _provide_kit().use_data_seed(payload.get("data_seed"))  # score() regenerates the same data
    score_fn = _load_evaluator(payload["problem_dir"]).score
    try:
        raw = score_fn(payload.get("outputs"), payload["split"])
    except BaseException as e:
        res = _from_exception(e, "", payload.get("limits", {}))
        if " limit (" not in res["artifacts"]["error"]:
            res["status"] = INVALID  # score() choked on the outputs: they are malformed
            res["artifacts"]["error"] = "score() rejected the outputs: " + res["artifacts"]["error"]
        return res
    res = _native(raw, "score()")
    res.pop("outputs", None)
    return res


def _jsonable(o: object) -> object:
    if hasattr(o, "tolist"):  # numpy arrays and scalars
        return o.tolist()
    if isinstance(o, (set, frozenset, tuple)):
        return list(o)
    raise TypeError(f"{type(o).__name__} is not JSON-serializable")


def _write(path: str, result: dict) -> None:
    try:
        text = json.dumps(result, allow_nan=True, default=_jsonable)
    except Exception as e:  # outputs the host cannot carry: the candidate's problem
        text = json.dumps(_failure(RUNTIME_ERROR, f"result is not JSON-serializable: {e!r}"))
    if path.startswith("fd:"):  # a file the host opened for us (the local sandbox)
        fd, data = int(path[3:]), text.encode("utf-8")
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        while data:
            data = data[os.write(fd, data) :]
        return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _others_alive() -> int:
    """Processes of our PID namespace besides its init (pid 1) and us, zombies aside."""
    n = 0
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in (1, os.getpid()):
            try:
                with open(f"/proc/{name}/stat", "rb") as f:
                    n += f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
            except (OSError, IndexError):
                pass
    return n


def main(argv: list[str]) -> int:
    global _reserve
    if len(argv) != 4 or argv[1] not in ("run", "score", "serve"):
        print(__doc__, file=sys.stderr)
        return 2
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != here]  # no shadowing
    mode, src, dst = argv[1:]
    if mode == "run" and _worker_likely():
        _fork_worker()  # first: nothing of the request exists in this process yet
    if dst.startswith("fd:") and dst[3:].isdigit():
        os.set_inheritable(int(dst[3:]), False)  # no process the evaluator starts gets it
    try:
        if src.startswith("fd:") and src[3:].isdigit():  # the request was never a file
            payload = json.loads(_read_fd(int(src[3:])))
        else:
            with open(src, encoding="utf-8") as f:
                payload = json.load(f)
        modes = {"run": run, "score": score, "serve": serve}
        result = modes[mode](payload)
    except MemoryError:
        _reserve = None
        gc.collect()
        result = _failure(RUNTIME_ERROR, "memory limit exceeded (MemoryError) in the harness")
    except BaseException as e:
        result = _failure(SANDBOX_ERROR, f"harness failed: {e!r}", e)
    _release_worker()
    _reserve = None
    gc.collect()
    if os.environ.get(PIDNS_ENV) == "1":  # what the namespace will kill when we exit
        result["strays"] = _others_alive()
    _write(dst, result)
    return 0


if __name__ == "__main__":
    code = main(sys.argv)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:
            pass
    # Skip interpreter shutdown: candidate threads and atexit hooks must not
    # keep the process alive or rewrite the result after it was written.
    os._exit(code)
