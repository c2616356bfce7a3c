"""What an agent's command may use: memory (its tmpfs pages included) and processes.

Why: a coding agent runs for minutes with every process it starts; without a cap one
runaway `npm install` or fork loop takes the machine from the controller and the other
slots. As root the command joins fresh memory and pids cgroups of its own, the candidate
sandbox's (evaluators/local/cgroups.py), so an OOM kill is seen and named as the
iteration's reason. Without cgroups (not root), the rlimits the sandbox falls back to: an
address space of twice the memory plus headroom (Limits.address_space_bytes) and a
process count, which in the command's own user namespace counts only its processes."""

from __future__ import annotations

import os
from dataclasses import dataclass

from evaluators.local import cgroups
from evaluators.local.exec_chain import join_cgroups
from evaluators.sandbox import Limits


@dataclass(frozen=True)
class CommandResources:
    """--agent-memory-mb and --agent-procs of one run."""

    memory_mb: int
    procs: int


@dataclass(frozen=True)
class Enforced:
    """How one command run is held: its cgroups' procs files (empty: the rlimit fallback),
    the prefix that joins them, the prlimit options inside its namespace."""

    groups: tuple[str, ...]
    join: list[str]
    rlimits: list[str]

    @property
    def cgroup(self) -> bool:
        return bool(self.groups)


def enforce(res: CommandResources, it: int, *, cgroup: bool = True) -> Enforced:
    """Fresh groups for iteration `it`'s command where cgroups can be written (`cgroup`
    False: the rlimit fallback whatever this machine has); release them with `release`."""
    groups = cgroups.slot_groups(it, res.memory_mb, res.procs) if cgroup else ()
    if groups:
        return Enforced(groups, join_cgroups(groups), [])
    space = Limits(memory_mb=res.memory_mb).address_space_bytes()
    return Enforced((), [], [f"--as={space}", f"--nproc={res.procs}"])


@dataclass(frozen=True)
class Pressure:
    """What the limits did to one run: an OOM kill, a fork refused at the process cap."""

    oom_killed: bool = False
    procs_capped: bool = False


def release(enforced: Enforced) -> Pressure:
    """What the command's groups saw; then no task is left in them and they are deleted
    (the command's namespace is dead already)."""
    if not enforced.groups:
        return Pressure()
    seen = Pressure(cgroups.oom_kills(enforced.groups) > 0, _forks_refused(enforced.groups))
    cgroups.wait_empty(enforced.groups)
    return seen


def _forks_refused(groups: tuple[str, ...]) -> bool:
    """pids.events' `max` count: forks refused at pids.max (the pids group is the memory
    group on cgroup v2, the second procs file on v1)."""
    folder = os.path.dirname(groups[-1])
    try:
        with open(os.path.join(folder, "pids.events")) as f:
            text = f.read()
    except OSError:
        return False
    return cgroups.event_count(text, "max") > 0
