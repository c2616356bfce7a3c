"""What the Docker sandbox tests share: the engine, the image (built once), leftover checks.

The tests run against the real local engine. Without the `docker` package or an
engine that answers they are skipped, saying which; a failing image build fails
them. The first build on a machine takes a few minutes (debootstrap); after that
the image's tag (a hash of its inputs) is found and nothing is rebuilt.
"""

from __future__ import annotations

import time

import pytest

from evaluators.docker.sandbox import LABEL


def engine():
    """A client of the local Docker engine, or skip with the reason."""
    try:
        import docker
    except ImportError:
        pytest.skip("the `docker` Python package is not installed")
    try:
        client = docker.from_env(timeout=120)
        client.ping()
    except Exception as e:
        pytest.skip(f"no Docker engine answered: {e}")
    return client


@pytest.fixture(scope="session")
def docker_image() -> str:
    """The sandbox image's tag, built now if this machine does not have it yet."""
    from evaluators.docker.image import ImageError, find_image
    from evaluators.docker.image_build import build

    client = engine()
    if (tag := find_image(client)) is not None:
        return tag
    try:
        return build(client, log=lambda line: print(line, flush=True))[0]
    except ImageError as debian:  # no debootstrap or no root here: a registry may do
        try:
            return build(client, dockerfile=True, log=lambda line: print(line, flush=True))[0]
        except ImageError as registry:
            raise ImageError(f"{debian}\nand from the registry: {registry}") from None


def processes(client, cid: str) -> list[list[str]]:
    """The processes of a container, seen by the engine (not by anything inside); none for a
    container that stopped or went since it was listed (a pool replaces dead ones lazily)."""
    import docker.errors

    try:
        return client.api.top(cid, ps_args="-eo pid,user,args")["Processes"] or []
    except docker.errors.APIError:  # NotFound, or 409: not running
        return []


def assert_pool_clean(sandbox) -> None:
    """Each container of the pool runs its agent and nothing else."""
    for cid in sandbox.containers():
        procs = processes(sandbox.client, cid)
        assert len(procs) == 1 and "agent.py" in procs[0][-1], procs


def labeled(client, run_id: str) -> list[str]:
    """Ids of the containers, running or not, that carry the run's label."""
    return [
        c["Id"] for c in client.api.containers(all=True, filters={"label": f"{LABEL}={run_id}"})
    ]


def wait_gone(client, run_id: str, timeout_s: float = 20.0) -> list:
    """Poll until no container carries the run's label; what is left at the end."""
    end = time.monotonic() + timeout_s
    while (left := labeled(client, run_id)) and time.monotonic() < end:
        time.sleep(0.2)
    return left
