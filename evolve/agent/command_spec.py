"""`--proposer command:CMD`: the command line a user names, read once with shlex (no shell
ever runs it), and its `{task}` placeholder filled per iteration.

An argument that is exactly `{task}` becomes the task's text as one argument; one that
holds it among other text (`sh -c 'agent {task}'`) gets the text shell-quoted, since that
argument is itself a shell's command line."""

from __future__ import annotations

import shlex

PREFIX = "command:"
PLACEHOLDER = "{task}"
COMMAND_MODEL = "command"  # the model its llm_calls rows name


def command_argv(proposer: str) -> list[str] | None:
    """The argv of a `command:CMD` proposer (None: not one, or CMD is not a command line)."""
    if not proposer.startswith(PREFIX):
        return None
    try:
        argv = shlex.split(proposer[len(PREFIX) :])
    except ValueError:
        return None
    return argv or None


def check_proposer(text: str) -> str:
    """single, agent, or command:CMD with a command line in CMD; else a one-line error."""
    if text in ("single", "agent"):
        return text
    if not text.startswith(PREFIX):
        raise ValueError(f"expected single, agent or command:CMD, got {text[:80]!r}")
    try:
        argv = shlex.split(text[len(PREFIX) :])
    except ValueError as e:
        raise ValueError(f"command:CMD: CMD is not a command line ({e})") from None
    if not argv:
        raise ValueError("command:CMD: CMD is empty; name the agent's command line")
    return text


def task_argv(argv: list[str], task: str) -> list[str]:
    """argv with each `{task}` filled (see the module's docstring)."""
    out = []
    for arg in argv:
        if arg == PLACEHOLDER:
            out.append(task)
        else:
            out.append(arg.replace(PLACEHOLDER, shlex.quote(task)))
    return out


def describe(
    proposer: str, network: bool, env: tuple[str, ...], evals: int, timeout_s: float
) -> str:
    """The start-up line of a command run: what runs, how confined, what it may use (the
    program's name only: a command line may hold a key)."""
    argv = command_argv(proposer) or ["?"]
    names = ", ".join(["PATH", "HOME", "LANG", *env])
    return (
        f"proposer: the command {argv[0]!r} in a workspace of its parent's files, confined by "
        f"bubblewrap (network {'on' if network else 'off'}; environment {names}); "
        f"{evals} evolve-eval per iteration, {timeout_s:g} s at most; no LLM of evolve's called"
    )
