"""--sandbox ray where a node's local sandbox has no namespaces, and the nodes' bundle cache.

Without namespaces a candidate shares its node's network, Ray's GCS included: such an
evaluation is refused with one line naming --allow-unisolated-ray-nodes (on the
controller for EVOLVE_LOCAL_ISOLATION=off, on the node where bubblewrap is missing),
and runs when the user passes it. A bundle cache folder someone else could have made or
written is refused, a bundle folder in it replaced.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from evaluators.backends import SandboxUnavailable, make_sandbox
from evaluators.ray import node as ray_node
from evaluators.ray.bundle import CACHE_DIR, BundleError, pack, unpack
from evaluators.ray.node import NodeOptions
from evaluators.ray.sandbox import RayOptions
from evaluators.sandbox import EvalRequest, Limits, Status
from evolve.testing.cli_helpers import ROOT, evolve
from evolve.testing.ray_support import AUTH_OFF, LoopbackCluster, ray_env

DIRECT = Path(__file__).parent / "fixtures" / "sandbox_native" / "direct"
BINPACK = ROOT / "problems" / "binpack"
FLAG = "--allow-unisolated-ray-nodes"
LIMITS = Limits(timeout_s=30.0, memory_mb=1024, max_procs=24, max_file_mb=8, max_output_kb=16)


def test_unisolated_nodes_are_refused_in_one_line() -> None:
    options = RayOptions(address="127.0.0.1:1", node=NodeOptions(sandbox="local"))
    with pytest.raises(SandboxUnavailable) as e:
        make_sandbox("ray", 1, isolate=False, ray=options)
    assert FLAG in str(e.value) and "\n" not in str(e.value)


def test_the_cli_names_the_flag() -> None:
    r = evolve(
        "eval",
        BINPACK,
        BINPACK / "seed.py",
        "--sandbox",
        "ray",
        "--ray-node-sandbox",
        "local",
        "--ray-address",
        "127.0.0.1:1",
        extra_env={**ray_env(), "EVOLVE_LOCAL_ISOLATION": "off"},
    )
    assert r.returncode != 0
    last = r.stderr.strip().splitlines()[-1]
    assert FLAG in last, r.stderr


def test_a_node_without_namespaces_refuses_unless_allowed() -> None:
    with pytest.raises(ray_node.UnisolatedNode, match=FLAG):
        ray_node.node_sandbox(NodeOptions(sandbox="local", isolate=False), str(DIRECT))
    allowed = ray_node.node_sandbox(
        NodeOptions(sandbox="local", isolate=False, allow_unisolated=True), str(DIRECT)
    )
    allowed.close()


def test_with_the_flag_an_unisolated_node_evaluates(monkeypatch) -> None:
    monkeypatch.setenv("RAY_AUTH_MODE", AUTH_OFF["RAY_AUTH_MODE"])
    cluster = LoopbackCluster(cpus_per_node=1).start(workers=0)
    try:
        node = NodeOptions(sandbox="local", allow_unisolated=True)
        sandbox = make_sandbox(
            "ray", 1, isolate=False, ray=RayOptions(address=cluster.address, node=node)
        )
        try:
            res = sandbox.evaluate(
                EvalRequest(
                    problem_dir=str(DIRECT),
                    program_code="def solve():\n    return 0.25\n",
                    program_name="cand.py",
                    split="train",
                    limits=LIMITS,
                )
            )
        finally:
            sandbox.close()
    finally:
        cluster.stop()
    assert (res.status, res.score) == (Status.OK, 0.25), res.artifacts


def _bundle(tmp_path: Path):
    problem = tmp_path / "problem"
    problem.mkdir()
    (problem / "evaluator.py").write_text("GENUINE = True\n")
    return pack(str(problem))


def test_a_cache_others_may_write_is_refused(tmp_path) -> None:
    bundle = _bundle(tmp_path)
    cache = tmp_path / "cache"
    (cache / CACHE_DIR).mkdir(parents=True)
    (cache / CACHE_DIR).chmod(0o777)
    with pytest.raises(BundleError, match="writable by group or others"):
        unpack(bundle.data, bundle.digest, str(cache))


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_cache_of_another_uid_is_refused_and_a_planted_bundle_replaced(tmp_path) -> None:
    bundle = _bundle(tmp_path)
    theirs = tmp_path / "theirs"
    (theirs / CACHE_DIR).mkdir(parents=True)
    os.chown(theirs / CACHE_DIR, 61999, 61999)
    with pytest.raises(BundleError, match="owned by uid 61999"):
        unpack(bundle.data, bundle.digest, str(theirs))

    ours = tmp_path / "ours"
    planted = ours / CACHE_DIR / bundle.digest / "problem"
    planted.mkdir(parents=True)
    (planted / "evaluator.py").write_text("GENUINE = False\n")
    os.chown(planted.parent, 61999, 61999)
    where = unpack(bundle.data, bundle.digest, str(ours))
    assert (where / "problem" / "evaluator.py").read_text() == "GENUINE = True\n"
    assert where.stat().st_uid == os.geteuid()
