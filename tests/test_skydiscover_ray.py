"""A Ray node shows a SkyDiscover folder's evaluator/ at /benchmark and runs its evaluate.sh
with the request's split as the mode, on its local sandbox or its Docker container (a
private Ray instance: tests/conftest.py runs this module with the other Ray modules)."""

from __future__ import annotations

import pytest

from evaluators.sandbox import EvalRequest, Limits, Status
from tests.support.docker_support import docker_image  # noqa: F401  (a session fixture)
from tests.test_skydiscover_folders import BEST, FIXTURE, SEED_TEST


@pytest.mark.parametrize("node", ["local", "docker"])
def test_ray_node_runs_evaluate_sh_at_benchmark(
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

    def req(code: str, split: str) -> EvalRequest:
        return EvalRequest(
            problem_dir=str(FIXTURE),
            program_code=code,
            program_name="initial_program.py",
            split=split,
            fmt="skydiscover",
            limits=Limits(timeout_s=60),
            env={"PICK_K": "3"},
            benchmark="evaluator",
        )

    seed = (FIXTURE / "initial_program.py").read_text()
    sb = RaySandbox(RayOptions(node=NodeOptions(sandbox=node)))  # a private instance
    try:
        best = sb.evaluate(req(BEST, "train"))
        held_out = sb.evaluate(req(seed, "test"))
    finally:
        sb.close()
    assert (best.status, best.score) == (Status.OK, 1.0), best.artifacts
    assert held_out.status == Status.OK and held_out.score == pytest.approx(SEED_TEST)
