"""Every process a native evaluator starts runs Landlocked, as the candidate's worker does.

Why: a compiled or other-language candidate is not run by the kit's worker but by the
evaluator itself (`subprocess.run(["g++", ...])`, then the binary), a child of the
harness, which holds the request, the data seed and the problem. So while evaluate() runs,
`confine()` routes every process started through subprocess (and so asyncio), os.system,
os.popen and os.posix_spawn[p] through exec_confined.py, which Landlocks itself and then
execs the program: it reads the system, the interpreter's libraries, the toolchains the
problem declared (`tools`) and the candidate's program, writes only the scratch folder
(its HOME and TMPDIR), and never reads the problem, its data or includes, the harness,
the runs folder or anything else on the machine; where the kernel knows how, it connects
to no TCP port and signals nothing outside. The run's `--env` values are taken out of its
environment. What a child needs of the problem, the evaluator hands it (stdin, or a copy
in the scratch). Where the kernel has no Landlock the children run as the sandbox
alone confines them, and the result says so (its `isolation` artifact), as the worker's.

Stdlib only: it runs in the harness, inside every sandbox.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping

from evaluators.inside import caches, landlock, layout, worker_grants

HERE = os.path.dirname(os.path.abspath(__file__))
WRAPPER = os.path.join(HERE, "exec_confined.py")
TOOL_DIRS_ENV = "EVOLVE_TOOL_DIRS"  # evaluators/toolchain.py: Toolchain.roots
PRIVATE_TMP_ENV = "EVOLVE_PRIVATE_TMP"  # evaluators/sandbox.py: "1" where /tmp is private
# what a program and the tools it runs read besides its libraries (and openevolve_run)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SYSTEM_FILES = (
    "/etc/ld.so.cache",
    "/etc/localtime",
    "/etc/nsswitch.conf",
    "/etc/passwd",
    "/etc/group",
    "/dev/urandom",
    "/dev/random",
    "/dev/zero",
)
_READ_DIRS = ("/proc", "/sys/devices/system/cpu")  # another domain's /proc files stay closed

_state = threading.local()  # `trusted()`: this thread starts an unconfined process
_installed: dict | None = None  # what confine() replaced, and the spec and env it uses


class trusted:
    """Within this block the calling thread's processes start unconfined: the harness's own
    (the worker, which confines itself, or the ShinkaEvolve evaluator, which the harness
    confined), never an evaluator's."""

    def __enter__(self) -> None:
        _state.depth = getattr(_state, "depth", 0) + 1

    def __exit__(self, *exc: object) -> None:
        _state.depth -= 1


def _is_trusted() -> bool:
    return getattr(_state, "depth", 0) > 0


def rules(program: str, private: list[str], homes: list[str]) -> list[tuple[str, int]]:
    """(path, Landlock rights) of an evaluator's child: run and read the system and the
    interpreter's libraries (never a folder of `private`, nor one holding it), the tools,
    the program's file; write the scratch (`homes`: the harness's cwd, HOME, TMPDIR when it
    started, each unless it holds or lies in a private folder) and /dev/null."""
    dirs, files, listed = worker_grants.grants({"private": private})
    out = [(d, landlock.EXEC_DIR) for d in dirs]
    out += [(d, landlock.FS_READ_DIR) for d in listed]
    out += [(f, landlock.READ_FILE | landlock.FS_EXECUTE) for f in files]
    roots = [*SYSTEM_DIRS, *os.environ.get(TOOL_DIRS_ENV, "").split(os.pathsep)]
    for root in roots:
        real = os.path.realpath(root) if root else ""
        if real and real != "/" and not any(worker_grants.under(p, real) for p in private):
            out.append((root, landlock.EXEC_DIR))
    out += [(p, landlock.READ_DIR) for p in _READ_DIRS]
    out += [(p, landlock.READ_FILE) for p in (*SYSTEM_FILES, os.path.realpath(program))]
    for home in homes:
        others = [p for p in private if p not in homes]
        if home != "/" and not any(
            worker_grants.under(p, home) or worker_grants.under(home, p) for p in others
        ):
            out.append((home, landlock.WRITE_DIR))
    out += private_tmp()
    out.append(("/dev/null", landlock.WRITE_FILE))
    return out


def private_tmp() -> list[tuple[str, int]]:
    """/tmp and /dev/shm, writable where they are the evaluation's own (bubblewrap's tmpfs,
    the container's, $EVOLVE_PRIVATE_TMP); never the host's, where a runs folder may lie."""
    if os.environ.get(PRIVATE_TMP_ENV) != "1":
        return []
    return [("/tmp", landlock.WRITE_DIR), ("/dev/shm", landlock.WRITE_DIR)]


def vendored(problem_dir: str) -> list[str]:
    """The crate folders the problem's .cargo/config.toml names (caches.py), or those fetched
    for it ($EVOLVE_CRATES_DIR): cargo, a child, reads them; they hold only published crates."""
    text = caches.cargo_config(problem_dir) or ""
    found = [m.group(3) for m in caches._DIRECTORY.finditer(text) if os.path.isabs(m.group(3))]
    return found + [p for p in [os.environ.get(caches.CRATES_ENV, "")] if os.path.isabs(p)]


