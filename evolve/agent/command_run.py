"""One confined run of an agent's command: its output to files (bounded by the command's
file size limit), a deadline that kills its whole namespace, and evolve-eval served while
it runs."""

from __future__ import annotations

import asyncio
import os
import signal
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from evolve.agent import command_limits, confine
from evolve.agent.command_limits import CommandResources, Pressure
from evolve.agent.eval_tool import Answer, EvalServer, install
from evolve.agent.tools import cut

TAIL_CHARS = 2_000  # of stderr, shown in a failed run's reason


@dataclass(frozen=True)
class CommandRun:
    returncode: int | None  # None: killed at its deadline
    stdout: str
    stderr_tail: str
    seconds: float
    pressure: Pressure = Pressure()
    memory_mb: int = 0

    @property
    def how(self) -> str:
        if self.pressure.oom_killed:
            return f"was killed for memory: it used more than --agent-memory-mb {self.memory_mb}"
        if self.returncode is None:
            return "was stopped at its deadline (--agent-timeout)"
        capped = " (a fork was refused at --agent-procs)" if self.pressure.procs_capped else ""
        return f"exited with status {self.returncode}{capped}"


def _tail(path: Path, chars: int) -> str:
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        f.seek(max(0, f.tell() - 4 * chars))
        return f.read().decode("utf-8", "replace")[-chars:]


async def run_command(
    bwrap: str,
    argv: list[str],
    workspace: Path,
    tools_dir: Path,
    answer: Answer,
    *,
    timeout_s: float,
    network: bool,
    env_names: tuple[str, ...],
    resources: CommandResources,
    slot: int,
    cgroup: bool = True,
) -> CommandRun:
    """Run `argv` confined in `workspace`, in its own cgroups where this machine has them
    (`cgroup` False: the rlimit fallback); evolve-eval requests go to `answer`."""
    from evaluators.local.seccomp_filter import filter_fd

    install(tools_dir, confine.TOOLS)
    out_path, err_path = tools_dir / "stdout", tools_dir / "stderr"
    started = time.monotonic()
    held = command_limits.enforce(resources, slot, cgroup=cgroup)
    pressure = Pressure()
    with ExitStack() as stack:
        seccomp = filter_fd() if confine.seccomp_ok() else None
        if seccomp is not None:
            stack.callback(os.close, seccomp)
        c = confine.confined(
            bwrap,
            argv,
            str(workspace),
            str(tools_dir),
            network=network,
            env_names=env_names,
            seccomp_fd=seccomp,
            rlimits=tuple(held.rlimits),
        )
        out = stack.enter_context(open(out_path, "wb"))
        err = stack.enter_context(open(err_path, "wb"))
        async with EvalServer(tools_dir, answer):
            proc = await asyncio.create_subprocess_exec(
                *held.join,
                *c.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=c.env,
                start_new_session=True,
                pass_fds=[seccomp] if seccomp is not None else [],
            )
            rc: int | None = None
            try:
                rc = await asyncio.wait_for(proc.wait(), timeout_s)
            except TimeoutError:
                pass
            finally:
                if proc.returncode is None:  # its deadline, or the run stops
                    _kill(proc.pid)
                    await proc.wait()
                pressure = command_limits.release(held)
    return CommandRun(
        rc,
        _tail(out_path, 1_000_000),
        cut(_tail(err_path, TAIL_CHARS), TAIL_CHARS, tail=True),
        time.monotonic() - started,
        pressure,
        resources.memory_mb,
    )


def _kill(pid: int) -> None:
    """The bwrap process group; its namespace's init dies with it, and every process in it."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
