"""The sandbox of one machine, by name: local, docker, or auto (docker where a Docker engine
answers and the sandbox image exists, else local); and the sweep of what dead evolve
processes left on it.

Why apart from backends.py: a Ray node builds its own sandbox here (evaluators/ray/node.py),
and backends.py builds the Ray sandbox itself, so one module for both would import in a
circle. With docker, a problem folder's requirements.txt is layered on the image (built
on first use: evaluators/docker/image_layers.py); the local sandbox runs on this
interpreter, where `evolve check` reports what is missing (evolve/problem/requirements.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from evaluators.sandbox import Sandbox

MACHINE_BACKENDS = ("local", "docker")
ISOLATION_ENV = "EVOLVE_LOCAL_ISOLATION"  # "off": no namespaces (debugging a problem's evaluator)


class SandboxUnavailable(ValueError):
    """The asked-for backend cannot run here; the message (one line) says why."""


PING_TIMEOUT_S = 5  # an engine that does not answer a ping in this long is not there
API_TIMEOUT_S = 120  # but a busy one may take long to create or start a container


def engine():
    """(docker client, None) when an engine answers, else (None, why not). The client's calls
    wait up to API_TIMEOUT_S: the sandbox and the image build use it, and on a loaded machine
    creating a container took over the ping's 5 s (a seed recorded as sandbox_error)."""
    try:
        import docker
    except ImportError:
        return None, "the `docker` Python package is not installed"
    try:
        client = docker.from_env(timeout=PING_TIMEOUT_S)
        client.ping()
    except Exception as e:
        why = str(e).splitlines()[0][:160] if str(e) else type(e).__name__
        return None, f"no Docker engine answered: {why}"
    client.api.timeout = API_TIMEOUT_S
    return client, None


def default_backend() -> tuple[str, str]:
    """(backend, reason) for `--sandbox auto`."""
    from evaluators.docker.image import find_image, wanted_image

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


def machine_sandbox(
    name: str,
    parallel: int,
    run_id: str | None = None,
    require_isolation: bool = False,
    problem_dir: str | None = None,
    isolate: bool = True,
    tools: tuple[str, ...] = (),
    say: Callable[[str], None] | None = None,
    cpus: float | None = None,
) -> Sandbox:
    """The backend `name` of this machine ("auto" picks one); the arguments are
    backends.make_sandbox's. `cpus`: each Docker evaluation's CPU quota; None gives it its
    fair share of the engine's CPUs (cpu_share)."""
    say = say or _say
    if name == "auto":
        name, why = default_backend()
        say(f"sandbox: {name} ({why})")
    if name == "local":
        from evaluators.local.sandbox import IsolationMissing, LocalSandbox

        try:
            local = LocalSandbox(
                max_parallel=max(1, parallel) + 1,
                require_isolation=require_isolation,
                isolate=isolate,
            )
        except IsolationMissing as e:
            raise SandboxUnavailable(f"--require-isolation: {e}") from None
        if local.isolation.lost:
            say(f"sandbox: local isolation {local.isolation.summary()}")
        return local
    if name == "docker":
        return _docker(parallel, run_id, problem_dir, tools, say, cpus)
    choices = ", ".join(("auto", *MACHINE_BACKENDS))
    raise SandboxUnavailable(f"--sandbox {name}: unknown backend (one of {choices})")


def sweep() -> list[str]:
    """Remove what dead evolve processes left on this machine (every `evolve` command starts
    with it): their temp folders (evaluators/local/leftovers.py) and, where a dead Docker
    sandbox's folder is among them, its containers first (their agents stop by themselves
    once the controller is gone; this is for the rest). The folders removed."""
    from evaluators.local import leftovers

    found = leftovers.found()
    if any(kind == "docker" for kind, _ in found):
        try:
            from evaluators.docker.sandbox import reap_containers

            reap_containers()
        except Exception:
            pass  # no engine or no `docker` package: the next Docker sandbox start reaps them
    return leftovers.remove(found)


def _docker(
    parallel: int,
    run_id: str | None,
    problem_dir: str | None,
    tools: tuple[str, ...],
    say: Callable[[str], None],
    cpus: float | None = None,
) -> Sandbox:
    from evaluators.docker.image import IMAGE_ENV, ImageError, find_image
    from evaluators.docker.image_build import build
    from evaluators.docker.sandbox import DockerSandbox

    client, why = engine()
    if client is None:
        raise SandboxUnavailable(f"--sandbox docker: {why}")
    if find_image(client) is None:
        if os.environ.get(IMAGE_ENV):
            raise SandboxUnavailable(
                f"--sandbox docker: ${IMAGE_ENV} names {os.environ[IMAGE_ENV]}, "
                "which this Docker engine does not have"
            )
        say("sandbox: the Docker image is not built yet; building it (once)")
        try:
            build(client, log=say)
        except ImageError as e:
            raise SandboxUnavailable(f"--sandbox docker: {e}") from None
    image = _problem_image(client, problem_dir, tools, say) if problem_dir else None
    if cpus is None:
        cpus = cpu_share(client.info().get("NCPU") or os.cpu_count() or 1, parallel)
    # held-out re-scoring runs beside the --parallel evaluations, as for local
    return DockerSandbox(
        max_parallel=max(1, parallel) + 1, run_id=run_id, image=image, client=client, cpus=cpus
    )


def cpu_share(engine_cpus: int, parallel: int) -> float:
    """One Docker evaluation's CPU quota: the engine's CPUs over the --parallel evaluations
    in flight, at least one. The local sandbox limits no CPU, so --parallel 1 on two cores
    gives both to the one evaluation on either backend; a fixed single CPU made a score
    that counts seconds (ShinkaEvolve's go_collatz_steps: `go run` compiles) about a second
    worse on Docker than on local."""
    return max(1.0, engine_cpus / max(1, parallel))


def _problem_image(
    client, problem_dir: str, tools: tuple[str, ...], say: Callable[[str], None]
) -> str | None:
    """The image with the problem's requirements.txt and tools layered on, built now if it
    is not yet."""
    from evaluators.docker.image import ImageError
    from evaluators.docker.image_layers import find_problem_image, layer_inputs, problem_image

    try:
        inputs = layer_inputs(problem_dir, tools)
        if not inputs:
            return None  # the sandbox image as it is
        if (image := find_problem_image(client, problem_dir, inputs=inputs)) is not None:
            return image
        tools = tools if inputs.tools else ()
        say(layering_notice(problem_dir, bool(inputs.requirements), tools, inputs.packages))
        return problem_image(client, problem_dir, log=say, tools=tools, inputs=inputs)
    except ImageError as e:
        raise SandboxUnavailable(f"--sandbox docker: {e}") from None


def layering_notice(
    problem_dir: str, requirements: bool, tools: tuple[str, ...], packages: tuple[str, ...] = ()
) -> str:
    what = " and ".join(
        ["requirements.txt"] * requirements
        + ["evaluator/Dockerfile's pip install " + " ".join(packages)] * bool(packages)
        + ["tools " + ", ".join(tools)] * bool(tools)
    )
    return f"sandbox: layering {problem_dir}'s {what} on the Docker image (once)"


def _say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