def confine(req: dict, program: str, env: dict[str, str]) -> str | None:
    """From now on every process this harness starts (outside `trusted()`) is Landlocked by
    exec_confined.py, with `env`'s values taken out of its environment. A one-line note
    when this kernel has no Landlock (the processes then run as the sandbox alone confines
    them, as the worker does), else None."""
    global _installed
    if _installed is not None:
        return None
    if landlock.abi_version() <= 0:
        return "landlock unavailable: the evaluator's processes can read the problem's files"
    problem = req["problem_dir"]
    private = [problem, HERE, os.path.dirname(HERE)]
    private += [os.environ.get(v, "") for v in ("EVOLVE_DATA_DIR", "EVOLVE_INCLUDE_DIR")]
    private += [os.path.dirname(p) for p in (req.get("includes") or []) if isinstance(p, str)]
    private += [os.path.dirname(p) for p in (req.get("hidden") or []) if isinstance(p, str)]
    real_root = layout.tree_root(os.path.realpath(program), str(req.get("program_name") or ""))
    if real_root != os.path.realpath(os.getcwd()):
        private.append(real_root)  # Docker's /in: the request lies there
    homes = list(
        dict.fromkeys(
            os.path.realpath(p)
            for p in (os.getcwd(), os.environ.get("HOME"), os.environ.get("TMPDIR"))
            if p and os.path.isabs(p)
        )
    )
    _installed = {
        "spec": None,  # made by the first process started (`_spec`): most evaluations start none
        "make_spec": lambda: _make_spec(program, [p for p in private if p], homes, problem),
        "env": dict(env),
        "execute_child": subprocess.Popen._execute_child,  # type: ignore[attr-defined]
        "system": os.system,
        "posix_spawn": getattr(os, "posix_spawn", None),
        "posix_spawnp": getattr(os, "posix_spawnp", None),
    }
    subprocess.Popen._execute_child = _execute_child  # type: ignore[attr-defined]
    os.system = _system  # type: ignore[assignment]
    if _installed["posix_spawn"] is not None:
        os.posix_spawn = _posix_spawn
        os.posix_spawnp = _posix_spawnp
    return None


def _make_spec(program: str, private: list[str], homes: list[str], problem: str) -> str:
    """The rules as exec_confined.py takes them; the private folders of the modules loaded by
    now too (a simulator the evaluator imported late)."""
    grants = rules(program, worker_grants.private_paths(private), homes)
    grants += [(d, landlock.READ_DIR) for d in vendored(problem)]
    return json.dumps([[p, a] for p, a in grants])


def _spec() -> str:
    assert _installed is not None
    if _installed["spec"] is None:
        _installed["spec"] = _installed["make_spec"]()
    return _installed["spec"]


def _child_env(env: Mapping | None) -> dict:
    """The child's environment (the given one, else ours) without the run's `--env` values."""
    base = os.environ if env is None else env
    secret = _installed["env"] if _installed else {}
    out = {}
    for k, v in base.items():
        name = os.fsdecode(k)
        if name in secret and os.fsdecode(v) == secret[name]:
            continue
        out[k] = v
    return out


def _resolve(name: str, env: dict, search: bool) -> str:
    """The file to exec, as the kernel would find it; FileNotFoundError as Popen raises it."""
    if search and os.sep not in name:
        path = env.get("PATH", env.get(b"PATH", os.defpath))
        found = shutil.which(name, path=os.fsdecode(path))
    else:
        found = name if os.path.isfile(name) and os.access(name, os.X_OK) else None
    if found is None:
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), name)
    return os.path.abspath(found)


def _wrapped(target: str, argv: list) -> list:
    assert _installed is not None
    return [sys.executable, "-I", "-S", WRAPPER, _spec(), target, *argv]


def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, *rest):  # type: ignore[no-untyped-def]
    assert _installed is not None
    original = _installed["execute_child"]
    if _is_trusted():
        return original(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, *rest)
    startupinfo, creationflags, shell, *more = rest
    if isinstance(args, (str, bytes, os.PathLike)):
        args = [args]
    else:
        args = list(args)
    if shell:
        args = ["/bin/sh", "-c", *args]
        if executable:
            args[0] = executable
        executable = None
    child_env = _child_env(env)
    where = os.fsdecode(executable if executable is not None else args[0])
    if cwd is not None and os.sep in where and not os.path.isabs(where):
        where = os.path.join(os.fsdecode(cwd), where)
    target = _resolve(where, child_env, search=True)
    argv = [os.fsdecode(a) for a in args]
    return original(
        self,
        _wrapped(target, argv),
        None,
        preexec_fn,
        close_fds,
        pass_fds,
        cwd,
        child_env,
        startupinfo,
        creationflags,
        False,
        *more,
    )


def _system(command: str) -> int:
    """os.system through subprocess (so confined), with os.system's wait status."""
    rc = subprocess.call(command, shell=True)
    return rc << 8 if rc >= 0 else -rc


def _posix_spawn(path, argv, env, **kw):  # type: ignore[no-untyped-def]
    return _spawn(path, argv, env, False, **kw)


def _posix_spawnp(path, argv, env, **kw):  # type: ignore[no-untyped-def]
    return _spawn(path, argv, env, True, **kw)


def _spawn(path, argv, env, search, **kw):  # type: ignore[no-untyped-def]
    assert _installed is not None
    spawn = _installed["posix_spawn"]
    if _is_trusted():
        return (_installed["posix_spawnp"] if search else spawn)(path, argv, env, **kw)
    child_env = _child_env(env)
    target = _resolve(os.fsdecode(path), child_env, search)
    return spawn(sys.executable, _wrapped(target, [os.fsdecode(a) for a in argv]), child_env, **kw)
