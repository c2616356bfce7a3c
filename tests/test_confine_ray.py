"""A compiled candidate on a Ray node is confined as on the node's own sandbox
(tests/test_confine_candidates.py's attacks; tests/conftest.py runs this module with the
other Ray modules, one after the other)."""

from __future__ import annotations

import os
import shutil

import pytest

from evaluators.backends import make_sandbox
from evaluators.inside import landlock
from tests.test_confine_candidates import _attack, places  # noqa: F401  (a fixture)

pytestmark = [
    pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ here"),
    pytest.mark.skipif(landlock.abi_version() == 0, reason="no Landlock in this kernel"),
]


@pytest.mark.timeout(600)
def test_ray_node_keeps_it_out(places):  # noqa: F811
    import ray  # noqa: F401  imported first, as a user's script may: the head stays on loopback

    from evaluators.backends import ray_options
    from evolve.problem.load import load_problem
    from evolve.testing.ray_support import AUTH_OFF, LoopbackCluster

    before = {k: os.environ.get(k) for k in AUTH_OFF}
    os.environ.update(AUTH_OFF)
    cluster = LoopbackCluster(cpus_per_node=1).start(workers=0)
    try:
        options = ray_options(load_problem(places[0]), cluster.address, "local")
        sandbox = make_sandbox("ray", 1, ray=options)
        try:
            _attack(sandbox, *places)
        finally:
            sandbox.close()
    finally:
        cluster.stop()
        for k, v in before.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
