"""What a Ray task runs on its node: the node's own sandbox evaluates the candidate.

The task brings the request and the packed problem folder (bundle.py); the
node unpacks the folder once, keeps one sandbox per worker process (a Ray worker runs one
task at a time), and runs the same harness under the same limits as on the controller.
If the controller dies, Ray kills its workers, and each evaluation dies with its worker
as it would with the controller (bubblewrap's --die-with-parent, the fallback's watchdog,
Docker's owner label for the next sweep).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field, replace

from evaluators.machine import machine_sandbox
from evaluators.ray.bundle import relocate, unpack
from evaluators.sandbox import EvalRequest, EvalResult, Sandbox


@dataclass(frozen=True)
class NodeOptions:
    """How the node sandboxes an evaluation: as the controller would have."""

    sandbox: str = "auto"  # auto: docker where this node has its engine and image, else local
    isolate: bool = True  # the local sandbox's namespaces (EVOLVE_LOCAL_ISOLATION=off: False)
    require_isolation: bool = False
    run_id: str | None = None
    # a local sandbox without namespaces leaves the node's network, Ray's GCS included, in the
    # candidate's reach: refused unless --allow-unisolated-ray-nodes
    allow_unisolated: bool = False


UNISOLATED_FLAG = "--allow-unisolated-ray-nodes"


class UnisolatedNode(RuntimeError):
    """This node's local sandbox has no namespaces and the user did not allow that."""


@dataclass
class NodeReply:
    result: EvalResult
    node: str  # host name and Ray node id: where it ran
    said: list[str] = field(default_factory=list)  # the node's sandbox's notices, for the log


_sandboxes: dict[tuple, Sandbox] = {}


def evaluate_on_node(
    req: EvalRequest,
    bundle: bytes,
    digest: str,
    roots: tuple[tuple[str, str], ...],
    opts: NodeOptions,
) -> NodeReply:
    req, cpus = arrived(req, bundle, digest, roots)
    key = sandbox_key(opts, req, cpus)
    sandbox = _sandboxes.get(key)
    if sandbox is None:
        sandbox = _sandboxes[key] = node_sandbox(opts, req.problem_dir, req.tools, cpus)
    return NodeReply(sandbox.evaluate(req), node_name())


def arrived(
    req: EvalRequest, bundle: bytes, digest: str, roots: tuple[tuple[str, str], ...]
) -> tuple[EvalRequest, float]:
    """The request as this node runs it (its folders unpacked here, the GPUs Ray gave this
    worker), and the CPUs Ray reserved for it."""
    where = unpack(bundle, digest)
    req = relocate(req, roots, where)
    gpus = os.environ.get("CUDA_VISIBLE_DEVICES")
    if gpus is not None:  # the GPUs Ray gave this task, and no others
        req = replace(req, env={**req.env, "CUDA_VISIBLE_DEVICES": gpus})
    return req, _assigned_cpus()


def sandbox_key(opts: NodeOptions, req: EvalRequest, cpus: float) -> tuple:
    """What one of the node's sandboxes serves: a Docker one is built for its problem."""
    return (opts, req.problem_dir if opts.sandbox != "local" else None, cpus)


def node_name() -> str:
    import ray

    return f"{socket.gethostname()}/{ray.get_runtime_context().get_node_id()[:8]}"


def _assigned_cpus() -> float:
    """The CPUs Ray reserved for this task ([evaluation.resources] cpus): a Docker node
    sandbox's quota, since Ray packs as many tasks on the node as their reservations allow."""
    import ray

    return max(1.0, float(ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)))


def node_sandbox(
    opts: NodeOptions, problem_dir: str, tools: tuple[str, ...] = (), cpus: float = 1.0
) -> Sandbox:
    """This node's own sandbox, as the controller's `--sandbox` would have made it here."""
    # the same choice of backend as `--sandbox auto|docker|local` makes on the controller
    sandbox = machine_sandbox(
        opts.sandbox,
        0,  # one evaluation at a time in this worker (+1 slot, unused)
        run_id=opts.run_id,
        require_isolation=opts.require_isolation,
        problem_dir=problem_dir,
        isolate=opts.isolate,
        tools=tools,
        cpus=cpus,
    )
    iso = getattr(sandbox, "isolation", None)
    if sandbox.name == "local" and iso is not None and not iso.bwrap and not opts.allow_unisolated:
        sandbox.close()
        raise UnisolatedNode(
            f"node {socket.gethostname()}: its local sandbox has no namespaces, so a candidate "
            f"could reach this node's network and Ray cluster; {UNISOLATED_FLAG} runs it anyway"
        )
    return sandbox
