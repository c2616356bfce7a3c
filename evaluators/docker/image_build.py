"""`evolve sandbox build`: the Debian base, the pip layer and the harness layer, each built
only when its tag is missing (evaluators/docker/image.py decides, image_layers.py layers).
Apart from image.py, which image_layers.py imports: a lazy import back would be a cycle."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from evaluators.docker import image, image_layers, tool_layer


def build(
    client,
    dockerfile: bool = False,
    force: bool = False,
    mirror: str | None = None,
    log: Callable[[str], None] = print,
    force_base: bool = False,
) -> tuple[str, bool]:
    """Build the image unless one of its tag exists; (tag, whether it was built)."""
    plan = image.build_plan(client, dockerfile, force, force_base)
    if not plan.build_image:
        return plan.tag, False
    t0 = time.monotonic()
    if plan.base is None:
        image.docker_build(client, "docker/Dockerfile", plan.tag, {}, pull=True, log=log)
    else:
        if plan.build_base:
            mirror = mirror or os.environ.get(image.MIRROR_ENV) or image.DEFAULT_MIRROR
            image.debootstrap_base(client, plan.base, mirror, log)
        assert plan.pypi is not None
        if plan.build_pypi:
            _pypi_layer(client, plan.base, plan.pypi, log)
        buildargs = {"BASE": plan.pypi}
        image.docker_build(
            client, "docker/Dockerfile.layer", plan.tag, buildargs, pull=False, log=log
        )
    image.smoke_test(client, plan.tag)
    log(f"built {plan.tag} in {time.monotonic() - t0:.0f} s")
    return plan.tag, True


def _pypi_layer(client, base: str, tag: str, log: Callable[[str], None]) -> None:
    """requirements.txt's wheels on the Debian base, by the host's pip (image_layers.py)."""
    inputs = image_layers.LayerInputs(image.DOCKER_DIR / "requirements.txt", tool_layer.ToolPlan())
    source_only = image.DOCKER_DIR / "source-only.txt"
    what = "evaluators/docker/requirements.txt"
    image_layers.build_layer(client, base, tag, inputs, what, log, source_only, harness=False)
