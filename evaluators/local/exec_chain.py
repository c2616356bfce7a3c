"""The command prefix that confines a local sandbox process, in place of a preexec_fn.

Why: Python code between fork and exec (`preexec_fn`) may deadlock or corrupt
state when other threads run, and the controller evaluates from a thread pool.
So the child runs no Python at all before the harness: Popen only forks and
execs (its own `start_new_session` makes the session), and a chain of small,
well-kept tools each does one step and execs the next:

    sh -c 'echo $$ > cgroup.procs; exec "$@"'   join the slot's cgroups first (root)
    prlimit [--as] --cpu --fsize --core --nproc the rlimits (util-linux; --as without cgroups)
    setpriv --no-new-privs                      before bubblewrap
    setpriv --pdeathsig ALRM timeout -s KILL    the fallback's watchdog (coreutils)
    setpriv --reuid --pdeathsig KILL ...        drop to the slot's uid (util-linux)

Without bubblewrap (the fallback) nothing else kills an evaluation whose
controller died, so `timeout` does: it runs the harness in the session, and at
the deadline, or when the controller dies (its parent-death signal, ALRM, is
the one its own deadline uses), it SIGKILLs the harness and the whole process
group. As root it keeps root's uid, out of the candidate's reach. The
parent-death signal fires when the *thread* that forked exits, not the
process: the sandbox forks from the evaluation's thread, which blocks until
the process is reaped, so it cannot exit first.
"""

from __future__ import annotations

import functools
import resource
import shutil

from evaluators.harness_result import cpu_limit_s
from evaluators.sandbox import Limits

WATCHDOG_GRACE_S = 1.0  # after the deadline: a live controller always acts first
_TOOL_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
# Join each cgroup (its cgroup.procs file), then become the rest of the command line.
_JOIN = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n-1)); done; '
    'exec "$@"'
)
TOOLS = ("sh", "prlimit", "setpriv", "timeout")  # how each names itself on stderr


@functools.cache
def tool(name: str) -> str:
    """The absolute path of a system tool (util-linux, coreutils, sh), never a PATH lookup
    in the child; a clear error if this machine lacks it."""
    found = shutil.which(name, path=_TOOL_PATH) or shutil.which(name)
    if found is None:
        raise RuntimeError(f"the local sandbox needs `{name}` (util-linux / coreutils)")
    return found


def _capped(res: int, soft: int, hard: int | None = None) -> str:
    """`soft:hard`, never above the hard limit we have (the unprivileged case)."""
    hard = soft if hard is None else hard
    cur = resource.getrlimit(res)[1]
    if cur != resource.RLIM_INFINITY:
        soft, hard = min(soft, cur), min(hard, cur)
    return f"{soft}:{hard}"


def join_cgroups(procs_files: tuple[str, ...]) -> list[str]:
    """In the slot's cgroups before anything else runs; its children follow it there."""
    if not procs_files:
        return []
    return [tool("sh"), "-c", _JOIN, "sh", str(len(procs_files)), *procs_files]


def rlimits(limits: Limits, nproc: int, cgroup: bool) -> list[str]:
    """Memory (an address-space limit only where no memory cgroup enforces it: see
    Limits.address_space_bytes), CPU time (SIGXCPU at the soft limit, SIGKILL at the
    hard), file size, no core files, and processes of the real uid."""
    cpu = cpu_limit_s(limits)
    address = (
        [] if cgroup else [f"--as={_capped(resource.RLIMIT_AS, limits.address_space_bytes())}"]
    )
    return [
        tool("prlimit"),
        *address,
        f"--cpu={_capped(resource.RLIMIT_CPU, cpu, cpu + 1)}",
        f"--fsize={_capped(resource.RLIMIT_FSIZE, limits.max_file_mb * 2**20)}",
        f"--core={_capped(resource.RLIMIT_CORE, 0)}",
        f"--nproc={_capped(resource.RLIMIT_NPROC, nproc)}",
        "--",
    ]


def no_new_privs() -> list[str]:
    return [tool("setpriv"), "--no-new-privs", "--"]


def watchdog(timeout_s: float) -> list[str]:
    """SIGKILL the process group at the deadline or when the controller dies (see above)."""
    seconds = f"{timeout_s + WATCHDOG_GRACE_S:.3f}"
    return [tool("setpriv"), "--pdeathsig", "ALRM", "--", tool("timeout"), "-s", "KILL", seconds]


def drop_to(uid: int | None) -> list[str]:
    """Become the slot's uid/gid (root) with no capability at all, inheritable, ambient or
    in the bounding set: no new privileges; and die with the watchdog, whoever runs. What
    the candidate must read but cannot reach is linked where it can (reachable.py), never
    opened to it by CAP_DAC_READ_SEARCH, which reads every file on the machine."""
    argv = [tool("setpriv")]
    if uid is not None:
        argv += [f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        argv += ["--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all"]
    return [*argv, "--no-new-privs", "--pdeathsig", "KILL", "--"]
