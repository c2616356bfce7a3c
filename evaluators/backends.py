"""Every sandbox backend by name: `make_sandbox`, what the loop and the command line call.

local and docker (and auto, which picks one) are this machine's (machine.py); `ray` sends
each evaluation to a Ray cluster, where each node runs it in its own docker or local
sandbox (evaluators/ray/). Every backend implements evaluators.sandbox.Sandbox;
`keep_state` wraps one for a GEPA script, whose evaluator keeps its state across candidates.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from evaluators.machine import (
    ISOLATION_ENV,
    MACHINE_BACKENDS,
    SandboxUnavailable,
    machine_sandbox,
)
from evaluators.sandbox import Sandbox
from evaluators.stateful import StatefulSandbox

if TYPE_CHECKING:
    from evaluators.ray.sandbox import RayOptions

BACKENDS = (*MACHINE_BACKENDS, "ray")
CHOICES = ("auto", *BACKENDS)


class _Resources(Protocol):
    @property
    def cpus(self) -> float: ...
    @property
    def gpus(self) -> float: ...
    @property
    def memory_mb(self) -> int | None: ...


class _Problem(Protocol):
    """What `ray_options` reads of a problem (evolve.problem.model.Problem)."""

    @property
    def resources(self) -> _Resources: ...
    @property
    def memory_mb(self) -> int: ...


def make_sandbox(
    name: str,
    parallel: int,
    run_id: str | None = None,
    require_isolation: bool = False,
    problem_dir: str | None = None,
    isolate: bool | None = None,
    ray: RayOptions | None = None,
    tools: tuple[str, ...] = (),
    say: Callable[[str], None] | None = None,
) -> Sandbox:
    """The backend `name` ("auto" picks one); `require_isolation` refuses a local sandbox
    that lost any of its isolation guarantees on this machine instead of warning;
    `problem_dir`, `tools`: the problem whose requirements.txt and tools (cargo, g++) a
    Docker sandbox's image must carry;
    `isolate`: the local sandbox's namespaces (None: on unless $EVOLVE_LOCAL_ISOLATION=off);
    `ray`: where a ray sandbox sends its tasks (None: a private instance, one CPU a task);
    `say`: hears which backend was picked and what is built for it (default: stderr)."""
    if isolate is None:
        isolate = os.environ.get(ISOLATION_ENV, "on") != "off"
    if name not in CHOICES:
        raise SandboxUnavailable(f"--sandbox {name}: unknown backend (one of {', '.join(CHOICES)})")
    if name == "ray":
        return _ray(ray, run_id, require_isolation, isolate)
    return machine_sandbox(
        name, parallel, run_id, require_isolation, problem_dir, isolate, tools, say
    )


def keep_state(box: Sandbox, parallel: int, say: Callable[[str], None] | None = None) -> Sandbox:
    """`box` scoring a GEPA script's candidates in long-lived workers, at most `parallel`,
    that keep its evaluator's module state (evaluators/stateful.py): on this machine's
    backends a worker per slot, on Ray an actor per slot holding one on its node
    (evaluators/ray/stateful.py)."""
    if box.name == "ray":
        from evaluators.ray.sandbox import RaySandbox
        from evaluators.ray.stateful import RayStatefulSandbox

        if isinstance(box, RaySandbox):
            return RayStatefulSandbox(box, parallel, say)
    return StatefulSandbox(box, parallel, say)


def ray_options(
    problem: _Problem,
    address: str | None,
    node_sandbox: str = "auto",
    retries: int = 2,
    allow_unisolated: bool = False,
) -> RayOptions:
    """What each Ray task of this problem asks of its node ([evaluation.resources]);
    `allow_unisolated`: --allow-unisolated-ray-nodes."""
    from evaluators.ray.node import NodeOptions
    from evaluators.ray.sandbox import RayOptions

    r = problem.resources
    return RayOptions(
        address=address,
        node=NodeOptions(sandbox=node_sandbox, allow_unisolated=bool(allow_unisolated)),
        cpus=r.cpus,
        gpus=r.gpus,
        memory_mb=r.memory_mb or problem.memory_mb,
        retries=retries,
    )


def _ray(
    options: RayOptions | None, run_id: str | None, require_isolation: bool, isolate: bool
) -> Sandbox:
    from dataclasses import replace

    from evaluators.ray.node import UNISOLATED_FLAG
    from evaluators.ray.sandbox import RayOptions, RaySandbox, RayUnavailable

    options = options or RayOptions()
    if not isolate and options.node.sandbox != "docker" and not options.node.allow_unisolated:
        raise SandboxUnavailable(
            f"--sandbox ray: {ISOLATION_ENV}=off runs candidates on the nodes without namespaces, "
            f"where they reach the node's network and Ray cluster; {UNISOLATED_FLAG} runs them anyway"
        )
    node = replace(
        options.node, isolate=isolate, require_isolation=require_isolation, run_id=run_id
    )
    try:
        return RaySandbox(replace(options, node=node))
    except RayUnavailable as e:
        raise SandboxUnavailable(str(e)) from None
