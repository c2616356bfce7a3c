"""The bubblewrap command line an agent's command runs under: it sees its workspace
(read-write, at /workspace), the read-only system a program needs, the interpreter evolve
runs on, and the evolve-eval tool, nothing else of this machine: no problem folder,
evaluator, data, runs directory or home. Network off unless --agent-network; the
environment is PATH, HOME (the workspace), LANG and the variables --agent-env names.

Why bubblewrap and not the candidate sandbox itself: an agent runs for minutes, writes its
workspace and may need the network, while a candidate's limits (memory, CPU seconds, a
private scratch) would stop any real coding agent. The namespaces and the seccomp filter
are the candidate sandbox's own (evaluators/local/bubblewrap.py, seccomp_filter.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from evaluators.local import bubblewrap
from evaluators.local.exec_chain import tool
from evaluators.local.seccomp_filter import SeccompUnavailable, bpf

WORKSPACE = "/workspace"  # the agent's cwd and HOME inside its namespace
TOOLS = "/evolve"  # evolve-eval and the socket it speaks to
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# /etc files a program needs to start; with the network also names, hosts and certificates
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives")
_ETC_NET = ("resolv.conf", "hosts", "nsswitch.conf", "ssl", "ca-certificates", "gai.conf")
TMP_MB = 512  # /tmp and /dev/shm each
OUTPUT_MB = 64  # a file the command writes (its stdout included) is cut at this size
LANG = "C.UTF-8"


class Unconfinable(Exception):
    """Bubblewrap cannot run here: no command may run (never unconfined)."""


@dataclass(frozen=True)
class Confined:
    argv: list[str]
    env: dict[str, str]


def check() -> str:
    """The bwrap binary's path, or Unconfinable with one line saying why not."""
    iso = bubblewrap.probe()
    if iso.bwrap is None:
        why = next((w for w in iso.lost if "bubblewrap" in w), "no bubblewrap")
        raise Unconfinable(
            f"--proposer command runs the agent confined by bubblewrap, which cannot run here "
            f"({why.split(':')[0]}); install bubblewrap or use --proposer single/agent"
        )
    return iso.bwrap


def seccomp_ok() -> bool:
    try:
        bpf()
    except SeccompUnavailable:
        return False
    return True


def _ro(path: str) -> list[str]:
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    return ["--ro-bind", path, path] if os.path.exists(path) else []


def confined(
    bwrap: str,
    argv: list[str],
    workspace: str,
    tools_dir: str,
    *,
    network: bool,
    env_names: tuple[str, ...],
    seccomp_fd: int | None,
    rlimits: tuple[str, ...] = (),
) -> Confined:
    """The full command line and environment of one agent run; `rlimits`: prlimit options
    beside the file size cap (the memory and process fallback, command_limits.py)."""
    ns = ["--unshare-ipc", "--unshare-pid", "--unshare-uts", "--unshare-cgroup-try"]
    ns += ["--unshare-user"]  # as root too: the command holds no capability on the host
    if not network:
        ns.append("--unshare-net")
    out = [bwrap, *ns, "--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    out += ["--tmpfs", "/"]
    out += ["--proc", "/proc", "--dev", "/dev"]
    for tmp in ("/tmp", "/dev/shm"):
        out += ["--size", str(TMP_MB * 2**20), "--tmpfs", tmp]
    for path in _SYSTEM:
        out += _ro(path)
    out += ["--dir", "/etc"]
    for name in (*_ETC, *(_ETC_NET if network else ())):
        out += _ro(f"/etc/{name}")
    for root in bubblewrap._python_roots():  # the interpreter evolve-eval runs on
        out += ["--ro-bind", root, root]
    out += ["--bind", workspace, WORKSPACE, "--ro-bind", tools_dir, TOOLS]
    out += ["--remount-ro", "/", "--chdir", WORKSPACE, "--hostname", "agent"]
    if seccomp_fd is not None:
        out += ["--seccomp", str(seccomp_fd)]
    out += ["--", tool("prlimit"), f"--fsize={OUTPUT_MB * 2**20}", "--core=0", *rlimits]
    out += ["--", *argv]
    env = {
        "PATH": f"{TOOLS}/bin:/usr/local/bin:/usr/bin:/bin",
        "HOME": WORKSPACE,
        "LANG": LANG,
    }
    for name in env_names:
        if name in os.environ:
            env[name] = os.environ[name]
    return Confined(out, env)
