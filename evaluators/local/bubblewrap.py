"""What the local sandbox can isolate on this machine, and the bubblewrap command that does it.

Each evaluation process runs under bubblewrap in fresh PID, mount, IPC, UTS,
network and cgroup namespaces: it dies with the namespace's init (no scan of
/proc racing a process that forks away), and with the controller
(--die-with-parent); it sees a read-only system, interpreter and problem, a
private tmpfs scratch, /tmp and /dev/shm, its own /proc and no host network,
not even loopback; a seccomp filter denies new user namespaces, mounts,
keyrings and tracing. As root, bubblewrap drops to the slot's uid with no
capability left; otherwise the user's own uid is mapped into a user namespace.

Where a piece is missing the sandbox still runs, and `Isolation.lost` names
each guarantee that does not hold, for the one-line notice and for
`--require-isolation`.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field

from evaluators.local import cgroups
from evaluators.local.seccomp_filter import SeccompUnavailable, bpf

SCRATCH = "/scratch"  # the evaluation's cwd, HOME and TMPDIR inside the namespace
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "localtime", "alternatives", "nsswitch.conf")
TMP_MB = 64  # /tmp and /dev/shm each; the scratch gets the file size limit times four


@dataclass(frozen=True)
class Isolation:
    """The isolation this machine gives; `lost` is empty when everything holds."""

    bwrap: str | None
    seccomp: bool
    cgroups: bool
    lost: tuple[str, ...] = field(default=())

    def summary(self) -> str:
        if not self.lost:
            return "namespaces (bubblewrap), seccomp, cgroups"
        return "lost: " + "; ".join(self.lost)


def _bwrap_works(path: str) -> str | None:
    """None if bubblewrap can create our namespaces here, else why not."""
    try:
        probe = subprocess.run(
            [path, *_namespaces(), "--ro-bind", "/", "/", "--", "/bin/true"],
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        return str(e)
    if probe.returncode == 0:
        return None
    return probe.stderr.decode("utf-8", "replace").strip().splitlines()[-1:][0] or "failed"


@functools.cache
def probe() -> Isolation:
    lost = []
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        lost.append(
            "no bubblewrap (apt-get install bubblewrap): no PID/mount/IPC/network namespaces, "
            "the candidate sees the host file system (other splits' data included), network "
            "and other processes"
        )
    elif (why := _bwrap_works(bwrap)) is not None:
        lost.append(
            f"bubblewrap cannot create namespaces here ({why}): no PID/mount/IPC/network isolation"
        )
        bwrap = None
    try:
        bpf()
        seccomp = True
    except SeccompUnavailable as e:
        seccomp = False
        lost.append(f"no seccomp filter ({e}): new user namespaces and keyrings are allowed")
    has_cgroups = cgroups.layout() is not None
    if not has_cgroups:
        lost.append(
            "no writable memory cgroup (needs root): /tmp and /dev/shm are bounded by size, "
            "not counted in the memory limit"
        )
    return Isolation(bwrap, seccomp and bwrap is not None, has_cgroups, tuple(lost))


def _namespaces() -> list[str]:
    ns = [
        "--unshare-ipc",
        "--unshare-pid",
        "--unshare-net",
        "--unshare-uts",
        "--unshare-cgroup-try",
    ]
    if os.geteuid() != 0:
        ns.append("--unshare-user")
    return ns


def _ro(path: str) -> list[str]:
    """Bind a host path read-only at the same place; a symlink stays a symlink."""
    if os.path.islink(path):
        return ["--symlink", os.readlink(path), path]
    return ["--ro-bind", path, path] if os.path.exists(path) else []


def _parents(path: str) -> list[str]:
    parts = path.strip("/").split("/")[:-1]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


def _python_roots() -> list[str]:
    """The interpreter and the environment it imports from (venv, base install, and
    site-packages folders a .pth adds), never a source tree an editable install points at."""
    roots = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    roots.add(os.path.dirname(os.path.dirname(os.path.realpath(sys.executable))))
    roots |= {
        os.path.realpath(p)
        for p in sys.path
        if os.path.basename(p) in ("site-packages", "dist-packages") and os.path.isdir(p)
    }
    kept = sorted(r for r in roots if not r.startswith(_SYSTEM) and r != "/")
    return [r for r in kept if not any(r != o and r.startswith(o + "/") for o in kept)]


def unreadable(paths: list[str]) -> str | None:
    """As root the candidate is another uid: the first folder it could not enter, or
    file it could not read, with how to fix it; None if all are fine."""
    for path in [*_python_roots(), *paths]:
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        need = 0o005 if os.path.isdir(path) else 0o004
        if mode & need != need:
            return (
                f"{path} (mode {mode & 0o777:04o}) is not readable by the sandbox's uid; "
                f"`chmod o+rX {path}` or run evolve as an ordinary user"
            )
    return None


def command(
    iso: Isolation,
    *,
    readable: list[str],
    hidden: dict[str, int],
    inputs: dict[str, int],
    limits_file_mb: int,
    uid: int | None,
    seccomp_fd: int | None,
    info_fd: int,
    binds: tuple[tuple[str, str], ...] = (),
) -> list[str]:
    """The bubblewrap prefix of one evaluation's command line.

    `readable`: host paths bound read-only at the same place (the harness, the
    problem, the data); `hidden`: files among them that read as empty (other
    splits' data), each with an empty fd to copy. `inputs`: file name (a tree's relative
    path: bubblewrap makes the folders between) -> fd whose contents become
    /scratch/<name>, owned by root, so the candidate cannot rewrite its own request.
    `binds`: (host path, place) pairs bound read-only elsewhere (a SkyDiscover folder's
    evaluator/ at /benchmark).
    """
    assert iso.bwrap is not None
    # --die-with-parent: PR_SET_PDEATHSIG, which fires when the forking *thread* exits; the
    # sandbox forks from the evaluation's thread, which waits until the process is reaped
    argv = [iso.bwrap, *_namespaces(), "--die-with-parent", "--new-session"]
    argv += ["--info-fd", str(info_fd), "--tmpfs", "/"]  # info: the namespace init's host pid
    # the private writable places first: a problem may itself lie under /tmp
    argv += ["--proc", "/proc", "--dev", "/dev"]
    scratch_bytes = str(4 * limits_file_mb * 2**20)
    tmp_bytes = str(TMP_MB * 2**20)
    argv += ["--perms", "1777", "--size", scratch_bytes, "--tmpfs", SCRATCH]
    argv += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/tmp"]
    argv += ["--perms", "1777", "--size", tmp_bytes, "--tmpfs", "/dev/shm"]
    for path in _SYSTEM:
        argv += _ro(path)
    # searchable by the slot uid, as below: /etc/alternatives/cc is how Debian finds `cc`
    argv += ["--perms", "0755", "--dir", "/etc"]
    for name in _ETC:
        argv += _ro(f"/etc/{name}")
    made: set[str] = set()
    for path in [*_python_roots(), *readable]:
        for parent in _parents(path):  # searchable by the slot uid (bwrap's default is 0700)
            if parent not in made:
                made.add(parent)
                argv += ["--perms", "0755", "--dir", parent]
        argv += ["--ro-bind", path, path]
    for path, place in binds:
        argv += ["--ro-bind", path, place]
    for path, fd in hidden.items():  # another split's data: an empty file in its place
        argv += ["--perms", "0444", "--ro-bind-data", str(fd), path]
    for name, fd in inputs.items():
        argv += ["--perms", "0644", "--file", str(fd), f"{SCRATCH}/{name}"]
    argv += ["--remount-ro", "/", "--chdir", SCRATCH, "--hostname", "sandbox"]
    if seccomp_fd is not None:
        argv += ["--seccomp", str(seccomp_fd)]
    if uid is not None:  # root: bubblewrap keeps just what setpriv needs to become the slot uid
        argv += [
            "--cap-add",
            "CAP_SETUID",
            "--cap-add",
            "CAP_SETGID",
            "--",
            shutil.which("setpriv") or "/usr/bin/setpriv",
        ]
        argv += [
            f"--reuid={uid}",
            f"--regid={uid}",
            "--clear-groups",
            "--inh-caps=-all",
            "--bounding-set=-all",
            "--no-new-privs",
        ]
    argv.append("--")
    return argv
