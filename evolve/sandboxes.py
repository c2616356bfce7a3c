"""Pick a sandbox backend by name; every backend implements evaluators.sandbox.Sandbox.

`auto` (the default) is docker where a Docker engine answers and the sandbox
image exists, else local; one line on stderr says which and why. `ray` sends each
evaluation to a Ray cluster, where each node runs it in its own docker or local
sandbox (evaluators/ray_sandbox.py). With docker, a
problem folder's requirements.txt is layered on the image (built on first use:
evaluators/image_layers.py); the local sandbox runs on this interpreter, where
`evolve check` reports what is missing (evolve/requirements.py).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from evaluators.sandbox import Sandbox

if TYPE_CHECKING:
    from evaluators.ray_sandbox import RayOptions
    from evolve.problem_model import Problem

BACKENDS = ("local", "docker", "ray")
CHOICES = ("auto", *BACKENDS)
ISOLATION_ENV = "EVOLVE_LOCAL_ISOLATION"  # "off": no namespaces (debugging a problem's evaluator)


class SandboxUnavailable(ValueError):
    """The asked-for backend cannot run here; the message (one line) says why."""


def engine():
    """(docker client, None) when an engine answers, else (None, why not)."""
    try:
        import docker
    except ImportError:
        return None, "the `docker` Python package is not installed"
    try:
        client = docker.from_env(timeout=5)
        client.ping()
    except Exception as e:
        why = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        return None, f"no Docker engine answered: {why}"
    return client, None


def default_backend() -> tuple[str, str]:
    """(backend, reason) for `--sandbox auto`."""
    from evaluators.image import find_image, wanted_image

    client, why = engine()
    if client is None:
        return "local", why
    try:
        image = find_image(client)
        version = client.version().get("Version", "?")
    except Exception as e:
        return "local", f"the Docker engine failed: {e}"
    if image is None:
        return (
            "local",
            f"Docker image {wanted_image()} is not built; `evolve sandbox build` builds it",
        )
    return "docker", f"Docker engine {version} answered and image {image} exists"


def make_sandbox(
    name: str,
    parallel: int,
    run_id: str | None = None,
    require_isolation: bool = False,
    problem_dir: str | None = None,
    isolate: bool | None = None,
    ray: RayOptions | None = None,
) -> Sandbox:
    """The backend `name` ("auto" picks one); `require_isolation` refuses a local sandbox
    that lost any of its isolation guarantees on this machine instead of warning;
    `problem_dir`: the problem whose requirements.txt a Docker sandbox's image must carry;
    `isolate`: the local sandbox's namespaces (None: on unless $EVOLVE_LOCAL_ISOLATION=off);
    `ray`: where a ray sandbox sends its tasks (None: a private instance, one CPU a task)."""
    if isolate is None:
        isolate = os.environ.get(ISOLATION_ENV, "on") != "off"
    if name == "ray":
        return _ray(ray, run_id, require_isolation, isolate)
    if name == "auto":
        name, why = default_backend()
        print(f"sandbox: {name} ({why})", file=sys.stderr, flush=True)
    if name == "local":
        from evaluators.local import IsolationMissing, LocalSandbox

        try:
            local = LocalSandbox(
                max_parallel=max(1, parallel) + 1,
                require_isolation=require_isolation,
                isolate=isolate,
            )
        except IsolationMissing as e:
            raise SandboxUnavailable(f"--require-isolation: {e}") from None
        if local.isolation.lost:
            print(
                f"sandbox: local isolation {local.isolation.summary()}", file=sys.stderr, flush=True
            )
        return local
    if name == "docker":
        return _docker(parallel, run_id, problem_dir)
    raise SandboxUnavailable(f"--sandbox {name}: unknown backend (one of {', '.join(CHOICES)})")


def ray_options(
    problem: Problem,
    address: str | None,
    node_sandbox: str = "auto",
    retries: int = 2,
    allow_unisolated: bool = False,
) -> RayOptions:
    """What each Ray task of this problem asks of its node ([evaluation.resources]);
    `allow_unisolated`: --allow-unisolated-ray-nodes."""
    from evaluators.ray_node import NodeOptions
    from evaluators.ray_sandbox import RayOptions

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

    from evaluators.ray_node import UNISOLATED_FLAG
    from evaluators.ray_sandbox import RayOptions, RaySandbox, RayUnavailable

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


def _docker(parallel: int, run_id: str | None, problem_dir: str | None) -> Sandbox:
    from evaluators.docker_sandbox import DockerSandbox
    from evaluators.image import IMAGE_ENV, ImageError, build, find_image

    client, why = engine()
    if client is None:
        raise SandboxUnavailable(f"--sandbox docker: {why}")
    if find_image(client) is None:
        if os.environ.get(IMAGE_ENV):
            raise SandboxUnavailable(
                f"--sandbox docker: ${IMAGE_ENV} names {os.environ[IMAGE_ENV]}, "
                "which this Docker engine does not have"
            )
        _say("sandbox: the Docker image is not built yet; building it (once)")
        try:
            build(client, log=_say)
        except ImageError as e:
            raise SandboxUnavailable(f"--sandbox docker: {e}") from None
    image = _problem_image(client, problem_dir) if problem_dir else None
    # held-out re-scoring runs beside the --parallel evaluations, as for local
    return DockerSandbox(
        max_parallel=max(1, parallel) + 1, run_id=run_id, image=image, client=client
    )


def _problem_image(client, problem_dir: str) -> str | None:
    """The image with the problem's requirements.txt layered on, built now if it is not yet."""
    from evaluators.image import ImageError
    from evaluators.image_layers import find_problem_image, problem_image, requirements_file

    try:
        if requirements_file(problem_dir) is None:
            return None  # the sandbox image as it is
        if (image := find_problem_image(client, problem_dir)) is not None:
            return image
        _say(f"sandbox: layering {problem_dir}/requirements.txt on the Docker image (once)")
        return problem_image(client, problem_dir, log=_say)
    except ImageError as e:
        raise SandboxUnavailable(f"--sandbox docker: {e}") from None


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
