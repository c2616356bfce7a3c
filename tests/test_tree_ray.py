"""A Ray node lays out and runs the tree a request carries, on its local sandbox or its
Docker container (a private Ray instance: tests/conftest.py runs this module with the other
Ray modules, one after the other)."""

from __future__ import annotations

import pytest

from evaluators import tree
from evaluators.sandbox import Status
from tests.support.docker_support import docker_image  # noqa: F401  (a session fixture)
from tests.test_tree_sandbox import OUTSIDE, _raw, eval_request, seed_files


@pytest.mark.parametrize("node", ["local", "docker"])
def test_ray_node_runs_a_tree(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest, node: str
) -> None:
    pytest.importorskip("ray")
    if node == "docker":
        monkeypatch.setenv("EVOLVE_SANDBOX_IMAGE", request.getfixturevalue("docker_image"))
    from evaluators.ray.node import NodeOptions
    from evaluators.ray.sandbox import RayOptions, RaySandbox
    from evolve.testing.ray_support import AUTH_OFF

    for k, v in AUTH_OFF.items():
        monkeypatch.setenv(k, v)
    sb = RaySandbox(RayOptions(node=NodeOptions(sandbox=node)))  # a private instance
    try:
        ok = sb.evaluate(eval_request(tree.encode(seed_files()), data_seed=42))
        bad = sb.evaluate(eval_request(_raw({**seed_files(), f"../{OUTSIDE}": "X = 1\n"})))
    finally:
        sb.close()
    assert (ok.status, ok.score, ok.artifacts["private_data"]) == (Status.OK, 12.0, "True"), (
        ok.artifacts
    )
    assert bad.status == Status.INVALID and bad.artifacts["error"].startswith("program tree: ")
